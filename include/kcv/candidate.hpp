/// A candidate kernel ready to load: a shared object kcv built (from .c/.cpp/.cu) or was given.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kcv/settings.hpp"

namespace kcv {

/// A usage or setup problem (unknown op, missing file, compile error, no kcv_run, ABI mismatch):
/// the CLI prints what() on one line and exits 2.
class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Limits on a child kcv runs to completion (the candidate's compiler): wall clock, address space,
/// captured output. A compiler past them is killed with its process group (docs/security.md).
struct CaptureLimits {
  double seconds = 0;          // 0: none
  int64_t address_space = 0;   // RLIMIT_AS bytes; 0: none
  std::size_t max_output = std::size_t(1) << 20;
};

/// What a candidate's compile may take by default: 5 minutes and 8 GiB (or half the machine's
/// memory, whichever is less). A preprocessor bomb or a slow constexpr is a setup error.
CaptureLimits default_compile_limits();

/// A candidate that does not build: a SetupError whose one line names the compiler's own error and
/// the file that keeps the compiler's whole output (build.log in the workdir, which verify keeps).
class BuildError : public SetupError {
 public:
  BuildError(const std::string& what, std::string log) : SetupError(what), log_(std::move(log)) {}
  const std::string& log() const { return log_; }
 private:
  std::string log_;
};

/// The private read-only copy kcv makes of a candidate once per verification (issue 25 class 3,
/// docs/security.md): every build and worker use it, never the user's file. It holds the
/// candidate's directory (regular files, hidden names and __pycache__ left out, links to
/// directories not followed, kPrivateCopyMaxDepth levels) when that fits the cap, else the file
/// alone; the original directory stays reachable after the copy's own (compilers, sys.path).
inline constexpr int kPrivateCopyMaxFiles = 1000;
inline constexpr int64_t kPrivateCopyMaxBytes = int64_t(16) << 20;  // besides the candidate itself
inline constexpr int kPrivateCopyMaxDepth = 4;                      // the directory and 3 below it

struct PrivateCopy {
  std::string file;        ///< the copy of the candidate file
  std::string sha256;      ///< of that file's bytes
  std::string origin_dir;  ///< the candidate's own directory, as given
  bool whole_directory = false;
  int files = 0;           ///< files copied, the candidate's included
  int64_t bytes = 0;       ///< bytes copied beside the candidate
  /// "its directory: N files" or why it is the file alone.
  std::string describe() const;
};

/// Copies `file` and, within the cap, its directory into `into` (made; files 0444, directories
/// 0755), skipping `workdir` when it lies inside. Throws SetupError when the file cannot be copied.
PrivateCopy private_copy(const std::string& file, const std::string& into, const std::string& workdir);

class Candidate {
 public:
  /// Compiles a source candidate into workdir (or takes a prebuilt .so as it is), within limits,
  /// the compiler's whole output kept in workdir/build.log. Throws BuildError with the compiler's
  /// first error line (or the limit it ran past) and that path when it does not build.
  /// settings: its include directory and CUDA target (kept: the sanitized build and the gates use them too).
  static Candidate prepare(const std::string& path, const std::string& backend, const std::string& workdir,
                           const CaptureLimits& limits = default_compile_limits(), const Settings& settings = {});
  /// A KernelBench solution (Python, docs/kernelbench.md): the torch worker runs it under python.
  /// Nothing is built here; load_inline builds when the worker first imports it (Runner::probe).
  /// With a workdir, the worker imports private copies of the solution and the problem (with
  /// their directories, private_copy); without one (tests), the files themselves.
  static Candidate kernelbench(const std::string& problem, const std::string& solution, const std::string& python,
                               const std::string& workdir = "");

  /// The KernelBench candidate kernelbench(problem, solution, python, workdir) would make, as far
  /// as a worker's spawn sees it (paths only: nothing is read or copied, the files need not
  /// exist): what the session-wide pool starts its workers for (docs/architecture.md).
  static Candidate kernelbench_expected(const std::string& problem, const std::string& solution,
                                        const std::string& python, const std::string& workdir);

  const std::string& path() const { return path_; }          // as given by the user
  const std::string& library() const { return library_; }    // the .so to load
  bool has_source() const { return kind_ != "so"; }
  const std::string& kind() const { return kind_; }          // c, cpp, cu, so, kernelbench
  /// A KernelBench candidate: Python, run by the torch worker instead of kcv-worker.
  bool runs_in_torch_worker() const { return kind_ == "kernelbench"; }
  const std::string& problem() const { return problem_; }    // kernelbench: the problem file, as given
  const std::string& problem_copy() const { return problem_copy_; }  // kernelbench: what the worker imports
  const std::string& python() const { return python_; }      // kernelbench: the interpreter
  /// SHA-256 of the candidate file as kcv copied it (every build and worker use that copy);
  /// empty for a KernelBench candidate given no workdir.
  const std::string& sha256() const { return copy_.sha256; }
  /// The private copy (empty file: none made).
  const PrivateCopy& source_copy() const { return copy_; }
  /// kernelbench: the directories the torch worker appends to sys.path, in order: the copies' own,
  /// then the originals' (what the copy leaves out, as before the copy).
  std::vector<std::string> python_search_path() const;
  const std::string& workdir() const { return workdir_; }    // where kcv builds it (source candidates)
  /// The source file every build reads: the private copy (the user's file when none was made).
  const std::string& source() const { return copy_.file.empty() ? path_ : copy_.file; }
  /// cpu: the candidate rebuilt with -fsanitize=address,undefined (built on first use, output in
  /// workdir/build-asan.log; throws BuildError if that build fails). Empty for a prebuilt .so,
  /// which runs under valgrind instead.
  std::string sanitized_library() const;
  /// The settings it was prepared under (its include directory and CUDA target).
  const Settings& settings() const { return settings_; }

 private:
  std::string path_, library_, kind_, backend_, workdir_, problem_, python_;
  std::string problem_copy_, problem_origin_dir_;
  PrivateCopy copy_;
  CaptureLimits limits_;
  Settings settings_;
  mutable std::string sanitized_;
  mutable std::shared_ptr<std::mutex> mu_ = std::make_shared<std::mutex>();
};

/// The directory candidates include <kcv/abi.h> from: settings.include_dir, else kcv's own.
std::string kcv_include_dir(const Settings& settings);
/// The directory holding torch/kcv_torch_worker.py: settings.adapters_dir, else kcv's own.
std::string kcv_adapters_dir(const Settings& settings);
/// The Python interpreter for KernelBench candidates, as an absolute path: given, else
/// settings.python, else /usr/bin/python3 (where Debian's python3-torch lives), else python3; a
/// bare name is looked up on kcv's PATH. SetupError when there is no such executable.
std::string resolve_python(const std::string& given, const Settings& settings);
/// Runs argv, capturing stdout+stderr; returns the exit status (-1 if it could not start).
int run_capture(const std::vector<std::string>& argv, std::string& output);
/// The same within limits: -2 when it ran out of time (it was killed, its process group too).
/// Also returns -3 when kcv was asked to stop meanwhile (the child is killed).
int run_capture(const std::vector<std::string>& argv, std::string& output, const CaptureLimits& limits);

}  // namespace kcv

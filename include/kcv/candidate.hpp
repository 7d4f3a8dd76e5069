/// A candidate kernel ready to load: a shared object kcv built (from .c/.cpp/.cu) or was given.
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace kcv {

/// A usage or setup problem (unknown op, missing file, compile error, no kcv_run, ABI mismatch):
/// the CLI prints what() on one line and exits 2.
class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Candidate {
 public:
  /// Compiles a source candidate into workdir (or takes a prebuilt .so as it is).
  /// Throws SetupError with the compiler's first error when it does not build.
  static Candidate prepare(const std::string& path, const std::string& backend, const std::string& workdir);

  const std::string& path() const { return path_; }          // as given by the user
  const std::string& library() const { return library_; }    // the .so to load
  bool has_source() const { return kind_ != "so"; }
  const std::string& kind() const { return kind_; }          // c, cpp, cu, so
  /// cpu: the candidate rebuilt with -fsanitize=address,undefined (built on first use; throws
  /// SetupError if that build fails). Empty for a prebuilt .so, which runs under valgrind instead.
  std::string sanitized_library() const;

 private:
  std::string path_, library_, kind_, backend_, workdir_;
  mutable std::string sanitized_;
  mutable std::shared_ptr<std::mutex> mu_ = std::make_shared<std::mutex>();
};

/// The directory candidates include <kcv/abi.h> from (env KCV_INCLUDE_DIR overrides).
std::string kcv_include_dir();
/// Runs argv, capturing stdout+stderr; returns the exit status (-1 if it could not start).
int run_capture(const std::vector<std::string>& argv, std::string& output);

}  // namespace kcv

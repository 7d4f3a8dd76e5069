// One fork/exec for every child kcv starts outside the sandbox: the compilers (run_capture), the
// corpus's pairs (forked library calls, or an explicit verifier) and its precompiled-header helper,
// the KernelBench reference server. The
// sandboxed worker starts through sandbox::spawn (src/kcv/sandbox.cpp), which has its own.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kcv {

/// Where a child's standard descriptor points.
struct Redirect {
  enum class Kind { inherit, dev_null, fd, file };
  Kind kind = Kind::inherit;
  int fd = -1;        // Kind::fd: this descriptor of kcv's (a pipe end), dup'ed into place
  std::string path;   // Kind::file: created or truncated, mode 0600
  static Redirect inherit() { return {}; }
  static Redirect dev_null() { return {Kind::dev_null, -1, {}}; }
  static Redirect to_fd(int fd) { return {Kind::fd, fd, {}}; }
  static Redirect to_file(std::string path) { return {Kind::file, -1, std::move(path)}; }
};

struct SubprocessSpec {
  std::vector<std::string> argv;   ///< argv[0] is looked up on PATH when it has no '/'
  /// The whole environment ("NAME=value"); nullopt: kcv's own.
  std::optional<std::vector<std::string>> env;
  Redirect in, out, err;
  /// Leads a process group of its own, so that kill(-pid) reaches whatever it starts.
  bool own_process_group = true;
  /// RLIMIT_AS and RLIMIT_CPU (seconds; soft + 1, hard + 2); 0: unlimited. Core dumps always off.
  int64_t address_space = 0;
  double cpu_seconds = 0;
  /// Written to its stderr before it exits 127 when exec fails, followed by strerror and a newline.
  std::string exec_failure_prefix;
  /// Set: the child runs this after the same setup instead of exec'ing argv, and exits with what it
  /// returns (_exit: none of this process's destructors run there). Fork without exec: only from a
  /// single-threaded process (a lock another thread held at the fork stays held in the child).
  std::function<int()> run_instead_of_exec;
};

/// Starts the child: PR_SET_PDEATHSIG SIGKILL (it never outlives kcv; it exits 127 at once if kcv
/// is already gone), the redirects, no core dump, every descriptor above 2 closed, then exec (or
/// run_instead_of_exec).
/// Returns its pid. Files to redirect to are opened here, before the fork: a SetupError names the
/// one that cannot be opened, or the failed fork.
pid_t spawn_subprocess(const SubprocessSpec& spec);

/// This process's environment, as a list of "NAME=value".
std::vector<std::string> own_environment();
/// Sets NAME=value in an environment list, dropping any earlier NAME; an empty value only drops.
void set_env(std::vector<std::string>& env, const std::string& name, const std::string& value);

}  // namespace kcv

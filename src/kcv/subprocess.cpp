// spawn_subprocess: the one fork/exec outside the sandbox (subprocess.hpp).
#include "kcv/subprocess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "kcv/candidate.hpp"

extern char** environ;

namespace kcv {

namespace {

/// The descriptor a redirect puts in place (opened now, close-on-exec), or -1 for inherit.
int open_redirect(const Redirect& r, bool for_reading) {
  switch (r.kind) {
    case Redirect::Kind::inherit: return -1;
    case Redirect::Kind::fd: return r.fd;
    case Redirect::Kind::dev_null: {
      const int fd = open("/dev/null", (for_reading ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
      if (fd < 0) throw SetupError(fmt::format("cannot open /dev/null: {}", std::strerror(errno)));
      return fd;
    }
    case Redirect::Kind::file: {
      const int fd = open(r.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) throw SetupError(fmt::format("cannot open {}: {}", r.path, std::strerror(errno)));
      return fd;
    }
  }
  return -1;
}

/// In the child: `fd` becomes `target` (kept across exec). Async-signal-safe.
void put_in_place(int fd, int target) {
  if (fd < 0) return;
  if (fd == target) fcntl(fd, F_SETFD, 0);   // dup2 would leave close-on-exec set
  else dup2(fd, target);
}

void set_limit(int resource, rlim_t soft, rlim_t hard) {
  const rlimit l{soft, hard};
  setrlimit(resource, &l);
}

}  // namespace

std::vector<std::string> own_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  return env;
}

void set_env(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  std::erase_if(env, [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  if (!value.empty()) env.push_back(prefix + value);
}

pid_t spawn_subprocess(const SubprocessSpec& spec) {
  // NOTES: everything that allocates happens here, before the fork: kcv has threads (the engine's
  // judging, the reference server's callers), and between fork and exec the child may only make
  // async-signal-safe calls.
  std::vector<char*> args, envp;
  for (const auto& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (spec.env) {
    for (const auto& e : *spec.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  int fds[3] = {-1, -1, -1};
  auto close_opened = [&] {
    const Redirect* r[3] = {&spec.in, &spec.out, &spec.err};
    for (int i = 0; i < 3; ++i)
      if (fds[i] >= 0 && r[i]->kind != Redirect::Kind::fd) close(fds[i]);
  };
  try {
    fds[0] = open_redirect(spec.in, true);
    fds[1] = open_redirect(spec.out, false);
    fds[2] = open_redirect(spec.err, false);
  } catch (...) {
    close_opened();
    throw;
  }
  const std::string exec_failure = spec.exec_failure_prefix;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close_opened();
    throw SetupError(fmt::format("fork failed: {}", std::strerror(e)));
  }
  if (pid == 0) {
    if (spec.own_process_group) setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(127);   // kcv died before prctl took effect
    for (int i = 0; i < 3; ++i) put_in_place(fds[i], i);
    if (spec.address_space > 0)
      set_limit(RLIMIT_AS, static_cast<rlim_t>(spec.address_space), static_cast<rlim_t>(spec.address_space));
    if (spec.cpu_seconds > 0) {   // CPU seconds too: a child that forks still meets its caller's wall clock
      const auto cpu = static_cast<rlim_t>(spec.cpu_seconds) + 1;
      set_limit(RLIMIT_CPU, cpu, cpu + 1);
    }
    set_limit(RLIMIT_CORE, 0, 0);
    close_range(3, ~0U, 0);
    if (spec.run_instead_of_exec) _exit(spec.run_instead_of_exec());
    if (spec.env) execvpe(args[0], args.data(), envp.data());
    else execvp(args[0], args.data());
    if (!exec_failure.empty()) {
      const char* why = strerror(errno);
      (void)!write(2, exec_failure.data(), exec_failure.size());
      (void)!write(2, why, std::strlen(why));
      (void)!write(2, "\n", 1);
    }
    _exit(127);
  }
  if (spec.own_process_group) setpgid(pid, pid);   // also from here: the group exists before any kill(-pid)
  close_opened();
  return pid;
}

}  // namespace kcv

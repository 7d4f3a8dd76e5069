// Spawning: the worker's command (argv and a neutral environment), its start in the sandbox
// (src/kcv/sandbox.cpp), a session worker's next data file, and its end.
#include "isolation.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace kcv {

// NOTES: compute-sanitizer's front end and its target meet on TCP ports [--port, --port +
// --max-connections) (default 49152 and 10) of the loopback. Concurrent runs in one network
// namespace share that range: they can run out of it, and, each in a PID namespace of its own
// where every target has the same pid, may attach to each other's targets (the likely cause of
// "Target application terminated before first instrumented API call" on the H200, issue 25;
// scripts/device_sandbox_diag.sh tells). The ranges sit above the default one; the locks are
// shared by every kcv on the host (flock: a killed kcv frees its ranges).
int sanitizer_port_range(int* lock_fd) {
  constexpr int kBase = 49152 + 16, kWidth = 10, kRanges = 64;
  const char* dir = "/tmp/kcv-sanitizer-ports";
  if (mkdir(dir, 01777) == 0) chmod(dir, 01777);  // every user's kcv shares it
  for (int i = 0; i < kRanges; ++i) {
    const std::string path = fmt::format("{}/range-{}", dir, i);
    const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      *lock_fd = fd;
      return kBase + i * kWidth;
    }
    close(fd);
  }
  *lock_fd = -1;
  return -1;
}

namespace isolation {

namespace {

struct WorkerCommand {
  std::vector<std::string> argv, env;
};

/// The wrapper (a sanitizer) and its options, before the worker's own argv.
std::vector<std::string> wrapper_argv(const Context& ctx, int* port_lock_fd) {
  const SanitizedRun& s = ctx.mode.sanitizer;
  std::vector<std::string> argv = s.wrapper;
  if (s.uses_ports) {
    // In a network namespace of its own the default ports are its own; elsewhere a range kcv
    // holds. KCV_SANITIZER_PORT_RANGES=0 (diagnosis, docs/security.md): the default range.
    const bool own_network =
        ctx.opt.sandbox && !(ctx.opt.sandbox_off & sandbox::kNet) && sandbox::network_namespace_available();
    const char* ranges = std::getenv("KCV_SANITIZER_PORT_RANGES");
    if (!own_network && !(ranges && std::string(ranges) == "0"))
      if (const int port = sanitizer_port_range(port_lock_fd); port > 0)
        for (std::string& flag : ctx.backend.port_flags(port)) argv.push_back(std::move(flag));
  }
  argv.insert(argv.end(), s.wrapper_tail.begin(), s.wrapper_tail.end());
  return argv;
}

/// What the torch worker's environment adds.
void add_torch_environment(const Context& ctx, std::vector<std::string>& env) {
  // NOTES: one extensions directory per verification, outside the worker's cwd: the probe's
  // load_inline build is reused by every later worker (sanitized builds hash differently).
  env.push_back("TORCH_EXTENSIONS_DIR=" + (fs::absolute(ctx.opt.workdir) / "torch-extensions").string());
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  if (const char* v = std::getenv("PYTHONPATH")) env.push_back(std::string("PYTHONPATH=") + v);
  // Freed memory stays in the heap (no trim, no fresh mapping below 4 GiB): on cpu the
  // coverage gate's poison reaches the candidate's next allocation, and a large problem's
  // tensors reuse pages instead of faulting in and zeroing new ones every case.
  env.push_back("MALLOC_MMAP_THRESHOLD_=4294967296");
  env.push_back("MALLOC_TRIM_THRESHOLD_=17179869184");
}

/// The worker's argv (under its wrapper) and environment, cwd its own.
WorkerCommand worker_command(const Context& ctx, const std::string& cwd, int* port_lock_fd) {
  WorkerCommand c;
  c.argv = wrapper_argv(ctx, port_lock_fd);
  if (ctx.mode.torch) {
    // The torch worker speaks kcv-worker's protocol (adapters/torch/kcv_torch_worker.py).
    c.argv.insert(c.argv.end(), {ctx.candidate.python(), "-u",
                                 (fs::path(kcv_adapters_dir()) / "torch" / "kcv_torch_worker.py").string()});
  } else {
    c.argv.push_back(ctx.opt.worker);
  }
  std::string path = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin";
  // NOTES: a venv's python keeps its tools (ninja, for load_inline) beside it.
  if (ctx.mode.torch && fs::path(ctx.candidate.python()).has_parent_path())
    path = fs::path(ctx.candidate.python()).parent_path().string() + ":" + path;
  const int threads = ctx.wopts.threads > 0 ? ctx.wopts.threads : default_threads();
  // NOTES: a neutral environment (issue 25 class 3): nothing in it names kcv; the thread count
  // travels as OpenMP's own variable, as a production launcher would set it.
  c.env = {"PATH=" + path, "HOME=" + cwd, "TMPDIR=" + cwd, "LANG=C", fmt::format("OMP_NUM_THREADS={}", threads)};
  for (const char* keep : {"CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME"})
    if (const char* v = std::getenv(keep)) c.env.push_back(std::string(keep) + "=" + v);
  if (ctx.mode.torch) add_torch_environment(ctx, c.env);
  c.env.insert(c.env.end(), ctx.mode.sanitizer.env.begin(), ctx.mode.sanitizer.env.end());
  return c;
}

/// Directories the worker's private mount namespace keeps reachable.
std::vector<std::string> kept_dirs(const Context& ctx) {
  std::vector<std::string> keep = {fs::absolute(ctx.opt.workdir).string(),
                                   fs::path(fs::absolute(ctx.opt.worker)).parent_path().string()};
  if (!ctx.library.empty()) keep.push_back(fs::path(ctx.library).parent_path().string());
  if (ctx.mode.torch) {
    const fs::path bin = fs::path(ctx.candidate.python()).parent_path();
    keep.push_back(bin.string());
    // A venv's interpreter finds its packages through ../pyvenv.cfg: without the whole venv (one
    // under /tmp is otherwise hidden by the private /tmp) the worker ran the base interpreter.
    if (std::error_code ec; fs::exists(bin.parent_path() / "pyvenv.cfg", ec)) keep.push_back(bin.parent_path().string());
    keep.push_back(fs::path(ctx.candidate.problem()).parent_path().string());
    keep.push_back(fs::path(ctx.candidate.path()).parent_path().string());  // sys.path's last entries
    keep.push_back(kcv_adapters_dir());
  }
  return keep;
}

/// As root, the workdir (and a torch worker's build places in it) made reachable by the worker's
/// unprivileged uid.
void open_workdir_to_worker(const Context& ctx) {
  // The worker's uid must reach its cwd (handed to it) through the verification's workdir.
  std::error_code ec;
  fs::permissions(ctx.opt.workdir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::replace, ec);
  if (!ctx.mode.torch) return;
  // The torch worker builds its extensions (and the sanitizer's) beside its cwd, in
  // directories handed to it too. Not torch-pch: kcv made the checked copies there, read-only
  // to the worker (checked_pch_copies).
  for (const char* d : {"torch-extensions", "torch-extensions-asan"}) {
    const fs::path dir = fs::absolute(ctx.opt.workdir) / d;
    fs::create_directories(dir, ec);
    if (chown(dir.c_str(), 65534, 65534) != 0) { /* the worker's build says why */ }
  }
  // A failed load_inline build's whole output goes there (kcv_torch_worker.py), beside the
  // extensions; the workdir itself is not the worker's to write.
  for (const char* f : {"build.log", "build-asan.log"}) {
    const fs::path log = fs::absolute(ctx.opt.workdir) / f;
    if (!fs::exists(log, ec)) std::ofstream(log).close();
    if (chown(log.c_str(), 65534, 65534) != 0) { /* then no log path in the error */ }
  }
}

}  // namespace

bool send_data_file(const Session& s, int fd) {
  char one = 'b';
  iovec iov{&one, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  cmsghdr* cm = CMSG_FIRSTHDR(&m);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cm), &fd, sizeof(int));
  return sendmsg(s.ctl_fd, &m, MSG_NOSIGNAL) == 1;
}

Session start_worker(const Context& ctx, int serial, const DataFile& data) {
  Session w;
  w.options = ctx.wopts;
  w.cwd = (fs::path(ctx.opt.workdir) / fmt::format("worker-{}", serial)).string();
  w.log = (fs::path(ctx.opt.workdir) / fmt::format("worker-{}.log", serial)).string();
  fs::create_directories(w.cwd);
  WorkerCommand cmd = worker_command(ctx, w.cwd, &w.port_lock_fd);

  // NOTES: a socket, not a pipe: kcv answers each `done` (protocol::kGo) once it has looked at
  // what the call left behind, so the worker cannot run on (and its namespace end) unseen.
  int result_pipe[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, result_pipe) != 0) throw std::runtime_error("socketpair failed");
  int ctl[2] = {-1, -1};
  if (ctx.mode.session_capable && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0) {
    close(result_pipe[0]);
    close(result_pipe[1]);
    if (w.port_lock_fd >= 0) close(w.port_lock_fd);
    throw std::runtime_error("socketpair failed");
  }
  sandbox::Request req;
  req.argv = std::move(cmd.argv);
  req.env = std::move(cmd.env);
  req.cwd = w.cwd;
  req.log = w.log;
  req.data_fd = data.fd();
  req.result_fd = result_pipe[1];
  req.ctl_fd = ctl[1];
  req.enabled = ctx.opt.sandbox;
  req.off = ctx.opt.sandbox_off;
  // NOTES: below the machine's memory, so a runaway candidate meets its own limit before the
  // host's out-of-memory killer. Not where the runtime reserves address space far beyond use
  // (the CUDA driver) nor under the sanitizers (shadow memory).
  if (ctx.backend.caps_address_space() && !ctx.mode.sanitized) req.address_space_bytes = default_address_space_limit();
  req.keep_dirs = kept_dirs(ctx);
  if (ctx.opt.sandbox && geteuid() == 0) open_workdir_to_worker(ctx);
  try {
    w.proc = sandbox::spawn(req);
  } catch (...) {
    close(result_pipe[0]);
    close(result_pipe[1]);
    if (ctl[0] >= 0) { close(ctl[0]); close(ctl[1]); }
    if (w.port_lock_fd >= 0) close(w.port_lock_fd);
    throw;
  }
  w.oom_kills_at_start = sandbox::host_oom_kills();
  close(result_pipe[1]);
  if (ctl[1] >= 0) close(ctl[1]);
  w.result_fd = result_pipe[0];
  w.ctl_fd = ctl[0];
  return w;
}

int end_worker(Session& w, double grace_s, bool* outstayed) {
  w.data.reset();
  close(w.result_fd);
  if (w.ctl_fd >= 0) close(w.ctl_fd);
  sandbox::Process proc = w.proc;
  const int status = sandbox::finish(proc, grace_s, outstayed);
  if (w.port_lock_fd >= 0) close(w.port_lock_fd);  // after the worker is gone: its ports are free
  std::error_code ec;
  fs::remove_all(w.cwd, ec);
  return status;
}

}  // namespace isolation
}  // namespace kcv

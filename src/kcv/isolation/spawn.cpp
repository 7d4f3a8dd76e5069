// Spawning: the worker's command (argv and a neutral environment), its start in the sandbox
// (src/kcv/sandbox.cpp), a session worker's next data file, and its end.
#include "isolation.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kcv/protocol.hpp"
#include "kcv/text.hpp"

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

/// The wrapper (a sanitizer) and its options, before the worker's own argv. *port: the port range
/// to name when it is >= 0 (a spawn described again, spawn_matches), else one taken now (held by
/// *port_lock_fd) and said there (-1: none).
std::vector<std::string> wrapper_argv(const Context& ctx, int* port_lock_fd, int* port) {
  const int given = *port;
  *port = -1;
  const SanitizedRun& s = ctx.mode.sanitizer;
  std::vector<std::string> argv = s.wrapper;
  if (s.uses_ports) {
    // In a network namespace of its own the default ports are its own; elsewhere a range kcv
    // holds. Settings::sanitizer_port_ranges false (KCV_SANITIZER_PORT_RANGES=0, diagnosis,
    // docs/security.md): the default range.
    const bool own_network =
        ctx.opt.sandbox && !(ctx.opt.settings.sandbox_off & sandbox::kNet) && sandbox::network_namespace_available();
    if (!own_network && ctx.opt.settings.sanitizer_port_ranges) {
      *port = given >= 0 ? given : sanitizer_port_range(port_lock_fd);
      if (*port > 0)
        for (std::string& flag : ctx.backend.port_flags(*port)) argv.push_back(std::move(flag));
    }
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
  // NOTES: PYTHONPATH (and below CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH, CUDA_HOME) is kcv's own
  // environment passed through to the worker, not a setting of kcv's (include/kcv/settings.hpp).
  if (const char* v = std::getenv("PYTHONPATH")) env.push_back(std::string("PYTHONPATH=") + v);
  // Freed memory stays in the heap (no trim, no fresh mapping below 4 GiB): on cpu the
  // coverage gate's poison reaches the candidate's next allocation, and a large problem's
  // tensors reuse pages instead of faulting in and zeroing new ones every case.
  env.push_back("MALLOC_MMAP_THRESHOLD_=4294967296");
  env.push_back("MALLOC_TRIM_THRESHOLD_=17179869184");
  // NOTES: where tensors are host memory, every block malloc hands out during a call holds the
  // call's output poison (allocation_fill in kcv_torch_worker.py); the per-thread cache hands
  // blocks out unfilled. Elsewhere (device tensors) the cache stays: host malloc at full speed.
  if (ctx.backend.tensors_on_host()) env.push_back("GLIBC_TUNABLES=glibc.malloc.tcache_count=0");
}

/// The worker's argv (under its wrapper) and environment, cwd its own.
WorkerCommand worker_command(const Context& ctx, const std::string& cwd, int* port_lock_fd, int* port) {
  WorkerCommand c;
  c.argv = wrapper_argv(ctx, port_lock_fd, port);
  if (ctx.mode.torch) {
    // The torch worker speaks kcv-worker's protocol (adapters/torch/kcv_torch_worker.py).
    const fs::path script = fs::path(kcv_adapters_dir(ctx.opt.settings)) / "torch" / "kcv_torch_worker.py";
    c.argv.insert(c.argv.end(), {ctx.candidate.python(), "-u", script.string()});
  } else {
    c.argv.push_back(ctx.opt.worker);
  }
  std::string path = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin";
  // NOTES: a venv's python keeps its tools (ninja, for load_inline) beside it.
  if (ctx.mode.torch && fs::path(ctx.candidate.python()).has_parent_path())
    path = fs::path(ctx.candidate.python()).parent_path().string() + ":" + path;
  const int threads = ctx.wopts.threads > 0 ? ctx.wopts.threads : default_threads(ctx.opt.settings);
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
    keep.push_back(kcv_adapters_dir(ctx.opt.settings));
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

sandbox::Request spawn_request(const Context& ctx, int serial, int* port_lock_fd, int* port) {
  sandbox::Request req;
  req.cwd = (fs::path(ctx.opt.workdir) / fmt::format("worker-{}", serial)).string();
  req.log = (fs::path(ctx.opt.workdir) / fmt::format("worker-{}.log", serial)).string();
  WorkerCommand cmd = worker_command(ctx, req.cwd, port_lock_fd, port);
  req.argv = std::move(cmd.argv);
  req.env = std::move(cmd.env);
  req.enabled = ctx.opt.sandbox;
  req.off = ctx.opt.settings.sandbox_off;
  // NOTES: below the machine's memory, so a runaway candidate meets its own limit before the
  // host's out-of-memory killer. Not where the runtime reserves address space far beyond use
  // (the CUDA driver) nor under the sanitizers (shadow memory).
  if (ctx.backend.caps_address_space() && !ctx.mode.sanitized) req.address_space_bytes = default_address_space_limit();
  req.keep_dirs = kept_dirs(ctx);
  return req;
}

nlohmann::json describe_spawn(const Context& ctx, const sandbox::Request& req) {
  return {{"argv", req.argv},
          {"env", req.env},
          {"cwd", req.cwd},
          {"log", req.log},
          {"keep_dirs", req.keep_dirs},
          {"sandbox", req.enabled},
          {"sandbox_off", req.off},
          {"address_space_bytes", req.address_space_bytes},
          {"ctl_socket", ctx.mode.session_capable},
          {"torch", ctx.mode.torch},
          {"first_plan", nullptr}};
}

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
  w.serial = serial;
  sandbox::Request req = spawn_request(ctx, serial, &w.port_lock_fd, &w.port);
  w.cwd = req.cwd;
  w.log = req.log;
  w.spawn = describe_spawn(ctx, req);
  fs::create_directories(w.cwd);

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
  req.data_fd = data.fd();
  req.result_fd = result_pipe[1];
  req.ctl_fd = ctl[1];
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
  w.started = Clock::now();
  close(result_pipe[1]);
  if (ctl[1] >= 0) close(ctl[1]);
  w.result_fd = result_pipe[0];
  w.ctl_fd = ctl[0];
  return w;
}

namespace {
/// The first plan of a standby worker: the backend only (no candidate, no canary key).
std::string standby_plan(const Context& ctx) {
  return nlohmann::json{{"backend", std::string(ctx.backend.name())}, {"candidate", ""}, {"standby", true}, {"session", true},
                        {"calls", nlohmann::json::array()}}
      .dump();
}

/// A batch's context as its standby worker is started: with the ctl socket (fd 5).
Context standby_context(const Context& ctx) {
  Context standby = ctx;
  standby.mode.session_capable = true;
  return standby;
}
}  // namespace

std::optional<Session> start_standby(const Context& ctx, int serial, std::string* why) {
  // NOTES: the batch's worker gets ctx as it is; only the ctl socket (fd 5) is forced here, which
  // a sanitized worker otherwise lacks: its first real plan then says no "session", and it says
  // bye after that one batch. The plan names no candidate and carries no canary key.
  const Context standby = standby_context(ctx);
  const std::string plan = standby_plan(ctx);
  Layout empty;
  empty.end = protocol::kHeaderBytes;
  try {
    int made = 0;
    DataFile data = data_file(nullptr, (empty.end + static_cast<int64_t>(plan.size()) + 63) / 64 * 64, &made);
    write_staging(data, empty, {}, plan);
    Session w = start_worker(standby, serial, data);
    w.spawn["first_plan"] = plan;
    return w;
  } catch (const std::exception& e) {
    *why = std::string("not started: ") + e.what();
    return std::nullopt;
  }
}

bool spawn_matches(const Context& ctx, const Session& w, std::string* why) {
  // NOTES: described again for w's number and port range (no range is taken here): every field
  // start_standby would hand the sandbox for these options now, from this verification's context.
  const Context standby = standby_context(ctx);
  int no_lock = -1, port = w.port;
  nlohmann::json expected = describe_spawn(standby, spawn_request(standby, w.serial, &no_lock, &port));
  expected["first_plan"] = standby_plan(ctx);
  if (no_lock >= 0) close(no_lock);
  if (w.options != ctx.wopts) {
    *why = "its options differ";
    return false;
  }
  for (const auto& [key, value] : expected.items())
    if (!w.spawn.contains(key) || w.spawn[key] != value) {
      *why = "its spawn differs in " + key;
      return false;
    }
  if (w.spawn.size() != expected.size()) {
    *why = "its spawn differs (fields)";
    return false;
  }
  return true;
}

bool await_standby(const Context& ctx, Session& w, std::string* why) {
  const double limit_s = std::max(ctx.mode.timeout, ctx.opt.load_timeout_s);
  const Clock::time_point until = std::min(
      w.started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s)), ctx.opt.deadline);
  std::string got;
  // NOTES: what the worker said is read before the clock is looked at: a pooled worker may have
  // said idle long before its verification came (docs/architecture.md "The session-wide pool").
  while (got.find('\n') == std::string::npos) {
    pollfd p{w.result_fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char buf[256];
      const ssize_t n = read(w.result_fd, buf, sizeof buf);
      if (n <= 0) {
        *why = "it ended before saying idle";
        end_worker(w, 0);
        return false;
      }
      got.append(buf, static_cast<std::size_t>(n));
      if (got.size() > 4096) break;
      continue;
    }
    if (stop_requested() || Clock::now() >= until) {
      *why = stop_requested() ? "kcv was asked to stop" : "it did not say idle in time";
      end_worker(w, 0);
      return false;
    }
  }
  // Exactly one record, `idle`: anything else (a fatal, more records) and it is not used.
  if (got != "idle\n") {
    *why = "it said " + clean_text(got.substr(0, 200));
    end_worker(w, 0);
    return false;
  }
  // NOTES: nothing more may have come: end of file here is a worker that died after its idle (a
  // pooled one whose starting thread ended: pdeathsig), not to be handed a candidate.
  pollfd hup{w.result_fd, POLLIN, 0};
  if (poll(&hup, 1, 0) > 0) {
    *why = "it ended after saying idle";
    end_worker(w, 0);
    return false;
  }
  return true;
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

// Runner: stage a plan in a memfd, start kcv-worker in its sandbox (src/kcv/sandbox.cpp: own PID,
// mount and IPC namespaces, unprivileged uid, seccomp, rlimits, clean env, fresh cwd), follow its
// records with a per-call deadline that output cannot extend, look for processes left behind and
// files written outside its cwd after every call, kill the whole namespace at the end.
#include "kcv/runner.hpp"
#include "kcv/text.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kcv/build_config.hpp"
#include "kcv/gates/common.hpp"
#include "kcv/protocol.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
namespace proto = kcv::protocol;

namespace kcv {

namespace {
std::atomic<int> g_stop{0};
}  // namespace

void request_stop(int sig) { g_stop.store(sig); }
int stop_requested() { return g_stop.load(); }

namespace {
/// The last non-empty line of a worker's log (a traceback ends with the exception), to say beside
/// its death; empty when the log is.
std::string last_words(const std::string& log) {
  // NOTES: the program's own last line: compute-sanitizer's lines ("========= ...") follow it.
  for (std::size_t end = log.size(); end > 0;) {
    const std::size_t newline = log.rfind('\n', end - 1);
    const std::size_t start = newline == std::string::npos ? 0 : newline + 1;
    std::string line = log.substr(start, end - start);
    end = newline == std::string::npos ? 0 : newline;
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty() || line.starts_with("=========")) continue;
    if (line.size() > 300) line = line.substr(0, 300) + "...";
    return " (its log ends: " + line + ")";
  }
  return {};
}
}  // namespace

bool killed_by_sigkill(int status, bool under_compute_sanitizer, const std::string& log) {
  // NOTES: compute-sanitizer exits with the signal's number when its program is killed, after
  // "Error: process didn't terminate successfully"; a program's own exit(9) does not print that
  // line (both checked on the H200, session 7).
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGKILL;
  return under_compute_sanitizer && WIFEXITED(status) && WEXITSTATUS(status) == SIGKILL &&
         log.find("========= Error: process didn't terminate successfully") != std::string::npos;
}

bool oom_kill_possible(int64_t oom_kills_before, int64_t oom_kills_after) {
  return oom_kills_before < 0 || oom_kills_after < 0 || oom_kills_after > oom_kills_before;
}

int64_t default_address_space_limit() {
  const int64_t pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const int64_t cap = int64_t(32) << 30;
  if (pages <= 0 || page <= 0) return cap;
  return std::min(cap, pages / 4 * 3 * page);
}

int default_threads() {
  return static_cast<int>(positive_integer_env("KCV_THREADS", std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)), 4096));
}

std::string default_worker_path() {
  if (const char* e = std::getenv("KCV_WORKER"); e && *e) return e;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(exe.parent_path() / "kcv-worker")) return (exe.parent_path() / "kcv-worker").string();
  return KCV_BUILD_WORKER_PATH;
}

Runner::Runner(const Candidate& candidate, RunnerOptions options)
    : candidate_(candidate), opt_(std::move(options)), backend_(backend_named(opt_.backend)) {}

Runner::~Runner() {
  for (auto& s : sessions_) end_worker(s, 1);  // end of file on fd 5: a session worker exits by itself
}

namespace {
/// Unmaps and closes a data memfd (fd < 0: none).
void release_data_file(int fd, unsigned char* map, int64_t bytes) {
  if (fd < 0) return;
  munmap(map, static_cast<std::size_t>(bytes));
  close(fd);
}
}  // namespace

int Runner::end_worker(const Session& w, double grace_s, bool* outstayed) {
  release_data_file(w.data_fd, w.data, w.data_bytes);
  close(w.result_fd);
  if (w.ctl_fd >= 0) close(w.ctl_fd);
  sandbox::Process proc = w.proc;
  const int status = sandbox::finish(proc, grace_s, outstayed);
  if (w.port_lock_fd >= 0) close(w.port_lock_fd);  // after the worker is gone: its ports are free
  std::error_code ec;
  fs::remove_all(w.cwd, ec);
  return status;
}

namespace {

constexpr std::size_t kMaxLog = 64 * 1024;

int64_t align64(int64_t x) { return (x + 63) / 64 * 64; }

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return fmt::format("signal {} (SIG{})", sig, name ? name : "?");
}

struct Staged {
  int64_t src = 0, snap = 0;
  int64_t recheck = -1;  // outputs: the second snapshot, taken at the end of the case (or none)
};

/// Outputs of a call at most this large are snapshotted again at the end of their case.
constexpr int64_t kRecheckBytes = int64_t(64) << 20;

/// Whether a call's outputs are snapshotted again at the end of its case: not when a later call
/// of the case uses the same buffers (they change then, as they should), nor for the large tier
/// (sampled), nor past kRecheckBytes.
bool rechecked(const Case& c, std::size_t k) {
  const CallSpec& call = c.calls[k];
  if (call.large) return false;
  int64_t bytes = 0;
  for (const auto& t : call.outputs) bytes += static_cast<int64_t>(t.span_bytes());
  if (bytes > kRecheckBytes) return false;
  // The buffers a call uses are those of the first call of its reuse chain.
  auto owner = [&](std::size_t i) {
    for (int hops = 0; c.calls[i].reuse_buffers_of >= 0 && hops < 1000; ++hops)
      i = static_cast<std::size_t>(c.calls[i].reuse_buffers_of);
    return i;
  };
  for (std::size_t later = k + 1; later < c.calls.size(); ++later)
    if (owner(later) == owner(k)) return false;
  return true;
}

/// Checks [guard] at pre and [guard] at post against the canaries of a buffer of span bytes.
GuardReport check_guards(const unsigned char* pre, const unsigned char* post, int64_t span, uint64_t key) {
  GuardReport g;
  auto visit = [&](int64_t rel, unsigned char got) {
    if (got != proto::canary_byte(key, rel)) {
      if (g.intact) { g.intact = false; g.first_bad = rel; }
      ++g.bad_bytes;
    }
  };
  for (int64_t i = 0; i < proto::kGuardBytes; ++i) visit(i - proto::kGuardBytes, pre[i]);
  for (int64_t i = 0; i < proto::kGuardBytes; ++i) visit(span + i, post[i]);
  return g;
}

}  // namespace

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

int64_t staged_bytes(const Case& c) {
  int64_t bytes = 0;
  for (const auto& call : c.calls) {
    for (const auto& t : call.inputs) bytes += 2 * static_cast<int64_t>(t.span_bytes());
    for (const auto& t : call.outputs) bytes += 3 * static_cast<int64_t>(t.span_bytes());  // + the recheck
  }
  return bytes;
}

void Runner::probe() {
  Case empty;
  empty.label = "load";
  run_batch({&empty}, WorkerOptions{});
}

std::vector<CaseRun> Runner::run(const std::vector<Case>& cases) {
  std::vector<CaseRun> runs;
  std::size_t i = 0;
  while (i < cases.size()) {
    if (std::chrono::steady_clock::now() >= opt_.deadline) {
      CaseRun late;
      late.status = RunStatus::timeout;
      late.detail = fmt::format("not run: the overall limit (--max-time {:g} s) ran out", opt_.max_time_s);
      late.calls.resize(cases[i].calls.size());
      runs.push_back(std::move(late));
      break;
    }
    std::vector<const Case*> batch;
    int64_t bytes = 0;
    const WorkerOptions opts = cases[i].worker;
    // NOTES: the staging of one batch is host memory held at once (a KernelBench problem's cases
    // move up to KCV_MAX_ELEMENTS elements each); a torch worker's session carries over to the
    // next batch, so small batches cost no new worker.
    while (i < cases.size() && cases[i].worker == opts && (batch.empty() || bytes < kBatchBytes)) {
      bytes += staged_bytes(cases[i]);
      batch.push_back(&cases[i++]);
    }
    auto got = run_batch(batch, opts);
    const bool abnormal = !got.empty() && got.back().status != RunStatus::ok;
    for (auto& r : got) runs.push_back(std::move(r));
    if (abnormal) break;
  }
  return runs;
}

std::vector<CaseRun> Runner::run_batch(const std::vector<const Case*>& batch, const WorkerOptions& wopts) {
  const bool torch = candidate_.runs_in_torch_worker();
  // NOTES: a torch worker costs seconds to start (import torch, the CUDA context, the solution's
  // extension); it is kept between batches of the same options. Sanitized workers never are:
  // their tools report at exit.
  const bool session_capable = torch && !wopts.sanitized && !candidate_.library().empty();

  // ---- stage: lay out every tensor's source bytes and snapshot slot ----
  int64_t at = proto::kHeaderBytes;
  std::vector<std::vector<std::vector<Staged>>> in_at, out_at;  // [case][call][arg]
  json calls = json::array();
  std::vector<std::string> signature;  // per call: its shape signature (compile grace)
  int global = 0;
  std::vector<int> first_call_of_case;
  for (std::size_t ci = 0; ci < batch.size(); ++ci) {
    first_call_of_case.push_back(global);
    in_at.emplace_back();
    out_at.emplace_back();
    // NOTES: a share of the cases (a quarter, drawn from the run's key and the case's label) wait
    // 2-20 ms before the second snapshot of their outputs, so a late write need not be immediate.
    uint64_t h = opt_.canary_key ^ 0x9e3779b97f4a7c15ull;
    for (char ch : batch[ci]->label) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    h ^= h >> 29;
    const int64_t recheck_delay_us = h % 4 == 0 ? 2000 + static_cast<int64_t>((h >> 8) % 18000) : 0;
    for (std::size_t k = 0; k < batch[ci]->calls.size(); ++k) {
      const CallSpec& call = batch[ci]->calls[k];
      const bool recheck = !torch && rechecked(*batch[ci], k);
      json jc;
      jc["case"] = static_cast<int>(ci);
      if (recheck && recheck_delay_us > 0) jc["recheck_delay_us"] = recheck_delay_us;
      jc["reuse"] = call.reuse_buffers_of >= 0 ? first_call_of_case.back() + call.reuse_buffers_of : -1;
      jc["concurrent_with_next"] = call.concurrent_with_next;
      jc["writer_kernel"] = call.writer_kernel;
      jc["background_load"] = call.background_load;
      if (call.null_stream) jc["null_stream"] = true;
      if (call.exact_buffers) jc["exact"] = true;
      if (call.calls_before > 0) jc["calls_before"] = call.calls_before;
      jc["scalars"] = call.scalars;
      jc["bindings"] = batch[ci]->shape;
      auto stage = [&](const std::vector<HostTensor>& ts, bool is_input, std::vector<Staged>& where) {
        json arr = json::array();
        for (std::size_t k = 0; k < ts.size(); ++k) {
          const HostTensor& t = ts[k];
          Staged s;
          const int64_t span = static_cast<int64_t>(t.span_bytes());
          json jt = {{"dtype", static_cast<int32_t>(t.dtype)}, {"shape", t.shape}, {"stride", t.stride},
                     {"offset", t.offset}, {"span", span}};
          if (call.large) {
            // Nothing staged: inputs are generated on the device, outputs poisoned there, and
            // only both guards (+ the sampled output elements) come back.
            s.src = 0;
            const auto n_samples = is_input ? 0 : static_cast<int64_t>(call.samples.size());
            s.snap = at; at = align64(at + 2 * proto::kGuardBytes + n_samples * static_cast<int64_t>(dtype_size(t.dtype)));
            if (is_input) jt["gen"] = call.large_seed + k;
            else jt["fill"] = std::to_integer<int>(gates::kPoisonNaN);
            jt["sample"] = is_input ? std::vector<int64_t>{} : call.samples;
          } else {
            s.src = at; at = align64(at + span);
            s.snap = at; at = align64(at + proto::snapshot_bytes(span));
            if (!is_input && recheck) {
              s.recheck = at; at = align64(at + proto::snapshot_bytes(span));
              jt["recheck"] = s.recheck;
            }
          }
          jt["src"] = s.src;
          jt["snap"] = s.snap;
          where.push_back(s);
          arr.push_back(std::move(jt));
        }
        return arr;
      };
      in_at.back().emplace_back();
      out_at.back().emplace_back();
      jc["inputs"] = stage(call.inputs, true, in_at.back().back());
      jc["outputs"] = stage(call.outputs, false, out_at.back().back());
      // What a JIT specializes on (Dynamo's guards: sizes, strides, dtypes, alignment, constants).
      json sig = {{"bindings", jc["bindings"]}, {"scalars", jc["scalars"]}, {"inputs", json::array()}};
      for (const json& t : jc["inputs"])
        sig["inputs"].push_back({t["dtype"], t["shape"], t["stride"], t["offset"]});
      signature.push_back(sig.dump());
      calls.push_back(std::move(jc));
      ++global;
    }
  }
  const bool sanitized = wopts.sanitized;
  const SanitizedRun srun =
      sanitized ? backend_.sanitized_run(wopts.sanitizer_tool, candidate_.has_source(), torch) : SanitizedRun{};
  const std::string library = srun.instrumented_build
                                  ? candidate_.sanitized_library() : candidate_.library();  // "" = backend probe
  // NOTES: a torch worker imports the private copies Candidate::kernelbench made (with their
  // directories, read-only, readable by uid 65534); python_search_path() puts the copies' own
  // directories and then the originals' on its sys.path, so a module beside the solution or the
  // problem is found as it was before the copies (H200, 2026-12: "No module named 'cuda_rowsum'").
  const std::string plan_library = library;
  json plan = {{"backend", opt_.backend}, {"candidate", plan_library}, {"canary_key", opt_.canary_key},
               {"calls", std::move(calls)}};
  if (session_capable) plan["session"] = true;
  // A plain kcv-worker on cpu keeps its fault handlers: the candidate may not replace them (its
  // own SIGSEGV handler would swallow an over-read into the PROT_NONE page). Not under ASan or
  // valgrind, which own those signals.
  if (!torch && !sanitized && backend_.locks_fault_signals()) plan["lock_fault_signals"] = true;
  if (torch) {
    plan["kernelbench"] = opt_.kernelbench;
    plan["kernelbench"]["sanitize"] = sanitized;
    if (!candidate_.problem_copy().empty()) plan["kernelbench"]["problem"] = candidate_.problem_copy();
    plan["kernelbench"]["search_path"] = candidate_.python_search_path();
  }
  const std::string plan_text = plan.dump();
  const int64_t plan_at = at;
  const int64_t total = align64(at + static_cast<int64_t>(plan_text.size()));

  // The waiting session worker of these options, if any: its last data memfd serves this batch
  // when it is large enough. Zeroed first, it is what a fresh memfd is: nothing of an earlier
  // batch can be read as this one's.
  auto waiting = session_capable ? std::find_if(sessions_.begin(), sessions_.end(),
                                                [&](const Session& s) { return s.options == wopts; })
                                 : sessions_.end();
  int memfd = -1;
  unsigned char* shm = nullptr;
  int64_t mapped = total;
  if (waiting != sessions_.end() && waiting->data_fd >= 0 && waiting->data_bytes >= total) {
    memfd = std::exchange(waiting->data_fd, -1);
    shm = std::exchange(waiting->data, nullptr);
    mapped = waiting->data_bytes;
    std::memset(shm, 0, static_cast<std::size_t>(total));
  } else {
    memfd = memfd_create("data", MFD_CLOEXEC);
    if (memfd < 0 || ftruncate(memfd, total) != 0) throw std::runtime_error("cannot create the data memfd");
    shm = static_cast<unsigned char*>(mmap(nullptr, static_cast<std::size_t>(total), PROT_READ | PROT_WRITE,
                                           MAP_SHARED, memfd, 0));
    if (shm == MAP_FAILED) throw std::runtime_error("cannot map the data memfd");
    ++data_files_made_;
  }
  // Unmapped and closed when the batch ends, unless its worker stays as a session: then it is
  // the session's data memfd.
  const uint64_t header[2] = {static_cast<uint64_t>(plan_at), plan_text.size()};
  std::memcpy(shm, header, sizeof header);
  std::memcpy(shm + plan_at, plan_text.data(), plan_text.size());
  for (std::size_t ci = 0; ci < batch.size(); ++ci)
    for (std::size_t k = 0; k < batch[ci]->calls.size(); ++k) {
      const auto& call = batch[ci]->calls[k];
      if (call.large) continue;
      for (std::size_t a = 0; a < call.inputs.size(); ++a)
        std::memcpy(shm + in_at[ci][k][a].src, call.inputs[a].storage.data(), call.inputs[a].span_bytes());
      for (std::size_t a = 0; a < call.outputs.size(); ++a)
        std::memcpy(shm + out_at[ci][k][a].src, call.outputs[a].storage.data(), call.outputs[a].span_bytes());
    }

  const double timeout = opt_.timeout_s * srun.timeout_factor;

  // ---- hand the batch to the waiting session worker, or start a worker ----
  Session w;
  bool reused = false;
  if (waiting != sessions_.end()) {
    const Session s = *waiting;
    sessions_.erase(waiting);
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
    std::memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
    if (sendmsg(s.ctl_fd, &m, MSG_NOSIGNAL) == 1) {
      w = s;
      reused = true;
    } else {
      end_worker(s, 1);  // it is gone: a fresh worker below
    }
  }
  if (!reused) {
    const int serial = serial_++;
    w.options = wopts;
    w.cwd = (fs::path(opt_.workdir) / fmt::format("worker-{}", serial)).string();
    w.log = (fs::path(opt_.workdir) / fmt::format("worker-{}.log", serial)).string();
    fs::create_directories(w.cwd);
    std::vector<std::string> argv = srun.wrapper;
    if (srun.uses_ports) {
      // In a network namespace of its own the default ports are its own; elsewhere a range kcv
      // holds. KCV_SANITIZER_PORT_RANGES=0 (diagnosis, docs/security.md): the default range.
      const bool own_network = opt_.sandbox && !(opt_.sandbox_off & sandbox::kNet) && sandbox::network_namespace_available();
      const char* ranges = std::getenv("KCV_SANITIZER_PORT_RANGES");
      if (!own_network && !(ranges && std::string(ranges) == "0"))
        if (const int port = sanitizer_port_range(&w.port_lock_fd); port > 0)
          for (std::string& flag : backend_.port_flags(port)) argv.push_back(std::move(flag));
    }
    argv.insert(argv.end(), srun.wrapper_tail.begin(), srun.wrapper_tail.end());
    if (torch) {
      // The torch worker speaks kcv-worker's protocol (adapters/torch/kcv_torch_worker.py).
      argv.insert(argv.end(), {candidate_.python(), "-u", (fs::path(kcv_adapters_dir()) / "torch" / "kcv_torch_worker.py").string()});
    } else {
      argv.push_back(opt_.worker);
    }
    std::string path = "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin";
    // NOTES: a venv's python keeps its tools (ninja, for load_inline) beside it.
    if (torch && fs::path(candidate_.python()).has_parent_path())
      path = fs::path(candidate_.python()).parent_path().string() + ":" + path;
    const int threads = wopts.threads > 0 ? wopts.threads : default_threads();
    // NOTES: a neutral environment (issue 25 class 3): nothing in it names kcv; the thread count
    // travels as OpenMP's own variable, as a production launcher would set it.
    std::vector<std::string> env = {"PATH=" + path, "HOME=" + w.cwd, "TMPDIR=" + w.cwd, "LANG=C",
                                    fmt::format("OMP_NUM_THREADS={}", threads)};
    for (const char* keep : {"CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "CUDA_HOME"})
      if (const char* v = std::getenv(keep)) env.push_back(std::string(keep) + "=" + v);
    if (torch) {
      // NOTES: one extensions directory per verification, outside the worker's cwd: the probe's
      // load_inline build is reused by every later worker (sanitized builds hash differently).
      env.push_back("TORCH_EXTENSIONS_DIR=" + (fs::absolute(opt_.workdir) / "torch-extensions").string());
      env.push_back("PYTHONDONTWRITEBYTECODE=1");
      if (const char* v = std::getenv("PYTHONPATH")) env.push_back(std::string("PYTHONPATH=") + v);
      // Freed memory stays in the heap (no trim, no fresh mapping below 4 GiB): on cpu the
      // coverage gate's poison reaches the candidate's next allocation, and a large problem's
      // tensors reuse pages instead of faulting in and zeroing new ones every case.
      env.push_back("MALLOC_MMAP_THRESHOLD_=4294967296");
      env.push_back("MALLOC_TRIM_THRESHOLD_=17179869184");
    }
    env.insert(env.end(), srun.env.begin(), srun.env.end());

    // NOTES: a socket, not a pipe: kcv answers each `done` (protocol::kGo) once it has looked at
    // what the call left behind, so the worker cannot run on (and its namespace end) unseen.
    int result_pipe[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, result_pipe) != 0) throw std::runtime_error("socketpair failed");
    int ctl[2] = {-1, -1};
    if (session_capable && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) != 0)
      throw std::runtime_error("socketpair failed");
    sandbox::Request req;
    req.argv = argv;
    req.env = env;
    req.cwd = w.cwd;
    req.log = w.log;
    req.data_fd = memfd;
    req.result_fd = result_pipe[1];
    req.ctl_fd = ctl[1];
    req.enabled = opt_.sandbox;
    req.off = opt_.sandbox_off;
    // NOTES: below the machine's memory, so a runaway candidate meets its own limit before the
    // host's out-of-memory killer. Not on cuda (the driver reserves address space far beyond
    // use) nor under the sanitizers (shadow memory).
    if (backend_.caps_address_space() && !sanitized) req.address_space_bytes = default_address_space_limit();
    req.keep_dirs = {fs::absolute(opt_.workdir).string(), fs::path(fs::absolute(opt_.worker)).parent_path().string()};
    if (!library.empty()) req.keep_dirs.push_back(fs::path(library).parent_path().string());
    if (torch) {
      req.keep_dirs.push_back(fs::path(candidate_.python()).parent_path().string());
      req.keep_dirs.push_back(fs::path(candidate_.problem()).parent_path().string());
      req.keep_dirs.push_back(fs::path(candidate_.path()).parent_path().string());  // sys.path's last entries
      req.keep_dirs.push_back(kcv_adapters_dir());
    }
    if (opt_.sandbox && geteuid() == 0) {
      // The worker's uid must reach its cwd (handed to it) through the verification's workdir.
      std::error_code ec;
      fs::permissions(opt_.workdir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                      fs::perm_options::replace, ec);
      // The torch worker builds its extensions (and the sanitizer's) beside its cwd, in
      // directories handed to it too. Not torch-pch: kcv made the checked copies there, read-only
      // to the worker (checked_pch_copies).
      if (torch) {
        for (const char* d : {"torch-extensions", "torch-extensions-asan"}) {
          const fs::path dir = fs::absolute(opt_.workdir) / d;
          fs::create_directories(dir, ec);
          if (chown(dir.c_str(), 65534, 65534) != 0) { /* the worker's build says why */ }
        }
        // A failed load_inline build's whole output goes there (kcv_torch_worker.py), beside the
        // extensions; the workdir itself is not the worker's to write.
        for (const char* f : {"build.log", "build-asan.log"}) {
          const fs::path log = fs::absolute(opt_.workdir) / f;
          if (!fs::exists(log, ec)) std::ofstream(log).close();
          if (chown(log.c_str(), 65534, 65534) != 0) { /* then no log path in the error */ }
        }
      }
    }
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
    if (!in_force_) in_force_ = w.proc.in_force;
    else in_force_->weaken_to(w.proc.in_force);
    close(result_pipe[1]);
    if (ctl[1] >= 0) close(ctl[1]);
    w.result_fd = result_pipe[0];
    w.ctl_fd = ctl[0];
  }
  const double load_timeout = reused ? timeout : std::max(timeout, opt_.load_timeout_s);
  // NOTES: the compile grace, decided here from the plan: a call gets it when no earlier call of
  // this worker had its signature, and only once (a worker that says `start` early or twice
  // cannot stretch it). Sanitized runs already have their longer timeout.
  const double grace = std::max(timeout, opt_.compile_grace_s);
  std::vector<bool> first_at_shape(static_cast<std::size_t>(global), false);
  if (grace > timeout && !grace_spent_)
    for (int g = 0; g < global; ++g)
      first_at_shape[static_cast<std::size_t>(g)] = w.signatures.insert(signature[static_cast<std::size_t>(g)]).second;

  // ---- follow its records ----
  std::vector<bool> done(static_cast<std::size_t>(global), false), started(static_cast<std::size_t>(global), false);
  std::vector<bool> recheck_seen(static_cast<std::size_t>(global), false);  // its outputs' second snapshot is there
  std::vector<int> rc(static_cast<std::size_t>(global), 0);
  std::vector<double> secs(static_cast<std::size_t>(global), 0);
  std::vector<std::string> msg(static_cast<std::size_t>(global));
  int current = -1;  // the call the worker last started
  bool ready = false, bye = false, idle = false, timed_out = false, out_of_time = false;
  // NOTES: `fatal` is a setup error only while no candidate code can have run: kcv-worker says
  // `loading` right before dlopen (constructors run there). Later, anyone in the process could
  // have written it: it is the worker's death, with its words as evidence, never a setup error.
  bool loading = false;
  std::string fatal, untrusted_fatal, pending, build_log;
  Fault fault;  // global call index until mapped to its case below
  std::string device_error;
  // Something the call left behind (a process, a file outside the cwd): the call's case fails.
  std::string side_effect;
  int side_effect_call = -1;
  // Which processes beside the worker a call may leave behind:
  //   none      kcv-worker alone (a plain candidate): none, even at load time;
  //   baseline  a wrapper (a sanitizer) has its own: those alive when the worker says ready;
  //   any       a torch candidate's calls may start processes that stay: torch.compile's Inductor
  //             starts its pool of compile workers at the first compile and keeps it, as in
  //             production. They are contained all the same: the worker's PID namespace holds them,
  //             they die with it, they share its uid, seccomp filter and private /tmp, and what they
  //             could write into a returned output the second snapshot sees.
  // Files outside the working directory fail in every case.
  enum class Leftovers { none, baseline, any };
  const Leftovers leftovers = torch ? Leftovers::any : !srun.wrapper.empty() ? Leftovers::baseline : Leftovers::none;
  auto look_for_side_effects = [&](int call) {
    if (!opt_.sandbox) return;
    std::vector<std::string> found;
    if (leftovers != Leftovers::any) found = sandbox::extra_processes(w.proc, w.baseline);
    std::string what;
    if (!found.empty()) {
      what = "process outlived the call: ";
      for (std::size_t k = 0; k < found.size() && k < 4; ++k) what += (k ? ", " : "") + found[k];
      if (found.size() > 4) what += fmt::format(" and {} more", found.size() - 4);
    }
    std::vector<std::string> files;
    for (auto& f : sandbox::stray_files(w.proc))
      if (!w.file_baseline.count(f)) files.push_back(f);
    if (!files.empty()) {
      what += std::string(what.empty() ? "" : "; ") + "file written outside the working directory: ";
      for (std::size_t k = 0; k < files.size() && k < 4; ++k) what += (k ? ", " : "") + files[k];
      if (files.size() > 4) what += fmt::format(" and {} more", files.size() - 4);
    }
    if (!what.empty() && side_effect.empty()) {
      side_effect = what;
      side_effect_call = call;
    }
  };
  using Clock = std::chrono::steady_clock;
  auto after = [](double s) { return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  // NOTES: two deadlines, neither extended by output: `progress_deadline` moves on only with
  // progress (below); a call in its compile grace (the first at its shape signature, decided from
  // the plan) may run until its grace, counted from the end of the previous call, ends.
  Clock::time_point progress_deadline = after(load_timeout);
  Clock::time_point deadline = progress_deadline;
  std::map<int, Clock::time_point> in_grace;   // calls in their compile grace: since when
  std::vector<double> graced(static_cast<std::size_t>(global), 0);
  int next = 0;  // the first call not done
  bool eof = false;
  while (!eof && !bye && !idle && side_effect.empty()) {
    if (const int sig = stop_requested()) {
      end_worker(w, 0);
      release_data_file(memfd, shm, mapped);
      throw Interrupted(sig);
    }
    const auto until = std::min(deadline, opt_.deadline);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) { timed_out = true; out_of_time = opt_.deadline <= deadline; break; }
    pollfd p{w.result_fd, POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(std::min<long long>(left, 200)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    char buf[4096];
    ssize_t n = read(w.result_fd, buf, sizeof buf);
    if (n <= 0) { eof = true; break; }
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::istringstream line(pending.substr(0, nl));
      pending.erase(0, nl + 1);
      std::string kind;
      line >> kind;
      // NOTES: the deadline moves on only with progress: ready once, each call's first start and
      // first done. A line the candidate writes (a heartbeat, a repeated start or done) extends
      // nothing; forged records of calls not yet run move it at most twice per call.
      const auto now = Clock::now();
      auto progress = [&] { progress_deadline = after(timeout); };
      if (kind == "ready") {
        if (!ready) {
          progress();
          if (opt_.sandbox) {
            // NOTES: files a wrapper or the CUDA driver made in /tmp or /dev/shm before the
            // candidate ran (compute-sanitizer, torch, the context) are theirs, not side effects.
            if (leftovers != Leftovers::none || backend_.runtime_makes_files())
              for (auto& f : sandbox::stray_files(w.proc)) w.file_baseline.insert(f);
            if (leftovers == Leftovers::none) look_for_side_effects(-1);
            else if (leftovers == Leftovers::baseline) sandbox::extra_processes(w.proc, {}, &w.baseline);
          }
        }
        ready = true;
      }
      else if (kind == "loading") loading = true;
      else if (kind == "bye") bye = true;
      else if (kind == "idle") idle = true;
      else if (kind == "fatal") {
        std::string h;
        line >> h;
        (loading || ready ? untrusted_fatal : fatal) = proto::hex_decode(h);
        if (!loading && !ready) break;
      }
      else if (kind == "recheck") {
        int i = -1;
        line >> i;
        if (i >= 0 && i < global && done[static_cast<std::size_t>(i)]) recheck_seen[static_cast<std::size_t>(i)] = true;
      }
      else if (kind == "tamper") {
        // kcv-worker's own look after a call: a fault handler replaced, a PROT_NONE page opened.
        int i = -1; std::string h;
        line >> i >> h;
        if (i >= 0 && i < global && side_effect.empty()) {
          side_effect = clean_text(proto::hex_decode(h));
          side_effect_call = i;
        }
      }
      else if (kind == "build_log") { std::string h; line >> h; build_log = proto::hex_decode(h); }
      else if (kind == "start") {
        int i = -1;
        line >> i;
        if (i >= 0 && i < global && !started[static_cast<std::size_t>(i)]) {
          started[static_cast<std::size_t>(i)] = true;
          current = i;
          progress();
        }
      }
      else if (kind == "fault") {
        std::string where;
        line >> where;
        if (where == "device") {
          std::string h;
          line >> h;
          device_error = clean_text(proto::hex_decode(h));
        } else if (where == "in" || where == "out") {
          fault.known = true;
          fault.input = where == "in";
          line >> fault.call >> fault.arg >> fault.offset;
        }
      }
      else if (kind == "done") {
        int i = -1; std::string h;
        line >> i;
        // The worker waits for this after each `done`; sent after the look below. A duplicate
        // (forged) `done` gets one too, so a worker is never left waiting for kcv.
        struct Go {
          int fd; bool send;
          ~Go() { if (send) (void)::send(fd, &proto::kGo, 1, MSG_NOSIGNAL | MSG_DONTWAIT); }
        } go{w.result_fd, i >= 0 && i < global};
        if (i >= 0 && i < global && !done[static_cast<std::size_t>(i)]) {
          auto u = static_cast<std::size_t>(i);
          line >> rc[u] >> secs[u] >> h;
          msg[u] = proto::hex_decode(h);
          done[u] = true;
          progress();
          look_for_side_effects(i);
          if (auto it = in_grace.find(i); it != in_grace.end()) {
            const double wall = std::chrono::duration<double>(now - it->second).count();
            if (wall > timeout) graced[u] = wall;
            in_grace.erase(it);
          }
        }
      }
      // NOTES: the worker works on the first call not done yet (prepare, the model at new
      // bindings, the call): from now on, when it is the first at its signature, it has the grace.
      while (next < global && done[static_cast<std::size_t>(next)]) ++next;
      if (ready && next < global && first_at_shape[static_cast<std::size_t>(next)]) {
        first_at_shape[static_cast<std::size_t>(next)] = false;
        in_grace[next] = now;
      }
      // No progress for timeout (output is not progress), or the grace of a call still in it.
      deadline = progress_deadline;
      for (const auto& [call, since] : in_grace)
        if (const auto until = since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
            until > deadline)
          deadline = until;
    }
  }
  // A session worker that finished its batch waits for the next one; anything else ends here.
  const bool keep = idle && pending.empty() && fatal.empty() && untrusted_fatal.empty() && device_error.empty() &&
                    side_effect.empty() && session_capable;
  if (keep) {
    // A fresh worker has none; a reused one still has its own when it was too small for this batch.
    release_data_file(w.data_fd, w.data, w.data_bytes);
    w.data_fd = memfd;
    w.data = shm;
    w.data_bytes = mapped;
  }
  int status = 0;
  bool outstayed = false;
  if (!keep) {
    // Let a worker that is done exit by itself (valgrind and ASan report at exit), then kill the
    // whole group: nothing the candidate started outlives the batch.
    status = end_worker(w, timed_out || !side_effect.empty() ? 0 : bye || idle ? 60 : 5, &outstayed);
    // A session worker's exit after `idle` is normal: judge it as after `bye`.
    bye = bye || idle;
  }

  std::string log_text;
  {
    std::ifstream in(w.log, std::ios::binary);
    in.seekg(w.log_offset);
    std::ostringstream ss;
    ss << in.rdbuf();
    log_text = ss.str();
    if (keep) {
      w.log_offset += static_cast<int64_t>(log_text.size());
      sessions_.push_back(w);
    }
    if (log_text.size() > kMaxLog) log_text = "[...]\n" + log_text.substr(log_text.size() - kMaxLog);
    // The candidate writes this log: valid UTF-8 without control characters from here on.
    log_text = clean_text(log_text, /*keep_newlines=*/true);
  }

  if (!fatal.empty()) {
    release_data_file(memfd, shm, mapped);
    if (!build_log.empty()) throw BuildError(clean_text(fatal), build_log);
    throw SetupError(clean_text(fatal));
  }

  bool unsent_sigkill =
      !timed_out && !outstayed && killed_by_sigkill(status, srun.exit_is_signal, log_text);
  // NOTES: a SIGKILL kcv did not send is the host's out-of-memory killer only if the host counted
  // an OOM kill meanwhile (/proc/vmstat oom_kill); otherwise it came from inside the sandbox
  // (the candidate's kill(0, SIGKILL)), and is named so.
  bool self_sigkill = false;
  if (unsent_sigkill) {
    self_sigkill = !oom_kill_possible(w.oom_kills_at_start, sandbox::host_oom_kills());
    unsent_sigkill = !self_sigkill;
  }
  // A hang through a compile grace spends it for the rest of this runner (RunnerOptions).
  const bool hung_in_grace = timed_out && !out_of_time && !in_grace.empty();
  const std::string no_grace = ready && grace_spent_ && grace > timeout
                                   ? " (no compile grace: an earlier first call at its shape hung through it)" : "";
  grace_spent_ = grace_spent_ || hung_in_grace;
  std::string death;
  if (!device_error.empty()) death = "hit a device error: " + device_error;
  else if (timed_out && out_of_time) death = fmt::format("was stopped: the overall limit (--max-time {:g} s) ran out", opt_.max_time_s);
  else if (hung_in_grace)
    death = fmt::format("no progress for {:g} s (the compile grace of a first call at its shape; the per-call timeout "
                        "is {:g} s)", grace, timeout);
  else if (timed_out) death = fmt::format("no progress for {:g} s{}", ready ? timeout : load_timeout, no_grace);
  else if (keep) death.clear();
  else if (!untrusted_fatal.empty())
    death = fmt::format("reported a fatal error from inside the candidate's process (not trusted as a setup error): {}",
                        untrusted_fatal.substr(0, 300));
  else if (self_sigkill && !bye)
    death = fmt::format("killed by {} from inside its sandbox before finishing (kcv did not send it, and the host's "
                        "out-of-memory kill count did not change){}", signal_text(SIGKILL), last_words(log_text));
  else if (unsent_sigkill && !bye) death = fmt::format("killed by {} before finishing{}", kUnsentSigkill, last_words(log_text));
  else if (WIFSIGNALED(status) && !bye) death = "killed by " + signal_text(WTERMSIG(status));
  else if (WIFEXITED(status) && !bye) death = fmt::format("exited with status {} before finishing{}", WEXITSTATUS(status), last_words(log_text));
  else if (unsent_sigkill && !idle) death = fmt::format("killed by {} after its calls{}", kUnsentSigkill, last_words(log_text));
  else if (bye && WIFEXITED(status) && WEXITSTATUS(status) != 0) death = fmt::format("exited with status {} after its calls{}", WEXITSTATUS(status), last_words(log_text));
  else if (bye && WIFSIGNALED(status) && !idle) death = "killed by " + signal_text(WTERMSIG(status)) + " after its calls";

  // ---- results per case ----
  std::vector<CaseRun> runs;
  int side_case = -1;
  if (!side_effect.empty()) {
    side_case = 0;
    for (std::size_t ci = 0; ci < batch.size(); ++ci)
      if (side_effect_call >= first_call_of_case[ci]) side_case = static_cast<int>(ci);
  }
  for (std::size_t ci = 0; ci < batch.size(); ++ci) {
    const Case& cs = *batch[ci];
    CaseRun run;
    run.log = log_text;
    bool all_done = true;
    std::string late;  // an output that changed after its call returned
    for (std::size_t k = 0; k < cs.calls.size(); ++k) {
      const auto g = static_cast<std::size_t>(first_call_of_case[ci]) + k;
      const CallSpec& spec = cs.calls[k];
      CallResult r;
      r.ran = done[g];
      if (r.ran) {
        r.rc = rc[g];
        r.message = clean_text(msg[g]);  // the candidate's own text
        r.seconds = secs[g];
        r.compile_grace_seconds = graced[g];
        auto read_back = [&](const std::vector<HostTensor>& ts, const std::vector<Staged>& where,
                             std::vector<HostTensor>& out, std::vector<GuardReport>& guards) {
          for (std::size_t a = 0; a < ts.size(); ++a) {
            const unsigned char* snap = shm + where[a].snap;
            const auto span = static_cast<int64_t>(ts[a].span_bytes());
            const int64_t g = proto::kGuardBytes;
            if (spec.large) {  // [guard][guard][samples]: the samples as a 1-D tensor
              guards.push_back(check_guards(snap, snap + g, span, opt_.canary_key));
              const bool is_output = &ts == &spec.outputs;
              HostTensor t = HostTensor::zeros(ts[a].dtype, {is_output ? static_cast<int64_t>(spec.samples.size()) : 0});
              std::memcpy(t.storage.data(), snap + 2 * g, t.span_bytes());
              out.push_back(std::move(t));
              continue;
            }
            HostTensor t = ts[a];
            std::memcpy(t.storage.data(), snap + g, t.span_bytes());
            // NOTES: an exact buffer has no guard bands (its slot's guard bytes stay unwritten):
            // nothing to check; the sanitizer gate's memcheck judges its bounds.
            guards.push_back(spec.exact_buffers ? GuardReport{}
                                                : check_guards(snap, snap + g + span, span, opt_.canary_key));
            out.push_back(std::move(t));
          }
        };
        read_back(spec.inputs, in_at[ci][k], r.inputs_after, r.input_guards);
        read_back(spec.outputs, out_at[ci][k], r.outputs, r.output_guards);
        // The outputs again at the end of the case (guards and span): what changed after the
        // call returned was written late.
        if (recheck_seen[g] && late.empty())
          for (std::size_t a = 0; a < spec.outputs.size(); ++a) {
            const Staged& st = out_at[ci][k][a];
            if (st.recheck < 0) continue;
            const auto span = static_cast<int64_t>(spec.outputs[a].span_bytes());
            const int64_t n = proto::snapshot_bytes(span), gb = proto::kGuardBytes;
            const unsigned char *first = shm + st.snap, *again = shm + st.recheck;
            if (std::memcmp(first, again, static_cast<std::size_t>(n)) == 0) continue;
            int64_t differ = 0, at = -1;
            for (int64_t b = 0; b < n; ++b)
              if (first[b] != again[b]) { ++differ; if (at < 0) at = b; }
            const std::string where = at < gb ? fmt::format("{} bytes before its start", gb - at)
                                      : at >= gb + span ? fmt::format("{} bytes past its end", at - gb - span + 1)
                                                        : fmt::format("byte {}", at - gb);
            late = fmt::format("output {} of call {} changed after the call returned ({} bytes differ by the end of "
                               "the case, the first at {}): written late, by a thread or stream the call left running",
                               a, k, differ, where);
            break;
          }
      } else {
        all_done = false;
      }
      run.calls.push_back(std::move(r));
    }
    if (static_cast<int>(ci) == side_case) {
      run.status = RunStatus::side_effect;
      run.detail = side_effect_call < 0
                       ? "while the candidate loaded: " + side_effect
                       : fmt::format("call {} of case '{}': {}", side_effect_call - first_call_of_case[ci], cs.label,
                                     side_effect);
      runs.push_back(std::move(run));
      break;
    }
    // A case is abnormal when any of its calls did not finish; after the worker said bye, a bad
    // exit status (sanitizer reports) marks every case of the batch.
    const bool batch_failed_late = bye && !death.empty();
    if (!all_done || batch_failed_late) {
      run.status = timed_out ? RunStatus::timeout : RunStatus::crash;
      if (fault.known && fault.call >= first_call_of_case[ci] &&
          fault.call < first_call_of_case[ci] + static_cast<int>(cs.calls.size())) {
        run.fault = fault;
        run.fault.call -= first_call_of_case[ci];
      }
      int in_call = current >= first_call_of_case[ci] ? current - first_call_of_case[ci] : -1;
      run.detail = !ready ? "worker " + (death.empty() ? std::string("died") : death) + " while loading the candidate"
                   : batch_failed_late ? "worker " + death
                   : fmt::format("worker {} in call {} of case '{}'", death.empty() ? "died" : death,
                                 std::max(in_call, 0), cs.label);
      runs.push_back(std::move(run));
      if (!batch_failed_late) break;
      continue;
    }
    if (!late.empty()) {
      run.status = RunStatus::side_effect;
      run.detail = fmt::format("case '{}': {}", cs.label, late);
    }
    runs.push_back(std::move(run));
  }
  if (!keep) release_data_file(memfd, shm, mapped);
  return runs;
}

}  // namespace kcv

// Runner: runs cases in workers, one batch at a time: stage a plan in a memfd, start kcv-worker
// in its sandbox (src/kcv/sandbox.cpp: own PID, mount and IPC namespaces, unprivileged uid,
// seccomp, rlimits, clean env, fresh cwd), follow its records with a per-call deadline that output
// cannot extend, look for processes left behind and files written outside its cwd after every
// call, kill the whole namespace at the end. The pieces are in src/kcv/isolation/.
#include "kcv/runner.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "isolation/isolation.hpp"
#include "kcv/build_config.hpp"
#include "kcv/protocol.hpp"
#include "kcv/text.hpp"

namespace fs = std::filesystem;

namespace kcv {

namespace {
std::atomic<int> g_stop{0};
}  // namespace

void request_stop(int sig) { g_stop.store(sig); }
int stop_requested() { return g_stop.load(); }

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
  for (auto& s : sessions_) isolation::end_worker(s, 1);  // end of file on fd 5: a session worker exits by itself
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

isolation::Session Runner::worker_for(const isolation::Context& ctx, const isolation::DataFile& data,
                                      bool* reused) {
  using namespace isolation;
  auto waiting = std::find_if(sessions_.begin(), sessions_.end(),
                              [&](const Session& s) { return ctx.mode.session_capable && s.options == ctx.wopts; });
  if (waiting != sessions_.end()) {
    Session s = std::move(*waiting);
    sessions_.erase(waiting);
    if (send_data_file(s, data.fd())) {
      *reused = true;
      return s;
    }
    end_worker(s, 1);  // it is gone: a fresh worker
  }
  *reused = false;
  Session w = start_worker(ctx, serial_++, data);
  if (!in_force_) in_force_ = w.proc.in_force;
  else in_force_->weaken_to(w.proc.in_force);
  return w;
}

std::vector<CaseRun> Runner::run_batch(const std::vector<const Case*>& batch, const WorkerOptions& wopts) {
  using namespace isolation;
  Context ctx{opt_, candidate_, backend_, wopts, worker_mode(backend_, candidate_, wopts, opt_.timeout_s), {}};
  ctx.library = ctx.mode.sanitizer.instrumented_build ? candidate_.sanitized_library() : candidate_.library();

  // Staged in the data file of the session worker of these options when it has one that fits.
  // NOTES: buffers are placed at varied offsets (issue 25 class 3) where kcv-worker can place
  // them: not in a torch worker (its own placement), nor on a backend that keeps its own.
  Layout layout = lay_out(batch, opt_.canary_key, /*recheck_outputs=*/!ctx.mode.torch,
                          ctx.mode.torch ? PlacementRule{} : backend_.placement_rule());
  const std::string plan = plan_text(ctx, std::move(layout.calls));
  auto waiting = std::find_if(sessions_.begin(), sessions_.end(),
                              [&](const Session& s) { return ctx.mode.session_capable && s.options == wopts; });
  DataFile data = data_file(waiting != sessions_.end() ? &*waiting : nullptr,
                            (layout.end + static_cast<int64_t>(plan.size()) + 63) / 64 * 64, &data_files_made_);
  write_staging(data, layout, batch, plan);

  bool reused = false;
  Session w = worker_for(ctx, data, &reused);
  Exchange ex(ctx, w, layout, reused, grace_spent_);
  ex.follow();
  Ending end = finish(w, ex, ctx.mode);
  if (const Records& r = ex.records; !r.fatal.empty()) {
    if (!r.build_log.empty()) throw BuildError(clean_text(r.fatal), r.build_log);
    throw SetupError(clean_text(r.fatal));
  }
  end.death = worker_death(ctx, w, ex, end, &grace_spent_);
  std::vector<CaseRun> runs = case_runs(ctx, batch, layout, ex, data, end);
  if (end.keep) {
    // Its data file stays mapped for the next batch (a reused worker's older one goes now).
    w.data = std::move(data);
    sessions_.push_back(std::move(w));
  }
  return runs;
}

}  // namespace kcv

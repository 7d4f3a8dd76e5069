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
#include <optional>
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

int default_threads(const Settings& settings) {
  return settings.threads > 0 ? settings.threads : static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string default_worker_path(const Settings& settings) {
  if (!settings.worker.empty()) return settings.worker;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && fs::exists(exe.parent_path() / "kcv-worker")) return (exe.parent_path() / "kcv-worker").string();
  return KCV_BUILD_WORKER_PATH;
}

namespace {
/// A worker's options as the report's standby notes say them.
std::string options_text(const WorkerOptions& o) {
  return fmt::format("threads {}{}{}", o.threads, o.sanitized ? ", sanitized" : "",
                     o.sanitizer_tool.empty() ? "" : " (" + o.sanitizer_tool + ")");
}
}  // namespace

Runner::Runner(const Candidate& candidate, RunnerOptions options)
    : candidate_(candidate), opt_(std::move(options)), backend_(backend_named(opt_.backend)) {}

Runner::~Runner() {
  for (auto& s : standby_) isolation::end_worker(s, 0);  // never given a batch: nothing of the candidate ran
  for (auto& s : sessions_) isolation::end_worker(s, 1);  // end of file on fd 5: a session worker exits by itself
}

isolation::Context Runner::context_for(const WorkerOptions& wopts) const {
  isolation::Context ctx{opt_, candidate_, backend_, wopts, isolation::worker_mode(backend_, candidate_, wopts, opt_.timeout_s), {}};
  ctx.library = ctx.mode.sanitizer.instrumented_build ? candidate_.sanitized_library() : candidate_.library();
  return ctx;
}

void Runner::start_one_standby(const WorkerOptions& o, std::vector<std::string>* unused) {
  std::string why;
  if (std::optional<isolation::Session> s = isolation::start_standby(context_for(o), serial_++, &why))
    standby_.push_back(std::move(*s));
  else
    unused->push_back(fmt::format("{}: {}", options_text(o), why));
}

void Runner::start_standby(const std::vector<WorkerOptions>& options) {
  if (!opt_.settings.standby || !candidate_.runs_in_torch_worker() || candidate_.library().empty()) return;
  for (const WorkerOptions& o : options) {
    const bool have = o == WorkerOptions{} ||
                      std::any_of(standby_.begin(), standby_.end(), [&](const auto& s) { return s.options == o; }) ||
                      std::any_of(sessions_.begin(), sessions_.end(), [&](const auto& s) { return s.options == o; });
    if (have) continue;
    // NOTES: not under a wrapper process (compute-sanitizer): the standby handover goes through
    // fd 5 past the wrapper, a path no GPU run has shown working, and on the H200 (session 24) the
    // KernelBench smoke's sanitizer cases went from finishing inside 150 s to not finishing in 190 s
    // with it. Such a batch starts its worker when its gate comes, as before standby workers.
    if (const std::vector<std::string> wrapper = context_for(o).mode.sanitizer.wrapper; !wrapper.empty()) {
      standby_unused_.push_back(fmt::format("{}: not started ahead (its worker runs under {})", options_text(o),
                                            wrapper.front()));
      continue;
    }
    ++standby_started_;
    start_one_standby(o, &standby_unused_);
  }
}

void Runner::adopt(WorkerPool& pool) {
  using namespace isolation;
  std::vector<Session> offered = std::move(pool.workers_);
  pool.workers_.clear();
  for (Session& w : offered) {
    ++pool_offered_;
    std::string why;
    const bool taken_already = std::any_of(standby_.begin(), standby_.end(), [&](const Session& s) {
      return s.options == w.options;
    });
    const bool fits = candidate_.runs_in_torch_worker() && !candidate_.library().empty() && w.serial >= serial_ &&
                      !taken_already;
    if (!fits) why = "this verification starts no such worker";
    if (fits && spawn_matches(context_for(w.options), w, &why)) {
      serial_ = w.serial + 1;
      pooled_.insert(w.serial);
      if (w.options == WorkerOptions{})
        pool_main_age_s_ = std::chrono::duration<double>(Clock::now() - w.started).count();
      standby_.push_back(std::move(w));
      continue;
    }
    end_worker(w, 0);  // nothing of any candidate ran in it
    pool_unused_.push_back(fmt::format("{}: {}", options_text(w.options), why));
  }
}

WorkerPool::WorkerPool(const Candidate& expected, RunnerOptions options, const std::vector<WorkerOptions>& extra)
    : thread_(std::this_thread::get_id()) {
  // NOTES: numbered as Runner numbers a verification's workers: the standby ones first
  // (start_standby), then the main one (the probe's batch).
  Runner r(expected, std::move(options));
  r.start_standby(extra);
  r.start_one_standby(WorkerOptions{}, &r.standby_unused_);
  workers_ = std::move(r.standby_);
  r.standby_.clear();
  not_started_ = r.standby_unused_;
}

int WorkerPool::size() const { return static_cast<int>(workers_.size()); }

WorkerPool::~WorkerPool() {
  for (auto& w : workers_) isolation::end_worker(w, 0);
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
      late.out_of_time = true;
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
  // A standby worker of these options: the batch's new worker (it loads the candidate now, under
  // the load timeout, as one started here would).
  auto standby = std::find_if(standby_.begin(), standby_.end(), [&](const Session& s) { return s.options == ctx.wopts; });
  if (standby != standby_.end()) {
    Session s = std::move(*standby);
    standby_.erase(standby);
    std::string why;
    if (await_standby(ctx, s, &why)) {
      if (send_data_file(s, data.fd())) {
        ++(pooled_.count(s.serial) ? pool_used_ : standby_used_);
        if (!in_force_) in_force_ = s.proc.in_force;
        else in_force_->weaken_to(s.proc.in_force);
        return s;
      }
      end_worker(s, 0);
      why = "it was gone when its batch came";
    }
    (pooled_.count(s.serial) ? pool_unused_ : standby_unused_).push_back(fmt::format("{}: {}", options_text(ctx.wopts), why));
  }
  Session w = start_worker(ctx, serial_++, data);
  if (!in_force_) in_force_ = w.proc.in_force;
  else in_force_->weaken_to(w.proc.in_force);
  return w;
}

std::vector<CaseRun> Runner::run_batch(const std::vector<const Case*>& batch, const WorkerOptions& wopts) {
  using namespace isolation;
  Context ctx = context_for(wopts);

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

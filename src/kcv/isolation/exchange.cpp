// The exchange: kcv follows one worker's records (fd 4, docs/protocol.md) through a batch, with
// deadlines output cannot extend, and looks for what each call left behind before it lets the
// worker go on.
#include "isolation.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>

#include <fmt/format.h>

#include "kcv/protocol.hpp"
#include "kcv/text.hpp"

namespace proto = kcv::protocol;

namespace kcv::isolation {

namespace {

Clock::time_point after(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

/// "what: a, b, c, d and N more".
std::string listed(const std::string& what, const std::vector<std::string>& items) {
  std::string out = what;
  for (std::size_t k = 0; k < items.size() && k < 4; ++k) out += (k ? ", " : "") + items[k];
  if (items.size() > 4) out += fmt::format(" and {} more", items.size() - 4);
  return out;
}

}  // namespace

Records::Records(int calls)
    : done(static_cast<std::size_t>(calls), false),
      started(static_cast<std::size_t>(calls), false),
      recheck_seen(static_cast<std::size_t>(calls), false),
      rc(static_cast<std::size_t>(calls), 0),
      secs(static_cast<std::size_t>(calls), 0),
      graced(static_cast<std::size_t>(calls), 0),
      msg(static_cast<std::size_t>(calls)) {}

Exchange::Exchange(const Context& ctx, Session& w, const Layout& layout, bool reused, bool grace_spent)
    : records(layout.calls_total()), ctx_(ctx), w_(w) {
  timeout = ctx.mode.timeout;
  load_timeout = reused ? timeout : std::max(timeout, ctx.opt.load_timeout_s);
  // NOTES: the compile grace, decided here from the plan: a call gets it when no earlier call of
  // this worker had its signature, and only once (a worker that says `start` early or twice
  // cannot stretch it). Sanitized runs already have their longer timeout.
  grace = std::max(timeout, ctx.opt.compile_grace_s);
  first_at_shape_.assign(static_cast<std::size_t>(layout.calls_total()), false);
  if (grace > timeout && !grace_spent)
    for (int g = 0; g < layout.calls_total(); ++g)
      first_at_shape_[static_cast<std::size_t>(g)] = w.signatures.insert(layout.signature[static_cast<std::size_t>(g)]).second;
  // NOTES: two deadlines, neither extended by output: `progress_deadline_` moves on only with
  // progress (below); a call in its compile grace (the first at its shape signature, decided from
  // the plan) may run until its grace, counted from the end of the previous call, ends.
  progress_deadline_ = after(load_timeout);
  deadline_ = progress_deadline_;
}

void Exchange::follow() {
  Records& r = records;
  while (!r.bye && !r.idle && r.side_effect.empty()) {
    if (const int sig = stop_requested()) {
      end_worker(w_, 0);
      throw Interrupted(sig);
    }
    const auto until = std::min(deadline_, ctx_.opt.deadline);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      out_of_time = ctx_.opt.deadline <= deadline_;
      return;
    }
    pollfd p{w_.result_fd, POLLIN, 0};
    const int pr = poll(&p, 1, static_cast<int>(std::min<long long>(left, 200)));
    if (pr <= 0) continue;   // EINTR or nothing yet
    char buf[4096];
    const ssize_t n = read(w_.result_fd, buf, sizeof buf);
    if (n <= 0) return;      // its records ended
    pending_.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
      const std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (!take(line)) break;
    }
  }
}

Record parse_record(const std::string& text) {
  Record rec;
  std::istringstream line(text);
  line >> rec.kind;
  std::string h;
  bool ok = true;
  if (rec.kind == "fatal" || rec.kind == "build_log") {
    line >> h;
  } else if (rec.kind == "start" || rec.kind == "recheck") {
    ok = static_cast<bool>(line >> rec.call);
  } else if (rec.kind == "tamper") {
    ok = static_cast<bool>(line >> rec.call >> h);
  } else if (rec.kind == "done") {
    ok = static_cast<bool>(line >> rec.call >> rec.rc >> rec.seconds >> h);
  } else if (rec.kind == "fault") {
    line >> rec.where;
    if (rec.where == "device") line >> h;
    else if (rec.where == "in" || rec.where == "out") ok = static_cast<bool>(line >> rec.call >> rec.arg >> rec.offset);
  }
  // NOTES: a record whose fields do not parse keeps its kind and nothing else: it names no call,
  // so kcv ignores it (std::istream would have read "done x" as call 0).
  if (!ok) {
    Record bad;
    bad.kind = rec.kind;
    return bad;
  }
  rec.text = proto::hex_decode(h);
  return rec;
}

bool Exchange::take(const std::string& text) {
  Records& r = records;
  const Record rec = parse_record(text);
  const int i = rec.call;
  const bool in_range = i >= 0 && i < static_cast<int>(r.done.size());
  const auto u = static_cast<std::size_t>(in_range ? i : 0);
  // NOTES: the deadline moves on only with progress: ready once, each call's first start and
  // first done. A line the candidate writes (a heartbeat, a repeated start or done) extends
  // nothing; forged records of calls not yet run move it at most twice per call.
  const auto now = Clock::now();
  if (rec.kind == "ready") on_ready();
  else if (rec.kind == "loading") r.loading = true;
  else if (rec.kind == "bye") r.bye = true;
  else if (rec.kind == "idle") r.idle = true;
  else if (rec.kind == "fatal") {
    (r.loading || r.ready ? r.untrusted_fatal : r.fatal) = rec.text;
    if (!r.loading && !r.ready) return false;
  }
  else if (rec.kind == "recheck") {
    if (in_range && r.done[u]) r.recheck_seen[u] = true;
  }
  else if (rec.kind == "tamper") {
    // kcv-worker's own look after a call: a fault handler replaced, a PROT_NONE page opened.
    if (in_range && r.side_effect.empty()) {
      r.side_effect = clean_text(rec.text);
      r.side_effect_call = i;
    }
  }
  else if (rec.kind == "build_log") r.build_log = rec.text;
  else if (rec.kind == "start") {
    if (in_range && !r.started[u]) {
      r.started[u] = true;
      r.current = i;
      progress();
    }
  }
  else if (rec.kind == "fault") on_fault(rec);
  else if (rec.kind == "done") on_done(rec, now);
  move_deadline(now);
  return true;
}

void Exchange::progress() { progress_deadline_ = after(timeout); }

void Exchange::on_ready() {
  Records& r = records;
  if (!r.ready) {
    progress();
    if (ctx_.opt.sandbox) {
      const Leftovers leftovers = ctx_.mode.leftovers;
      // NOTES: files a wrapper or the CUDA driver made in /tmp or /dev/shm before the
      // candidate ran (compute-sanitizer, torch, the context) are theirs, not side effects.
      if (leftovers != Leftovers::none || ctx_.backend.runtime_makes_files())
        for (auto& f : sandbox::stray_files(w_.proc)) w_.file_baseline.insert(f);
      if (leftovers == Leftovers::none) look_for_side_effects(-1);
      else if (leftovers == Leftovers::baseline) sandbox::extra_processes(w_.proc, {}, &w_.baseline);
    }
  }
  r.ready = true;
}

void Exchange::on_fault(const Record& rec) {
  Records& r = records;
  if (rec.where == "device") {
    r.device_error = clean_text(rec.text);
  } else if (rec.where == "in" || rec.where == "out") {
    r.fault.known = true;
    r.fault.input = rec.where == "in";
    r.fault.call = rec.call;
    r.fault.arg = rec.arg;
    r.fault.offset = rec.offset;
  }
}

void Exchange::on_done(const Record& rec, Clock::time_point now) {
  Records& r = records;
  const int i = rec.call;
  const bool in_range = i >= 0 && i < static_cast<int>(r.done.size());
  // The worker waits for this after each `done`; sent after the look below. A duplicate
  // (forged) `done` gets one too, so a worker is never left waiting for kcv.
  struct Go {
    int fd; bool send;
    ~Go() { if (send) (void)::send(fd, &proto::kGo, 1, MSG_NOSIGNAL | MSG_DONTWAIT); }
  } go{w_.result_fd, in_range};
  if (!in_range || r.done[static_cast<std::size_t>(i)]) return;
  const auto u = static_cast<std::size_t>(i);
  r.rc[u] = rec.rc;
  r.secs[u] = rec.seconds;
  r.msg[u] = rec.text;
  r.done[u] = true;
  progress();
  look_for_side_effects(i);
  if (auto it = in_grace.find(i); it != in_grace.end()) {
    const double wall = std::chrono::duration<double>(now - it->second).count();
    if (wall > timeout) r.graced[u] = wall;
    in_grace.erase(it);
  }
}

void Exchange::move_deadline(Clock::time_point now) {
  const Records& r = records;
  const int calls = static_cast<int>(r.done.size());
  // NOTES: the worker works on the first call not done yet (prepare, the model at new
  // bindings, the call): from now on, when it is the first at its signature, it has the grace.
  while (next_ < calls && r.done[static_cast<std::size_t>(next_)]) ++next_;
  if (r.ready && next_ < calls && first_at_shape_[static_cast<std::size_t>(next_)]) {
    first_at_shape_[static_cast<std::size_t>(next_)] = false;
    in_grace[next_] = now;
  }
  // No progress for timeout (output is not progress), or the grace of a call still in it.
  deadline_ = progress_deadline_;
  for (const auto& [call, since] : in_grace)
    if (const auto until = since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
        until > deadline_)
      deadline_ = until;
}

void Exchange::look_for_side_effects(int call) {
  Records& r = records;
  if (!ctx_.opt.sandbox) return;
  std::vector<std::string> found;
  if (ctx_.mode.leftovers != Leftovers::any) found = sandbox::extra_processes(w_.proc, w_.baseline);
  std::string what;
  if (!found.empty()) what = listed("process outlived the call: ", found);
  std::vector<std::string> files;
  for (auto& f : sandbox::stray_files(w_.proc))
    if (!w_.file_baseline.count(f)) files.push_back(f);
  if (!files.empty())
    what += listed(std::string(what.empty() ? "" : "; ") + "file written outside the working directory: ", files);
  if (!what.empty() && r.side_effect.empty()) {
    r.side_effect = what;
    r.side_effect_call = call;
  }
}

bool Exchange::pending_empty() const { return pending_.empty(); }

}  // namespace kcv::isolation

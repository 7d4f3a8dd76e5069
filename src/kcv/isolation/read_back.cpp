// Reading back: the worker's log and how it ended, and each case's CaseRun from the raw bytes in
// the data file (snapshots, guard bands, the second snapshot of outputs). Nothing is judged here.
#include "isolation.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kcv/protocol.hpp"
#include "kcv/text.hpp"

namespace proto = kcv::protocol;

namespace kcv::isolation {

namespace {

constexpr std::size_t kMaxLog = 64 * 1024;

std::string signal_text(int sig) {
  const char* name = sigabbrev_np(sig);
  return fmt::format("signal {} (SIG{})", sig, name ? name : "?");
}

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

/// The tensors `ts` of call `spec` as their snapshots hold them, and their guard reports.
void read_tensors(const CallSpec& spec, const std::vector<HostTensor>& ts, const std::vector<Staged>& where,
                  const unsigned char* shm, uint64_t key, std::vector<HostTensor>& out,
                  std::vector<GuardReport>& guards) {
  const int64_t g = proto::kGuardBytes;
  for (std::size_t a = 0; a < ts.size(); ++a) {
    const unsigned char* snap = shm + where[a].snap;
    const auto span = static_cast<int64_t>(ts[a].span_bytes());
    if (spec.large) {  // [guard][guard][samples]: the samples as a 1-D tensor
      guards.push_back(check_guards(snap, snap + g, span, key));
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
    guards.push_back(spec.exact_buffers ? GuardReport{} : check_guards(snap, snap + g + span, span, key));
    out.push_back(std::move(t));
  }
}

/// The outputs of call k again at the end of the case (guards and span): what changed after the
/// call returned was written late. Empty when nothing did.
std::string late_write(const CallSpec& spec, std::size_t k, const std::vector<Staged>& out_at,
                       const unsigned char* shm) {
  for (std::size_t a = 0; a < spec.outputs.size(); ++a) {
    const Staged& st = out_at[a];
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
    return fmt::format("output {} of call {} changed after the call returned ({} bytes differ by the end of "
                       "the case, the first at {}): written late, by a thread or stream the call left running",
                       a, k, differ, where);
  }
  return {};
}

/// Call k of case ci as the worker left it (ran == false: it never said done).
CallResult call_result(const Context& ctx, const Case& cs, std::size_t ci, std::size_t k, const Layout& layout,
                       const Records& r, const unsigned char* shm) {
  const auto g = static_cast<std::size_t>(layout.first_call_of_case[ci]) + k;
  const CallSpec& spec = cs.calls[k];
  CallResult res;
  res.ran = r.done[g];
  if (!res.ran) return res;
  res.rc = r.rc[g];
  res.message = clean_text(r.msg[g]);  // the candidate's own text
  res.seconds = r.secs[g];
  res.compile_grace_seconds = r.graced[g];
  read_tensors(spec, spec.inputs, layout.in_at[ci][k], shm, ctx.opt.canary_key, res.inputs_after, res.input_guards);
  read_tensors(spec, spec.outputs, layout.out_at[ci][k], shm, ctx.opt.canary_key, res.outputs, res.output_guards);
  return res;
}

/// The case whose call left the side effect behind (its call index is global).
int side_effect_case(const Records& r, const Layout& layout) {
  if (r.side_effect.empty()) return -1;
  int side_case = 0;
  for (std::size_t ci = 0; ci < layout.first_call_of_case.size(); ++ci)
    if (r.side_effect_call >= layout.first_call_of_case[ci]) side_case = static_cast<int>(ci);
  return side_case;
}

/// A case some call of which did not finish, or any case after the worker failed past its bye:
/// crash or timeout, with where the fault hit when it hit one of the case's buffers.
void mark_abnormal(CaseRun& run, const Case& cs, int first, const Exchange& ex, const std::string& death,
                   bool failed_late) {
  const Records& r = ex.records;
  run.status = ex.timed_out ? RunStatus::timeout : RunStatus::crash;
  run.out_of_time = ex.timed_out && ex.out_of_time;
  if (r.fault.known && r.fault.call >= first && r.fault.call < first + static_cast<int>(cs.calls.size())) {
    run.fault = r.fault;
    run.fault.call -= first;
  }
  const int in_call = r.current >= first ? r.current - first : -1;
  run.detail = !r.ready ? "worker " + (death.empty() ? std::string("died") : death) + " while loading the candidate"
               : failed_late ? "worker " + death
                             : fmt::format("worker {} in call {} of case '{}'", death.empty() ? "died" : death,
                                           std::max(in_call, 0), cs.label);
}

}  // namespace

Ending finish(Session& w, const Exchange& ex, const WorkerMode& mode) {
  const Records& r = ex.records;
  Ending end;
  // A session worker that finished its batch waits for the next one; anything else ends here.
  end.keep = r.idle && ex.pending_empty() && r.fatal.empty() && r.untrusted_fatal.empty() && r.device_error.empty() &&
             r.side_effect.empty() && mode.session_capable;
  if (!end.keep) {
    // Let a worker that is done exit by itself (valgrind and ASan report at exit), then kill the
    // whole group: nothing the candidate started outlives the batch.
    const double grace_s = ex.timed_out || !r.side_effect.empty() ? 0 : r.bye || r.idle ? 60 : 5;
    end.status = end_worker(w, grace_s, &end.outstayed);
  }
  end.log = read_log(w, end.keep);
  return end;
}

std::string read_log(Session& w, bool keep) {
  std::ifstream in(w.log, std::ios::binary);
  in.seekg(w.log_offset);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string log = ss.str();
  if (keep) w.log_offset += static_cast<int64_t>(log.size());
  if (log.size() > kMaxLog) log = "[...]\n" + log.substr(log.size() - kMaxLog);
  // The candidate writes this log: valid UTF-8 without control characters from here on.
  return clean_text(log, /*keep_newlines=*/true);
}

std::string worker_death(const Context& ctx, const Session& w, const Exchange& ex, const Ending& end,
                         bool* grace_spent) {
  const Records& r = ex.records;
  const int status = end.status;
  // A session worker's exit after `idle` is normal: judge it as after `bye`.
  const bool bye = r.bye || (r.idle && !end.keep);
  const bool idle = r.idle;
  bool unsent_sigkill =
      !ex.timed_out && !end.outstayed && killed_by_sigkill(status, ctx.mode.sanitizer.exit_is_signal, end.log);
  // NOTES: a SIGKILL kcv did not send is the host's out-of-memory killer only if the host counted
  // an OOM kill meanwhile (/proc/vmstat oom_kill); otherwise it came from inside the sandbox
  // (the candidate's kill(0, SIGKILL)), and is named so.
  bool self_sigkill = false;
  if (unsent_sigkill) {
    self_sigkill = !oom_kill_possible(w.oom_kills_at_start, sandbox::host_oom_kills());
    unsent_sigkill = !self_sigkill;
  }
  // A hang through a compile grace spends it for the rest of this runner (RunnerOptions).
  const bool hung_in_grace = ex.timed_out && !ex.out_of_time && !ex.in_grace.empty();
  const std::string no_grace = r.ready && *grace_spent && ex.grace > ex.timeout
                                   ? " (no compile grace: an earlier first call at its shape hung through it)" : "";
  *grace_spent = *grace_spent || hung_in_grace;
  const std::string& log = end.log;
  if (!r.device_error.empty()) return "hit a device error: " + r.device_error;
  if (ex.timed_out && ex.out_of_time)
    return fmt::format("was stopped: the overall limit (--max-time {:g} s) ran out", ctx.opt.max_time_s);
  if (hung_in_grace)
    return fmt::format("no progress for {:g} s (the compile grace of a first call at its shape; the per-call timeout "
                       "is {:g} s)", ex.grace, ex.timeout);
  if (ex.timed_out) return fmt::format("no progress for {:g} s{}", r.ready ? ex.timeout : ex.load_timeout, no_grace);
  if (end.keep) return {};
  if (!r.untrusted_fatal.empty())
    return fmt::format("reported a fatal error from inside the candidate's process (not trusted as a setup error): {}",
                       r.untrusted_fatal.substr(0, 300));
  if (self_sigkill && !bye)
    return fmt::format("killed by {} from inside its sandbox before finishing (kcv did not send it, and the host's "
                       "out-of-memory kill count did not change){}", signal_text(SIGKILL), last_words(log));
  if (unsent_sigkill && !bye) return fmt::format("killed by {} before finishing{}", kUnsentSigkill, last_words(log));
  if (WIFSIGNALED(status) && !bye) return "killed by " + signal_text(WTERMSIG(status));
  if (WIFEXITED(status) && !bye)
    return fmt::format("exited with status {} before finishing{}", WEXITSTATUS(status), last_words(log));
  if (unsent_sigkill && !idle) return fmt::format("killed by {} after its calls{}", kUnsentSigkill, last_words(log));
  if (bye && WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return fmt::format("exited with status {} after its calls{}", WEXITSTATUS(status), last_words(log));
  if (bye && WIFSIGNALED(status) && !idle) return "killed by " + signal_text(WTERMSIG(status)) + " after its calls";
  return {};
}

std::vector<CaseRun> case_runs(const Context& ctx, const std::vector<const Case*>& batch, const Layout& layout,
                               const Exchange& ex, const DataFile& data, const Ending& end) {
  const Records& r = ex.records;
  const int side_case = side_effect_case(r, layout);
  // After the worker said bye, a bad exit status (sanitizer reports) marks every case of the batch.
  const bool bye = r.bye || (r.idle && !end.keep);
  const bool failed_late = bye && !end.death.empty();
  std::vector<CaseRun> runs;
  for (std::size_t ci = 0; ci < batch.size(); ++ci) {
    const Case& cs = *batch[ci];
    const int first = layout.first_call_of_case[ci];
    CaseRun run;
    run.log = end.log;
    run.placement = layout.placement[ci];
    bool all_done = true;
    std::string late;  // an output that changed after its call returned
    for (std::size_t k = 0; k < cs.calls.size(); ++k) {
      run.calls.push_back(call_result(ctx, cs, ci, k, layout, r, data.map()));
      all_done = all_done && run.calls.back().ran;
      const auto g = static_cast<std::size_t>(first) + k;
      if (run.calls.back().ran && r.recheck_seen[g] && late.empty())
        late = late_write(cs.calls[k], k, layout.out_at[ci][k], data.map());
    }
    if (static_cast<int>(ci) == side_case) {
      run.status = RunStatus::side_effect;
      run.detail = r.side_effect_call < 0
                       ? "while the candidate loaded: " + r.side_effect
                       : fmt::format("call {} of case '{}': {}", r.side_effect_call - first, cs.label, r.side_effect);
      runs.push_back(std::move(run));
      break;
    }
    // A case is abnormal when any of its calls did not finish.
    if (!all_done || failed_late) {
      mark_abnormal(run, cs, first, ex, end.death, failed_late);
      runs.push_back(std::move(run));
      if (!failed_late) break;
      continue;
    }
    if (!late.empty()) {
      run.status = RunStatus::side_effect;
      run.detail = fmt::format("case '{}': {}", cs.label, late);
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace kcv::isolation

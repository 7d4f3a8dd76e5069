// Honest timing of a KernelBench candidate that passed its gates (issue 22 item 2, docs/timing.md):
// the candidate's ModelNew and the problem's Model timed the same way in sandboxed torch workers
// (adapters/torch/kcv_torch_timing.py), the statistics and speedups computed here from the raw
// samples. Never in kcv's process: the worker sends samples, not a verdict.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/engine.hpp"
#include "kcv/kernelbench.hpp"
#include "kcv/runner.hpp"
#include "kcv/text.hpp"

using nlohmann::json;

namespace kcv {

namespace {

/// The timing call's one output: JSON text, NUL-padded (kcv_torch_timing.encode).
constexpr int64_t kSlotBytes = int64_t(1) << 20;

/// The samples of one model, checked: finite, non-negative, as many as asked.
std::vector<double> samples(const json& model, const char* key, int reps, const std::string& who) {
  if (!model.contains(key) || !model[key].is_array()) throw SetupError(fmt::format("{}: no {} samples", who, key));
  std::vector<double> v;
  for (const auto& x : model[key]) {
    if (!x.is_number()) throw SetupError(fmt::format("{}: a {} sample is not a number", who, key));
    const double d = x.get<double>();
    if (!std::isfinite(d) || d < 0) throw SetupError(fmt::format("{}: a {} sample is {}", who, key, d));
    v.push_back(d);
  }
  if (static_cast<int>(v.size()) != reps)
    throw SetupError(fmt::format("{}: {} {} samples, {} asked", who, v.size(), key, reps));
  return v;
}

/// One role's job in a worker of its own; its result JSON, or a SetupError saying why not.
json run_role(const KernelBenchContract& k, const Candidate& candidate, RunnerOptions ro, const char* role,
              const TimingOptions& t) {
  ro.kernelbench = k.worker_plan();
  ro.kernelbench["timing"] = {{"role", role}, {"reps", t.reps}, {"warmup", t.warmup}, {"seed", t.seed}};
  // NOTES: one call runs the whole job: every repetition (warm-up included) of every model of the
  // role gets a call's timeout; the reference's torch.compile its compile grace on top.
  const int models = std::string(role) == "reference" ? 2 : 1;
  const double budget = t.call_timeout_s * (t.reps + t.warmup) * models + 30;
  ro.timeout_s = budget;
  ro.compile_grace_s = budget + (models == 2 ? kDefaultCompileGrace : 0);
  Runner runner(candidate, ro);
  Case c;
  c.label = std::string("timing ") + role;
  CallSpec call;
  call.outputs.push_back(HostTensor::zeros(DType::u8, {kSlotBytes}));
  c.calls.push_back(std::move(call));
  const std::vector<CaseRun> runs = runner.run({c});
  const std::string who = std::string("the ") + role + " timing worker";
  if (runs.empty()) throw SetupError(who + " did not run");
  const CaseRun& r = runs[0];
  if (r.status != RunStatus::ok)
    throw SetupError(fmt::format("{} {}: {}", who,
                                 r.status == RunStatus::timeout ? "timed out" : r.status == RunStatus::crash ? "crashed" : "left something behind",
                                 clean_text(r.detail)));
  if (r.calls.empty() || !r.calls[0].ran || r.calls[0].outputs.empty()) throw SetupError(who + " returned nothing");
  if (r.calls[0].rc != 0) throw SetupError(fmt::format("{}: {}", who, clean_text(r.calls[0].message)));
  const auto& bytes = r.calls[0].outputs[0].storage;
  std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  text.resize(std::strlen(text.c_str()));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw SetupError(who + " sent a result that is not JSON");
  if (j.contains("error")) throw SetupError(fmt::format("{}: {}", who, clean_text(j["error"].dump())));
  return j;
}

/// A model's statistics: the device-synchronized times, and the median time to return.
json model_stats(const json& result, const char* name, int reps, const std::string& who) {
  const json& m = result["models"][name];
  if (m.contains("error"))
    throw SetupError(fmt::format("{} was not timed: {}", who, clean_text(m["error"].get<std::string>())));
  json s = timing_stats(samples(m, "device_ms", reps, who));
  s["returned_median_ms"] = timing_stats(samples(m, "returned_ms", reps, who))["median_ms"];
  return s;
}

}  // namespace

double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}


json timing_not_run(const std::string& reason) { return {{"timed", false}, {"reason", reason}}; }

json timing_stats(std::vector<double> v) {
  if (v.empty()) return json::object();
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {{"median_ms", quantile(v, 0.5)}, {"min_ms", v.front()}, {"p10_ms", quantile(v, 0.1)},
          {"p90_ms", quantile(v, 0.9)},    {"max_ms", v.back()},   {"mean_ms", sum / static_cast<double>(v.size())},
          {"reps", static_cast<int64_t>(v.size())}};
}

json kernelbench_timing(const KernelBenchContract& k, const Candidate& candidate, const RunnerOptions& base,
                        const TimingOptions& t) {
  if (t.reps < kMinTimingReps || t.reps > kMaxTimingReps)
    throw SetupError(fmt::format("timing repetitions must be {}..{}, not {}", kMinTimingReps, kMaxTimingReps, t.reps));
  json ref, cand;
  try {
    // NOTES: the reference first, in a worker that never imports the solution (a solution could
    // otherwise patch torch to slow the Model down); then the candidate, alone on the device.
    ref = run_role(k, candidate, base, "reference", t);
    cand = run_role(k, candidate, base, "candidate", t);
  } catch (const SetupError& e) {
    return timing_not_run(e.what());
  }
  json out = {{"timed", true}, {"reps", t.reps}, {"warmup", t.warmup}, {"seed", std::to_string(t.seed)},
              {"sizes", "the problem's own (its module sizes, get_inputs())"}};
  try {
    out["candidate"] = model_stats(cand, "candidate", t.reps, "the candidate");
    out["reference_eager"] = model_stats(ref, "eager", t.reps, "the reference Model");
    const json compiled = ref.value("compiled", json::object());
    out["compiled"] = {{"ok", compiled.value("ok", false)}, {"reason", clean_text(compiled.value("reason", std::string()))}};
    out["reference_compiled"] = compiled.value("ok", false)
                                    ? model_stats(ref, "compiled", t.reps, "the torch.compile'd reference")
                                    : json(nullptr);
  } catch (const SetupError& e) {
    return timing_not_run(e.what());
  }
  const double c = out["candidate"]["median_ms"].get<double>();
  auto ratio = [&](const json& num) -> json {
    return c > 0 ? json(num.get<double>() / c) : json(nullptr);
  };
  out["speedup"] = ratio(out["reference_eager"]["median_ms"]);
  out["speedup_vs_compiled"] =
      out["reference_compiled"].is_null() ? json(nullptr) : ratio(out["reference_compiled"]["median_ms"]);
  // NOTES: what a timer that stops at the call's return (cpu) or on the caller's stream (cuda
  // events, KernelBench's way) would have claimed; not the speedup. Far above "speedup", it says
  // the candidate's work runs past its return: other streams, threads of its own.
  const double cr = out["candidate"]["returned_median_ms"].get<double>();
  out["returned_speedup"] = cr > 0 ? json(out["reference_eager"]["returned_median_ms"].get<double>() / cr) : json(nullptr);
  // The worker's words, checked as text: the device and its clock, how inputs were drawn.
  out["device"] = json::object();
  const json device = cand.value("device", json::object());
  for (const auto& [key, value] : device.items())
    out["device"][clean_text(key)] = value.is_string() ? json(clean_text(value.get<std::string>())) : value.is_number() ? value : json(nullptr);
  out["inputs"] = clean_text(cand.value("inputs", std::string()));
  out["flush_bytes"] = cand.value("flush_bytes", int64_t{0});
  return out;
}

}  // namespace kcv

// The report's KernelBench section (kcv/kernelbench_door.hpp): its JSON, as kcv.report/1 has had
// it, and the lines kcv verify prints of it.
#include <array>
#include <utility>

#include <fmt/format.h>

#include "kcv/kernelbench_door.hpp"

namespace kcv {
namespace {

nlohmann::json bound_json(const KernelBenchBound& b) {
  nlohmann::json j = {{"mode", b.mode}};
  if (b.mode != "derived") {
    if (!b.detail.empty()) j["detail"] = b.detail;
    return j;
  }
  j["references"] = b.references;
  j["outputs"] = nlohmann::json::array();
  for (const KernelBenchBoundOutput& o : b.outputs)
    j["outputs"].push_back({{"output", o.output}, {"judged_by", o.judged_by}, {"elements", o.elements},
                            {"derived", o.derived}, {"calibrated", o.calibrated}, {"free", o.free},
                            {"eager_over", o.eager_over}});
  j["unruled"] = b.unruled;
  return j;
}

KernelBenchBound bound_from(const nlohmann::json& j) {
  KernelBenchBound b;
  b.mode = j.value("mode", std::string());
  b.detail = j.value("detail", std::string());
  b.references = j.value("references", int64_t{0});
  if (j.contains("outputs") && j["outputs"].is_array())
    for (const auto& o : j["outputs"]) {
      if (!o.is_object()) continue;
      b.outputs.push_back({o.value("output", std::string()), o.value("judged_by", std::string()),
                           o.value("elements", int64_t{0}), o.value("derived", int64_t{0}),
                           o.value("calibrated", int64_t{0}), o.value("free", int64_t{0}),
                           o.value("eager_over", int64_t{0})});
    }
  if (j.contains("unruled") && j["unruled"].is_array())
    for (const auto& op : j["unruled"])
      if (op.is_string()) b.unruled.push_back(op.get<std::string>());
  return b;
}

/// The diagnostic parts, kept as JSON, by their keys (to_json and from_json both walk this list).
template <class Section>
auto diagnostics(Section& r) {
  using Part = decltype(&r.pool);
  return std::array<std::pair<const char*, Part>, 4>{{{"standby_workers", &r.standby_workers},
                                                      {"pool", &r.pool},
                                                      {"reference_cache", &r.reference_cache},
                                                      {"build_cache", &r.build_cache}}};
}

}  // namespace

void to_json(nlohmann::json& j, const KernelBenchReport& r) {
  j = {{"problem", r.problem}, {"solution", r.solution}, {"python", r.python},
       {"compile_seconds", r.compile_seconds}, {"fresh_model", r.fresh_model}};
  if (!r.reduced_sizes.empty()) j["reduced_sizes"] = r.reduced_sizes;
  if (!r.input_structure.empty()) j["input_structure"] = r.input_structure;
  if (r.baseline) {
    const KernelBenchBaseline& b = *r.baseline;
    j["baseline"] = {{"verdict", b.verdict}, {"detail", b.detail}, {"trials", b.trials}, {"atol", b.atol},
                     {"rtol", b.rtol}, {"max_abs_diff", b.max_abs_diff}};
  }
  if (r.bound) j["bound"] = bound_json(*r.bound);
  for (const auto& [key, value] : diagnostics(r))
    if (!value->is_null()) j[key] = *value;
}

void from_json(const nlohmann::json& j, KernelBenchReport& r) {
  r = KernelBenchReport{};
  if (!j.is_object()) return;
  r.problem = j.value("problem", std::string());
  r.solution = j.value("solution", std::string());
  r.python = j.value("python", std::string());
  r.compile_seconds = j.value("compile_seconds", 0.0);
  r.fresh_model = j.value("fresh_model", false);
  r.reduced_sizes = j.value("reduced_sizes", std::string());
  r.input_structure = j.value("input_structure", std::string());
  if (j.contains("baseline") && j["baseline"].is_object()) {
    const nlohmann::json& b = j["baseline"];
    r.baseline = KernelBenchBaseline{b.value("verdict", std::string()), b.value("detail", std::string()),
                                     b.value("trials", 5), b.value("atol", 1e-2), b.value("rtol", 1e-2),
                                     b.value("max_abs_diff", 0.0)};
  }
  if (j.contains("bound") && j["bound"].is_object()) r.bound = bound_from(j["bound"]);
  for (const auto& [key, value] : diagnostics(r))
    if (j.contains(key)) *value = j[key];
}

std::vector<std::string> kernelbench_summary_lines(const KernelBenchReport& r) {
  std::vector<std::string> lines;
  if (!r.reduced_sizes.empty()) lines.push_back("kernelbench sizes: " + r.reduced_sizes);
  if (!r.input_structure.empty())
    lines.push_back("kernelbench inputs: " + r.input_structure + " in every case, as get_inputs() makes them");
  if (r.bound) {
    // Which bound judged which output (docs/kernelbench.md, "The error bound, derived").
    std::string line = "kernelbench bound: " + (r.bound->mode.empty() ? std::string("?") : r.bound->mode);
    for (const KernelBenchBoundOutput& o : r.bound->outputs)
      line += fmt::format("; {} {} ({} derived, {} calibrated, {} free in class)", o.output, o.judged_by, o.derived,
                          o.calibrated, o.free);
    if (!r.bound->unruled.empty()) {
      line += "; ops without a rule (calibrated floor):";
      for (const std::string& op : r.bound->unruled) line += " " + op;
    }
    lines.push_back(line);
  }
  if (r.baseline)
    lines.push_back(fmt::format("kernelbench baseline (5 trials, allclose atol=rtol=1e-2): {}{}{}",
                                r.baseline->verdict.empty() ? "?" : r.baseline->verdict,
                                r.baseline->detail.empty() ? "" : ": ", r.baseline->detail));
  return lines;
}

}  // namespace kcv

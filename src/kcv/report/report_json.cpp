// kcv.report/1: op, candidate, backend, seed, verdict, and all 12 gates in DESIGN order.
#include <cmath>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/report.hpp"

namespace kcv {

Verdict parse_verdict(const std::string& s) {
  for (Verdict v : {Verdict::pass, Verdict::fail, Verdict::crash, Verdict::timeout, Verdict::refused, Verdict::skipped})
    if (s == verdict_name(v)) return v;
  throw SetupError(fmt::format("unknown verdict '{}' in report", s));
}

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json gates = nlohmann::json::array();
  for (const auto& g : r.gates) {
    gates.push_back({{"id", g.id}, {"verdict", verdict_name(g.verdict)}, {"tolerance_independent", g.tolerance_independent},
                     {"cases", g.cases}, {"seconds", g.seconds}, {"evidence", g.evidence},
                     // NOTES: seeds are 64-bit; JSON readers that use doubles lose bits, so a string.
                     {"seed", std::to_string(g.seed)}, {"failing_case", g.failing_case}});
    // NOTES: JSON has no Inf: a worst element with an infinite or NaN ratio is left out.
    if (g.worst && std::isfinite(g.worst->error) && std::isfinite(g.worst->bound))
      gates.back()["worst"] = {{"error", g.worst->error}, {"bound", g.worst->bound}};
    // NOTES: written only when set, so reports without it read the same as before.
    if (g.out_of_memory) gates.back()["out_of_memory"] = true;
  }
  nlohmann::json j = {{"schema", r.schema}, {"op", r.op}, {"candidate", r.candidate}, {"backend", r.backend},
                      {"seed", std::to_string(r.seed)}, {"verdict", verdict_name(r.verdict)}, {"gates", gates}};
  if (!r.kernelbench.is_null()) j["kernelbench"] = r.kernelbench;
  if (!r.sandbox.is_null()) j["sandbox"] = r.sandbox;
  if (!r.pass_withheld.empty()) j["pass_withheld"] = r.pass_withheld;
  return j;
}

Report report_from_json(const nlohmann::json& j) {
  try {
    if (j.at("schema").get<std::string>() != "kcv.report/1") throw SetupError("not a kcv.report/1 document");
    Report r;
    r.op = j.at("op").get<std::string>();
    r.candidate = j.at("candidate").get<std::string>();
    r.backend = j.at("backend").get<std::string>();
    r.seed = std::stoull(j.at("seed").get<std::string>());
    r.verdict = parse_verdict(j.at("verdict").get<std::string>());
    if (j.contains("kernelbench")) r.kernelbench = j["kernelbench"];
    if (j.contains("sandbox")) r.sandbox = j["sandbox"];
    r.pass_withheld = j.value("pass_withheld", std::string());
    for (const auto& g : j.at("gates")) {
      GateReport gr;
      gr.id = g.at("id").get<std::string>();
      gr.verdict = parse_verdict(g.at("verdict").get<std::string>());
      gr.tolerance_independent = g.at("tolerance_independent").get<bool>();
      gr.cases = g.at("cases").get<int64_t>();
      gr.seconds = g.at("seconds").get<double>();
      gr.evidence = g.at("evidence").get<std::string>();
      gr.seed = std::stoull(g.at("seed").get<std::string>());
      gr.failing_case = g.value("failing_case", int64_t{-1});
      gr.out_of_memory = g.value("out_of_memory", false);
      if (g.contains("worst")) gr.worst = WorstElement{g["worst"].at("error").get<double>(), g["worst"].at("bound").get<double>()};
      r.gates.push_back(std::move(gr));
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw SetupError(fmt::format("malformed kcv report: {}", e.what()));
  } catch (const std::invalid_argument&) {
    throw SetupError("malformed kcv report: a seed is not a number");
  } catch (const std::out_of_range&) {
    throw SetupError("malformed kcv report: a seed is out of range");
  }
}

}  // namespace kcv

// kcv.report/1: op, candidate, backend, seed, verdict, and all 12 gates in DESIGN order.
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/provenance.hpp"
#include "kcv/report.hpp"
#include "kcv/text.hpp"

namespace kcv {

Verdict parse_verdict(const std::string& s) {
  for (Verdict v : {Verdict::pass, Verdict::fail, Verdict::crash, Verdict::timeout, Verdict::refused, Verdict::skipped})
    if (s == verdict_name(v)) return v;
  throw SetupError(fmt::format("unknown verdict '{}' in report", s));
}

namespace {

/// Every string of j (keys too) as clean_text makes it: what a candidate wrote reaches the report
/// as valid UTF-8 without control characters (issue 21 item 6).
nlohmann::json cleaned(const nlohmann::json& j) {
  if (j.is_string()) return clean_text(j.get_ref<const std::string&>());
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : j) out.push_back(cleaned(x));
    return out;
  }
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [k, v] : j.items()) out[clean_text(k)] = cleaned(v);
    return out;
  }
  return j;
}

}  // namespace

nlohmann::json report_to_json(const Report& r) {
  nlohmann::json gates = nlohmann::json::array();
  for (const auto& g : r.gates) {
    gates.push_back({{"id", g.id}, {"verdict", verdict_name(g.verdict)}, {"tolerance_independent", g.tolerance_independent},
                     {"cases", g.cases}, {"seconds", g.seconds}, {"evidence", g.evidence},
                     // NOTES: seeds are 64-bit; JSON readers that use doubles lose bits, so a string.
                     {"seed", std::to_string(g.seed)}, {"failing_case", g.failing_case}});
    nlohmann::json failing = nlohmann::json::array();
    for (const FailingCase& f : g.failing)
      failing.push_back({{"case", f.index}, {"label", f.label}, {"verdict", verdict_name(f.verdict)},
                         {"convention", f.library_convention ? "library" : "own"}});
    gates.back()["failing_cases"] = std::move(failing);
    // Issue 21 item 4: on a gate that did not pass, whether it failed in the problem's own calling
    // convention or only as a library op is called (engine.hpp, fails_own_convention).
    if (g.verdict != Verdict::pass && g.verdict != Verdict::skipped)
      gates.back()["convention"] = g.fails_own_convention() ? "own" : "library";
    // NOTES: JSON has no Inf: a worst element with an infinite or NaN ratio is left out.
    if (g.worst && std::isfinite(g.worst->error) && std::isfinite(g.worst->bound))
      gates.back()["worst"] = {{"error", g.worst->error}, {"bound", g.worst->bound}};
    // NOTES: written only when set, so reports without it read the same as before.
    if (g.out_of_memory) gates.back()["out_of_memory"] = true;
    if (g.stopped_at_max_time) gates.back()["stopped_at_max_time"] = true;
    if (g.compile_grace_calls > 0) gates.back()["compile_grace_calls"] = g.compile_grace_calls;
    gates.back()["seconds_by_part"] = {{"make", g.make_seconds}, {"calls", g.calls_seconds},
                                       {"reference", g.reference_seconds}, {"judging", g.judging_seconds}};
  }
  nlohmann::json j = {{"schema", r.schema}, {"op", r.op}, {"candidate", r.candidate}, {"backend", r.backend},
                      {"seed", std::to_string(r.seed)}, {"verdict", verdict_name(r.verdict)}, {"gates", gates}};
  if (r.kernelbench) j["kernelbench"] = *r.kernelbench;
  if (!r.sandbox.is_null()) j["sandbox"] = r.sandbox;
  if (!r.timing.is_null()) j["timing"] = r.timing;
  if (!r.pass_withheld.empty()) j["pass_withheld"] = r.pass_withheld;
  if (!r.provenance.is_null()) j["provenance"] = r.provenance;
  // Issue 22: the candidate's time split, over its gates (and its KernelBench build): wall seconds
  // of kcv's thread that ran each part (part_clock.hpp).
  nlohmann::json parts = {{"make", 0.0}, {"calls", 0.0}, {"reference", 0.0}, {"judging", 0.0}};
  for (const auto& g : r.gates) {
    parts["make"] = parts["make"].get<double>() + g.make_seconds;
    parts["calls"] = parts["calls"].get<double>() + g.calls_seconds;
    parts["reference"] = parts["reference"].get<double>() + g.reference_seconds;
    parts["judging"] = parts["judging"].get<double>() + g.judging_seconds;
  }
  if (r.kernelbench) parts["build"] = r.kernelbench->compile_seconds;
  j["seconds_by_part"] = parts;
  return cleaned(j);
}

nlohmann::json error_report_json(const std::string& op, const std::string& candidate, const std::string& backend,
                                 std::optional<uint64_t> seed, const std::string& error) {
  nlohmann::json j = {{"schema", "kcv.report/1"}, {"op", op}, {"candidate", candidate}, {"backend", backend},
                      {"seed", seed ? nlohmann::json(std::to_string(*seed)) : nlohmann::json(nullptr)},
                      {"verdict", kErrorVerdict}, {"error", error}, {"gates", nlohmann::json::array()}};
  j["provenance"] = machine_provenance(backend);
  std::error_code ec;
  if (!candidate.empty() && std::filesystem::is_regular_file(candidate, ec)) {
    j["provenance"]["candidate_path"] = std::filesystem::absolute(candidate).lexically_normal().string();
    try {
      j["provenance"]["candidate_sha256"] = sha256_file(candidate);
    } catch (const SetupError&) {
      // unreadable: the error says why already; the record goes out without the hash
    }
  }
  return cleaned(j);
}

Report report_from_json(const nlohmann::json& j) {
  try {
    if (j.at("schema").get<std::string>() != "kcv.report/1") throw SetupError("not a kcv.report/1 document");
    if (j.value("verdict", std::string()) == kErrorVerdict)
      throw SetupError(fmt::format("the report records a setup error, not a verification: {}",
                                   j.value("error", std::string("?"))));
    Report r;
    r.op = j.at("op").get<std::string>();
    r.candidate = j.at("candidate").get<std::string>();
    r.backend = j.at("backend").get<std::string>();
    r.seed = std::stoull(j.at("seed").get<std::string>());
    r.verdict = parse_verdict(j.at("verdict").get<std::string>());
    if (j.contains("kernelbench") && j["kernelbench"].is_object()) r.kernelbench = j["kernelbench"].get<KernelBenchReport>();
    if (j.contains("sandbox")) r.sandbox = j["sandbox"];
    if (j.contains("timing")) r.timing = j["timing"];
    r.pass_withheld = j.value("pass_withheld", std::string());
    if (j.contains("provenance") && j["provenance"].is_object()) r.provenance = j["provenance"];
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
      gr.stopped_at_max_time = g.value("stopped_at_max_time", false);
      if (g.contains("failing_cases"))
        for (const auto& f : g["failing_cases"])
          gr.failing.push_back({f.at("case").get<int64_t>(), f.at("label").get<std::string>(),
                                parse_verdict(f.at("verdict").get<std::string>()),
                                f.value("convention", std::string()) == "library"});
      gr.compile_grace_calls = g.value("compile_grace_calls", int64_t{0});
      if (g.contains("seconds_by_part") && g["seconds_by_part"].is_object()) {
        const auto& p = g["seconds_by_part"];
        gr.make_seconds = p.value("make", 0.0);
        gr.calls_seconds = p.value("calls", 0.0);
        gr.reference_seconds = p.value("reference", 0.0);
        gr.judging_seconds = p.value("judging", 0.0);
      }
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

// kcv — the command line over the kcv library. The only place that prints and picks exit codes:
// 0 every gate passed, 1 some gate did not, 2 usage or setup error (one-line reason on stderr).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kcv/build_config.hpp"
#include "kcv/candidate.hpp"
#include "kcv/contract.hpp"
#include "kcv/corpus.hpp"
#include "kcv/engine.hpp"
#include "kcv/kernelbench_session.hpp"
#include "kcv/provenance.hpp"
#include "kcv/report.hpp"
#include "kcv/runner.hpp"
#include "kcv/text.hpp"
#include "kcv/verify_report.hpp"

#include "corpus_commands.hpp"
#include "environment.hpp"

namespace fs = std::filesystem;

namespace {

using kcv::kExitFail, kcv::kExitPass, kcv::kExitSetup;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

/// The report's timing section in a few lines (docs/timing.md).
std::string timing_text(const nlohmann::json& t) {
  if (!t.value("timed", false)) return "timing: " + kcv::clean_text(t.value("reason", std::string("not timed"))) + "\n";
  auto row = [](const char* name, const nlohmann::json& m) {
    if (m.is_null()) return std::string();
    return fmt::format("  {:<18} median {:>10.4f} ms  min {:.4f}  p10 {:.4f}  p90 {:.4f}  max {:.4f}  (returned: {:.4f})\n",
                       name, m["median_ms"].get<double>(), m["min_ms"].get<double>(), m["p10_ms"].get<double>(),
                       m["p90_ms"].get<double>(), m["max_ms"].get<double>(), m["returned_median_ms"].get<double>());
  };
  auto num = [](const nlohmann::json& v) { return v.is_number() ? fmt::format("{:.3f}x", v.get<double>()) : std::string("-"); };
  const auto& d = t["device"];
  std::string clock;
  if (d.contains("sm_clock_mhz") && d["sm_clock_mhz"].is_number())
    clock = fmt::format(", SM clock {} MHz", d["sm_clock_mhz"].get<double>());
  std::string out = fmt::format("timing: {} reps after {} warm-up on {} ({}; {}{})\n", t["reps"].get<int64_t>(),
                                t["warmup"].get<int64_t>(), d.value("name", std::string("?")), d.value("clock", std::string("?")),
                                d.value("sync", std::string("?")), clock);
  out += row("candidate", t["candidate"]) + row("reference eager", t["reference_eager"]) +
         row("reference compiled", t["reference_compiled"]);
  if (!t["compiled"].value("ok", false))
    out += "  torch.compile(Model): does not compile: " + t["compiled"].value("reason", std::string()) + "\n";
  out += fmt::format("  speedup {} (vs torch.compile {}); timed to the return alone it would read {}\n", num(t["speedup"]),
                     num(t["speedup_vs_compiled"]), num(t["returned_speedup"]));
  return out;
}

/// A verification's setup error (verify_to_report_files has written its record): one line on stderr
/// (two when the record could not be written either), exit 2.
int setup_exit(const kcv::VerifyReportOutcome& outcome) {
  std::cerr << kcv::setup_error_text(outcome);
  return kExitSetup;
}

int cmd_verify(const kcv::VerifyOptions& opts, const std::string& json_out, const std::string& junit_out, bool quiet,
               bool time_verb = false) {
  // NOTES: with a report on standard output, the table and the verdict line go to stderr.
  const bool report_on_stdout = json_out == "-" || junit_out == "-";
  std::ostream& human = report_on_stdout ? std::cerr : std::cout;
  const bool color = isatty(report_on_stdout ? 2 : 1);
  bool header = false;
  const kcv::VerifyReportOutcome outcome =
      kcv::verify_to_report_files(opts, {json_out, junit_out}, [&](const kcv::GateReport& g) {
        if (quiet) return;
        if (!header) {  // printed once the candidate built and loaded: setup errors stay one line
          if (!opts.kernelbench.given())
            human << fmt::format("kcv verify: op {} candidate {} backend {}\n", opts.op, opts.candidate, opts.backend);
          else
            human << fmt::format("kcv verify: kernelbench problem {} solution {} backend {}\n",
                                 opts.kernelbench.problem, opts.kernelbench.solution, opts.backend);
          human << fmt::format("  {:<14} {:<8} {:>6} {:>9}  {}\n", "gate", "verdict", "cases", "time", "evidence");
          header = true;
        }
        human << kcv::table_row(g, color) << "\n" << std::flush;
      });
  if (!outcome.report) return setup_exit(outcome);
  const kcv::Report& report = *outcome.report;
  int failed = 0;
  for (const auto& g : report.gates) failed += g.verdict != kcv::Verdict::pass && g.evidence != "not selected (--gates)";
  if (report.kernelbench)
    for (const std::string& line : kcv::kernelbench_summary_lines(*report.kernelbench)) human << line << "\n";
  if (!report.sandbox.is_null()) human << kcv::clean_text(report.sandbox.value("summary", std::string())) << "\n";
  if (!report.pass_withheld.empty()) human << "PASS withheld: " << kcv::clean_text(report.pass_withheld) << "\n";
  // Issue 21 item 4: which failures a caller meets in the problem's own calling convention, and
  // which only as a library op (strided views, its non-default stream, two callers at once).
  std::string own, library;
  for (const auto& g : report.gates) {
    if (g.verdict == kcv::Verdict::pass || g.verdict == kcv::Verdict::skipped) continue;
    std::string& list = g.fails_own_convention() ? own : library;
    list += (list.empty() ? "" : ", ") + g.id;
  }
  if (!own.empty() || !library.empty())
    human << fmt::format("fails in the problem's own calling convention: {}; only as a library op: {}\n",
                         own.empty() ? "none" : own, library.empty() ? "none" : library);
  human << fmt::format("verdict: {} ({} of {} gates not passed) seed {}\n", kcv::verdict_name(report.verdict), failed,
                           report.gates.size(), report.seed);
  if (!report.timing.is_null()) human << timing_text(report.timing) << std::flush;
  // `kcv time`: 0 only when the candidate was timed.
  if (time_verb) return report.timing.value("timed", false) ? kExitPass : kExitFail;
  return outcome.exit_code;
}

int cmd_contracts(const std::string& show) {
  if (show.empty()) {
    for (const auto& c : kcv::builtin_contracts()) std::cout << fmt::format("{:<16} {}\n", c->name, c->summary);
    return kExitPass;
  }
  const kcv::Contract* c = kcv::find_contract(show);
  if (!c) throw kcv::SetupError(fmt::format("unknown op '{}' (`kcv contracts` lists the ops)", show));
  auto dims = [](const std::vector<std::string>& d) {
    std::string s = "[";
    for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + d[i];
    return s + "]";
  };
  auto domain = [](kcv::Domain d) {
    switch (d) {
      case kcv::Domain::real: return "";
      case kcv::Domain::nonpositive: return "  (values <= 0)";
      case kcv::Domain::positive: return "  (values > 0)";
      case kcv::Domain::structural: return "  (structural)";
    }
    return "";
  };
  std::cout << fmt::format("{}: {}\n", c->name, c->summary);
  std::cout << "inputs (ABI order):\n";
  for (std::size_t i = 0; i < c->inputs.size(); ++i)
    std::cout << fmt::format("  {} {:<10} {:<5} {}{}\n", i, c->inputs[i].name, kcv::dtype_name(c->inputs[i].dtype),
                             dims(c->inputs[i].dims), domain(c->inputs[i].domain));
  std::cout << "outputs (ABI order):\n";
  for (std::size_t i = 0; i < c->outputs.size(); ++i)
    std::cout << fmt::format("  {} {:<10} {:<5} {}\n", i, c->outputs[i].name, kcv::dtype_name(c->outputs[i].dtype),
                             dims(c->outputs[i].dims));
  std::cout << "scalars (ABI order):" << (c->scalars.empty() ? " none\n" : "\n");
  const kcv::Bindings nominal = c->nominal();
  for (std::size_t i = 0; i < c->scalars.size(); ++i)
    std::cout << fmt::format("  {} {:<10} f64   {} (nominal {:.6g})\n", i, c->scalars[i].name, c->scalars[i].meaning,
                             c->scalars[i].value(nominal));
  std::cout << "shape symbols:\n";
  for (const auto& s : c->symbols)
    std::cout << fmt::format("  {:<4} range [{}, {}]  nominal {}  swept up to {}\n", s.name, s.min, s.max, s.nominal,
                             std::min(s.max, s.sweep_max));
  for (const kcv::Bindings& b : c->extra_shapes) std::cout << fmt::format("  also swept at {}\n", kcv::bindings_string(b));
  std::cout << fmt::format("accumulate: {}   in-place: {}\n", kcv::dtype_name(c->accumulate),
                           c->inplace_allowed ? "allowed" : "not allowed");
  std::cout << fmt::format("error model: |got - r| <= c·u·(depth·mag + amp) + u_out·|r|, c = {}\n  {}\n", c->c,
                           c->c_reasoning);
  std::cout << fmt::format("population test (random inputs): RMS of |got - r|/sigma <= {:g} over >= {} elements "
                           "(docs/population-test.md)\n",
                           kcv::kPopulationLambda, kcv::kPopulationMinElements);
  return kExitPass;
}

/// Where replay finds a file a report names (issue 21 item 8): first the path relative to the
/// report's directory that the report recorded (provenance.paths_from_report[key]: `kcv verify
/// --json FILE` and corpus journals write it), then the recorded path itself (absolute, or relative
/// to the current directory), then a relative recorded path taken from the report's directory.
/// Throws SetupError naming every place tried.
std::string resolve_recorded(const std::string& recorded, const nlohmann::json& provenance, const char* key,
                             const fs::path& report_dir) {
  std::vector<fs::path> tried;
  if (provenance.is_object() && provenance.contains("paths_from_report") &&
      provenance["paths_from_report"].is_object() && provenance["paths_from_report"].contains(key) &&
      provenance["paths_from_report"][key].is_string())
    tried.push_back(report_dir / provenance["paths_from_report"][key].get<std::string>());
  tried.push_back(recorded);
  if (fs::path(recorded).is_relative()) tried.push_back(report_dir / recorded);
  std::error_code ec;
  for (const auto& p : tried)
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  std::string where;
  for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p.string();
  throw kcv::SetupError(fmt::format("the report's {} is not found (tried {})", key, where));
}

/// Refuses a file whose bytes are not the ones the report judged (allow: warn loudly instead).
void check_unchanged(const std::string& path, const nlohmann::json& provenance, const char* sha_key, bool allow) {
  const std::string now = kcv::sha256_file(path);
  if (!provenance.is_object() || !provenance.contains(sha_key) || !provenance[sha_key].is_string()) {
    std::cerr << fmt::format("kcv replay: warning: the report records no {} (a kcv before provenance wrote it): "
                             "'{}' (sha256 {}) cannot be checked against what was judged\n",
                             sha_key, kcv::clean_text(path), now);
    return;
  }
  const std::string then = provenance[sha_key].get<std::string>();
  if (now == then) return;
  // (a report's text is shown clean: it may have been edited by hand, or by a candidate's author)
  const std::string what = fmt::format("'{}' changed since the report: its sha256 is {}, the report judged {}",
                                       kcv::clean_text(path), now, kcv::clean_text(then));
  if (!allow)
    throw kcv::SetupError(what + "; the replay would not reproduce the report (--allow-changed replays it anyway)");
  std::cerr << "kcv replay: WARNING: " << what << "; replaying anyway (--allow-changed): the result is not the "
            << "report's\n";
}

struct ReplayOptions {
  std::string source;   // a kcv.report/1 file, a corpus journal, or a corpus OUT directory
  std::string key;      // a corpus pair (journal or OUT)
  std::string gate;
  int64_t case_index = 0;
  double timeout = 10;
  std::string python;   // overrides the report's interpreter (KernelBench)
  bool allow_changed = false;
};

int cmd_replay(const ReplayOptions& o) {
  nlohmann::json j;
  fs::path report_dir;
  std::error_code ec;
  std::string where;
  if (!o.key.empty() || fs::is_directory(o.source, ec)) {
    // A corpus pair straight from its journal: OUT, or OUT/journal.jsonl.
    const fs::path journal = fs::is_directory(o.source, ec) ? fs::path(o.source) / "journal.jsonl" : fs::path(o.source);
    if (!fs::is_regular_file(journal, ec)) throw kcv::SetupError(fmt::format("no corpus journal at {}", journal.string()));
    if (o.key.empty())
      throw kcv::SetupError(fmt::format("{} is a corpus journal: name the pair with --key (a result's \"key\")",
                                        journal.string()));
    int64_t results = 0;
    for (const auto& r : kcv::read_journal(journal.string())) {
      if (r.value("kind", "") != "result") continue;
      ++results;
      if (r.value("key", "") != o.key) continue;
      if (!r.contains("report") || !r["report"].is_object())
        throw kcv::SetupError(fmt::format("pair '{}' has no report to replay (status {}{}{})", o.key,
                                          r.value("status", "?"), r.contains("error") ? ": " : "",
                                          r.value("error", "")));
      j = r["report"];
      break;  // the first result of a key is the one that counts (as in the summary)
    }
    if (j.is_null())
      throw kcv::SetupError(fmt::format("no result for key '{}' in {} ({} results)", o.key, journal.string(), results));
    report_dir = fs::absolute(journal).parent_path();
    where = fmt::format("{} --key {}", journal.string(), o.key);
  } else {
    std::ifstream in(o.source);
    if (!in) throw kcv::SetupError(fmt::format("cannot read report '{}'", o.source));
    j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded())
      throw kcv::SetupError(fmt::format("'{}' is not JSON (a corpus journal or OUT needs --key)", o.source));
    report_dir = fs::absolute(o.source).parent_path();
    where = o.source;
  }
  const kcv::Report r = kcv::report_from_json(j);
  const kcv::GateReport* g = nullptr;
  for (const auto& x : r.gates)
    if (x.id == o.gate) g = &x;
  if (!g) throw kcv::SetupError(fmt::format("report has no gate '{}'", o.gate));
  const bool kb = r.kernelbench.has_value();
  std::string candidate, problem;
  if (kb) {
    if (r.kernelbench->solution.empty() || r.kernelbench->problem.empty())
      throw kcv::SetupError("the report's kernelbench section names no problem and solution to replay");
    candidate = resolve_recorded(r.kernelbench->solution, r.provenance, "solution", report_dir);
    problem = resolve_recorded(r.kernelbench->problem, r.provenance, "problem", report_dir);
    check_unchanged(candidate, r.provenance, "candidate_sha256", o.allow_changed);
    check_unchanged(problem, r.provenance, "problem_sha256", o.allow_changed);
  } else {
    candidate = resolve_recorded(r.candidate, r.provenance, "candidate", report_dir);
    check_unchanged(candidate, r.provenance, "candidate_sha256", o.allow_changed);
  }
  const std::string python = !o.python.empty() ? o.python : kb ? r.kernelbench->python : "";
  const kcv::ReplayResult res =
      kb ? kcv::replay_kernelbench(problem, candidate, python, r.backend, o.gate, g->seed, o.case_index, o.timeout,
                                   kcv::cli::settings_from_environment())
         : kcv::replay(r.op, candidate, r.backend, o.gate, g->seed, o.case_index, o.timeout,
                       kcv::cli::settings_from_environment());
  std::cout << fmt::format("replay: {} op {} candidate {} gate {} case {} ({}) seed {}\n", kcv::clean_text(where), r.op,
                           kcv::clean_text(candidate), o.gate, o.case_index, kcv::clean_text(res.label), g->seed);
  std::cout << fmt::format("{}{}{}\n", kcv::verdict_name(res.judgement.verdict), res.judgement.evidence.empty() ? "" : ": ",
                           kcv::clean_text(res.judgement.evidence));
  return res.judgement.verdict == kcv::Verdict::pass ? kExitPass : kExitFail;
}

/// `kcv --version`: the version and commit (as every report's provenance), the CUDA toolkit kcv was
/// built with, and where this kcv finds the candidate headers, its adapters and its worker (from
/// its own location when installed, the environment's KCV_* when set). A KCV_* value kcv cannot
/// take is said in place of the paths.
std::string version_text() {
  const std::string cuda = KCV_BUILD_CUDA_VERSION;
  const std::string head = fmt::format("kcv {} (commit {}; {})", kcv::kcv_version(), kcv::kcv_commit(),
                                       cuda.empty() ? "cpu backend only" : "cuda " + cuda);
  try {
    const kcv::Settings s = kcv::cli::settings_from_environment();
    return fmt::format("{}\ninclude:  {}\nadapters: {}\nworker:   {}", head, kcv::kcv_include_dir(s),
                       kcv::kcv_adapters_dir(s), kcv::default_worker_path(s));
  } catch (const kcv::SetupError& e) {
    return fmt::format("{}\nsettings: {}", head, kcv::clean_text(e.what()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  kcv::keep_large_allocations_in_heap();
  CLI::App app{"kcv — contract-grade verifier for GPU kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text, "print kcv's version, commit and the paths it uses, then exit");

  kcv::VerifyOptions vopts;
  std::string gates, json_out, junit_out;
  uint64_t seed = 0;
  bool quiet = false;
  auto* verify = app.add_subcommand("verify", "run the 12 gates on a candidate");
  std::vector<std::string> kernelbench_files;
  std::string baseline;
  verify->add_option("--op", vopts.op, "op contract (see `kcv contracts`)");
  verify->add_option("--candidate", vopts.candidate, "candidate: .c, .cpp, .cu or .so");
  verify->add_option("--kernelbench", kernelbench_files, "PROBLEM.py SOLUTION.py: a KernelBench candidate (docs/kernelbench.md)")
      ->expected(2);
  verify->add_option("--python", vopts.kernelbench.python, "interpreter with torch for --kernelbench (default: $KCV_PYTHON, else /usr/bin/python3)");
  verify->add_option("--baseline", baseline, "also run a baseline check beside the gates: kernelbench");
  verify->add_option("--backend", vopts.backend, "cpu or cuda")->capture_default_str();
  verify->add_option("--gates", gates, "comma-separated gate ids (default: all 12)");
  auto* seed_opt = verify->add_option("--seed", seed, "run seed (default: drawn fresh, printed, recorded)");
  verify->add_option("--timeout", vopts.timeout_s, "wall-clock seconds per call before TIMEOUT")->capture_default_str();
  verify->add_option("--compile-grace", vopts.compile_grace_s,
                     "seconds the first call at each shape in a worker may take instead, as a JIT compiles (default: "
                     "300 for --kernelbench, none otherwise)");
  verify->add_option("--json", json_out, "write the kcv.report/1 JSON report here ('-': standard output)");
  verify->add_option("--junit", junit_out, "write a JUnit XML report here ('-': standard output)");
  verify->add_flag("--quiet", quiet, "print only the verdict line");
  verify->add_option("--max-time", vopts.max_time_s,
                     "wall-clock seconds for the whole verification; gates not finished by then are TIMEOUT");
  verify->add_option("--compile-timeout", vopts.compile_timeout_s, "wall-clock seconds for each build of the candidate")
      ->capture_default_str();
  bool no_sandbox = false;
  verify->add_flag("--no-sandbox", no_sandbox,
                   "run workers without the sandbox (debugging): a PASS is then withheld (docs/security.md)");
  verify->add_option("--reference-cache", vopts.kernelbench.reference_cache,
                     "--kernelbench: keep the reference's answers in DIR, content-addressed, for later verifications "
                     "of the problem under the same --seed (kcv must run as root; docs/kernelbench.md)");
  verify->add_option("--build-cache", vopts.kernelbench.build_cache,
                     "--kernelbench: keep the solution's extension builds in DIR, content-addressed; a later "
                     "verification of the same solution imports them instead of compiling (kcv must run as root; "
                     "docs/kernelbench.md)");
  verify->add_option("--keep-workdir", vopts.workdir,
                     "work in DIR (new or empty) and keep it: worker logs worker-N.log, extension builds");

  verify->add_flag("--timing", vopts.timing,
                   "--kernelbench only: once every selected gate passed, also time the candidate and the reference "
                   "(as `kcv time`; docs/timing.md)");
  verify->add_option("--reps", vopts.timing_reps, "with --timing: timed repetitions per model (20..1000)")->capture_default_str();

  // `kcv time PROBLEM.py SOLUTION.py`: the gates, then (only if every selected gate passed) timing.
  std::vector<std::string> time_files;
  auto* time_cmd = app.add_subcommand(
      "time", "verify a KernelBench pair, then time it against the reference if every selected gate passed");
  time_cmd->add_option("FILES", time_files, "PROBLEM.py SOLUTION.py")->expected(2)->required();
  time_cmd->add_option("--python", vopts.kernelbench.python, "interpreter with torch (default: $KCV_PYTHON, else /usr/bin/python3)");
  time_cmd->add_option("--backend", vopts.backend, "cpu or cuda")->capture_default_str();
  time_cmd->add_option("--gates", gates, "comma-separated gate ids that must pass first (default: all 12)");
  auto* time_seed_opt = time_cmd->add_option("--seed", seed, "run seed (default: drawn fresh)");
  time_cmd->add_option("--reps", vopts.timing_reps, "timed repetitions per model (20..1000)")->capture_default_str();
  time_cmd->add_option("--timeout", vopts.timeout_s, "wall-clock seconds per call before TIMEOUT")->capture_default_str();
  time_cmd->add_option("--compile-grace", vopts.compile_grace_s, "as for verify");
  time_cmd->add_option("--max-time", vopts.max_time_s, "as for verify");
  time_cmd->add_option("--compile-timeout", vopts.compile_timeout_s, "as for verify")->capture_default_str();
  time_cmd->add_option("--json", json_out, "write the kcv.report/1 JSON report (with its timing section) here");
  time_cmd->add_option("--junit", junit_out, "write a JUnit XML report of the gates here");
  time_cmd->add_flag("--quiet", quiet, "print only the verdict and timing lines");
  time_cmd->add_flag("--no-sandbox", no_sandbox, "as for verify (a PASS is withheld, so nothing is timed)");
  time_cmd->add_option("--keep-workdir", vopts.workdir, "as for verify");
  time_cmd->add_option("--build-cache", vopts.kernelbench.build_cache, "as for verify");

  std::string show_op;
  auto* contracts = app.add_subcommand("contracts", "list the built-in op contracts");
  auto* show = contracts->add_subcommand("show", "print one contract");
  show->add_option("OP", show_op, "op name")->required();

  ReplayOptions ropts;
  auto* replay = app.add_subcommand("replay", "rerun one recorded case of a report or of a corpus pair");
  replay->add_option("REPORT", ropts.source, "kcv.report/1 JSON file, or a corpus OUT directory / journal with --key")
      ->required();
  replay->add_option("--key", ropts.key, "the corpus pair (a journal result's key) whose report to replay");
  replay->add_option("--gate", ropts.gate, "gate id")->required();
  replay->add_option("--case", ropts.case_index, "case index")->required();
  replay->add_option("--timeout", ropts.timeout, "wall-clock seconds per call")->capture_default_str();
  replay->add_option("--python", ropts.python, "interpreter with torch (default: the one the report names)");
  replay->add_flag("--allow-changed", ropts.allow_changed,
                   "replay even when a judged file's sha256 differs from the report's (warns)");

  kcv::cli::CorpusCommands corpus(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitSetup;
  }

  try {
    if (corpus.selected()) return corpus.dispatch();
    if (*verify || *time_cmd) {
      vopts.gates = split_commas(gates);
      if (*seed_opt || *time_seed_opt) vopts.seed = seed;
      if (*time_cmd) {
        kernelbench_files = time_files;
        vopts.timing = true;
      }
      if (kernelbench_files.size() == 2) {
        vopts.kernelbench.problem = kernelbench_files[0];
        vopts.kernelbench.solution = kernelbench_files[1];
      }
      if (!baseline.empty() && baseline != "kernelbench")
        throw kcv::SetupError(fmt::format("unknown baseline '{}' (kernelbench)", baseline));
      vopts.kernelbench.baseline = baseline == "kernelbench";
      if (!vopts.workdir.empty()) {
        // NOTES: workers write worker-N.log and worker-N/ there: another run's files or the
        // user's would be overwritten.
        std::error_code ec;
        if (fs::exists(vopts.workdir, ec) && !(fs::is_directory(vopts.workdir, ec) && fs::is_empty(vopts.workdir, ec)))
          throw kcv::SetupError(fmt::format("--keep-workdir '{}' exists and is not an empty directory", vopts.workdir));
      }
      if (json_out == "-" && junit_out == "-")
        throw kcv::SetupError("--json - and --junit - cannot both write to standard output");
      vopts.sandbox = !no_sandbox;
      kcv::install_stop_handlers();
      try {
        vopts.settings = kcv::cli::settings_from_environment();
        return cmd_verify(vopts, json_out, junit_out, quiet, time_cmd->parsed());
      } catch (const kcv::Interrupted&) {
        throw;  // stopped, not a setup error: no error report
      } catch (const std::exception& e) {
        // NOTES: the settings from the environment, or the printing after the reports were
        // written: the same record as a setup error of the verification (exit 2).
        return setup_exit(kcv::verify_error_outcome(vopts, {json_out, junit_out}, e));
      }
    }
    if (*contracts) return cmd_contracts(*show ? show_op : "");
    if (*replay) return cmd_replay(ropts);
  } catch (const kcv::Interrupted& e) {
    std::cerr << kcv::stopped_text(e.signal);
    return 128 + e.signal;
  } catch (const kcv::SetupError& e) {
    std::cerr << "kcv: " << kcv::clean_text(e.what()) << "\n";
    return kExitSetup;
  } catch (const std::exception& e) {
    std::cerr << "kcv: internal error: " << kcv::clean_text(e.what()) << "\n";
    return kExitSetup;
  }
  return kExitSetup;
}

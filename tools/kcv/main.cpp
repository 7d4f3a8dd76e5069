// kcv — the command line over the kcv library. The only place that prints and picks exit codes:
// 0 every gate passed, 1 some gate did not, 2 usage or setup error (one-line reason on stderr).
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/contract.hpp"
#include "kcv/engine.hpp"
#include "kcv/report.hpp"
#include "kcv/runner.hpp"
#include "kcv/text.hpp"

#include "corpus_commands.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kExitPass = 0, kExitFail = 1, kExitSetup = 2;

/// Writes a report to path (issue 21 item 6). "-": standard output. A path that is a symlink or
/// exists and is not a regular file (/dev/stdout, a FIFO, a device) is written in place, never
/// replaced. Otherwise a temporary file beside it and a rename: a reader never sees half a file.
void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw kcv::SetupError("cannot write the report to standard output");
    return;
  }
  const fs::path target(path);
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(target, ec);
  if (fs::exists(link) && (fs::is_symlink(link) || !fs::is_regular_file(link))) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) throw kcv::SetupError(fmt::format("cannot write '{}'", path));
    return;
  }
  if (target.has_parent_path() && !fs::exists(target.parent_path()))
    throw kcv::SetupError(fmt::format("cannot write '{}': directory does not exist", path));
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw kcv::SetupError(fmt::format("cannot write '{}'", path));
    out << text;
    if (!out.flush()) throw kcv::SetupError(fmt::format("cannot write '{}'", path));
  }
  fs::rename(tmp, target);
}

void on_stop_signal(int sig) { kcv::request_stop(sig); }

/// SIGINT/SIGTERM ask the verification to stop: the runner ends its workers, the temporary
/// directory goes with the unwinding, and kcv exits 128+signal. No SA_RESTART: waits wake up.
void install_stop_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

/// A JSON document as text: 2-space indent, any byte that is not UTF-8 replaced (clean_text has
/// made every string valid already; this keeps a writer from ever throwing on one).
std::string json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

int cmd_verify(const kcv::VerifyOptions& opts, const std::string& json_out, const std::string& junit_out, bool quiet) {
  // NOTES: with a report on standard output, the table and the verdict line go to stderr.
  const bool report_on_stdout = json_out == "-" || junit_out == "-";
  std::ostream& human = report_on_stdout ? std::cerr : std::cout;
  const bool color = isatty(report_on_stdout ? 2 : 1);
  bool header = false;
  const kcv::Report report = kcv::verify(opts, [&](const kcv::GateReport& g) {
    if (quiet) return;
    if (!header) {  // printed once the candidate built and loaded: setup errors stay one line
      if (opts.kernelbench_problem.empty())
        human << fmt::format("kcv verify: op {} candidate {} backend {}\n", opts.op, opts.candidate, opts.backend);
      else
        human << fmt::format("kcv verify: kernelbench problem {} solution {} backend {}\n", opts.kernelbench_problem,
                                 opts.kernelbench_solution, opts.backend);
      human << fmt::format("  {:<14} {:<8} {:>6} {:>9}  {}\n", "gate", "verdict", "cases", "time", "evidence");
      header = true;
    }
    human << kcv::table_row(g, color) << "\n" << std::flush;
  });
  if (!json_out.empty()) write_output(json_out, json_text(kcv::report_to_json(report)));
  if (!junit_out.empty()) write_output(junit_out, kcv::report_to_junit(report));
  int failed = 0;
  for (const auto& g : report.gates) failed += g.verdict != kcv::Verdict::pass && g.evidence != "not selected (--gates)";
  if (!report.kernelbench.is_null() && report.kernelbench.contains("reduced_sizes"))
    human << "kernelbench sizes: " << report.kernelbench["reduced_sizes"].get<std::string>() << "\n";
  if (!report.kernelbench.is_null() && report.kernelbench.contains("baseline")) {
    const auto& b = report.kernelbench["baseline"];
    human << fmt::format("kernelbench baseline (5 trials, allclose atol=rtol=1e-2): {}{}{}\n",
                             b.value("verdict", std::string("?")), b.value("detail", std::string()).empty() ? "" : ": ",
                             b.value("detail", std::string()));
  }
  if (!report.sandbox.is_null()) human << kcv::clean_text(report.sandbox.value("summary", std::string())) << "\n";
  if (!report.pass_withheld.empty()) human << "PASS withheld: " << kcv::clean_text(report.pass_withheld) << "\n";
  human << fmt::format("verdict: {} ({} of {} gates not passed) seed {}\n", kcv::verdict_name(report.verdict), failed,
                           report.gates.size(), report.seed);
  return report.verdict == kcv::Verdict::pass ? kExitPass : kExitFail;
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

int cmd_replay(const std::string& path, const std::string& gate, int64_t case_index, double timeout) {
  std::ifstream in(path);
  if (!in) throw kcv::SetupError(fmt::format("cannot read report '{}'", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw kcv::SetupError(fmt::format("'{}' is not JSON", path));
  const kcv::Report r = kcv::report_from_json(j);
  const kcv::GateReport* g = nullptr;
  for (const auto& x : r.gates)
    if (x.id == gate) g = &x;
  if (!g) throw kcv::SetupError(fmt::format("report has no gate '{}'", gate));
  const kcv::ReplayResult res =
      r.kernelbench.is_null()
          ? kcv::replay(r.op, r.candidate, r.backend, gate, g->seed, case_index, timeout)
          : kcv::replay_kernelbench(r.kernelbench.at("problem").get<std::string>(),
                                    r.kernelbench.at("solution").get<std::string>(),
                                    r.kernelbench.value("python", std::string()), r.backend, gate, g->seed, case_index,
                                    timeout);
  std::cout << fmt::format("replay: op {} candidate {} gate {} case {} ({}) seed {}\n", r.op, r.candidate, gate,
                           case_index, res.label, g->seed);
  std::cout << fmt::format("{}{}{}\n", kcv::verdict_name(res.judgement.verdict), res.judgement.evidence.empty() ? "" : ": ",
                           kcv::clean_text(res.judgement.evidence));
  return res.judgement.verdict == kcv::Verdict::pass ? kExitPass : kExitFail;
}

}  // namespace

int main(int argc, char** argv) {
  // NOTES: every case allocates and frees tensors of the same large sizes; keeping them in the
  // heap instead of fresh mappings saves the page faults and zeroing (a third of a large
  // problem's host time: bench/results/kernelbench-host-time.md). Never trimmed: a threshold of
  // 1 GiB still gave a case's gigabyte back at its end and faulted it in again at the next
  // (session 10: the kernel zeroing pages was 32% of kcv's samples on a 4096² problem).
  mallopt(M_MMAP_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TRIM_THRESHOLD, -1);
  CLI::App app{"kcv — contract-grade verifier for GPU kernels"};
  app.require_subcommand(1);

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
  verify->add_option("--python", vopts.python, "interpreter with torch for --kernelbench (default: $KCV_PYTHON, else /usr/bin/python3)");
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
  verify->add_option("--keep-workdir", vopts.workdir,
                     "work in DIR (new or empty) and keep it: worker logs worker-N.log, extension builds");

  std::string show_op;
  auto* contracts = app.add_subcommand("contracts", "list the built-in op contracts");
  auto* show = contracts->add_subcommand("show", "print one contract");
  show->add_option("OP", show_op, "op name")->required();

  std::string report_path, replay_gate;
  int64_t replay_case = 0;
  double replay_timeout = 10;
  auto* replay = app.add_subcommand("replay", "rerun one recorded case of a report");
  replay->add_option("REPORT", report_path, "kcv.report/1 JSON file")->required();
  replay->add_option("--gate", replay_gate, "gate id")->required();
  replay->add_option("--case", replay_case, "case index")->required();
  replay->add_option("--timeout", replay_timeout, "wall-clock seconds per call")->capture_default_str();

  kcv::cli::CorpusCommands corpus(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitSetup;
  }

  try {
    if (corpus.selected()) return corpus.dispatch();
    if (*verify) {
      vopts.gates = split_commas(gates);
      if (*seed_opt) vopts.seed = seed;
      if (kernelbench_files.size() == 2) {
        vopts.kernelbench_problem = kernelbench_files[0];
        vopts.kernelbench_solution = kernelbench_files[1];
      }
      if (!baseline.empty() && baseline != "kernelbench")
        throw kcv::SetupError(fmt::format("unknown baseline '{}' (kernelbench)", baseline));
      vopts.baseline = baseline == "kernelbench";
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
      install_stop_handlers();
      try {
        return cmd_verify(vopts, json_out, junit_out, quiet);
      } catch (const kcv::Interrupted&) {
        throw;  // stopped, not a setup error: no error report
      } catch (const std::exception& e) {
        // A setup error still leaves the reports asked for: a record of the error (exit 2).
        const bool setup = dynamic_cast<const kcv::SetupError*>(&e) != nullptr;
        const std::string why = (setup ? "" : "internal error: ") + kcv::clean_text(e.what());
        const bool kb = !vopts.kernelbench_problem.empty();
        const std::string op = kb ? "kernelbench" : vopts.op;
        const std::string cand = kb ? vopts.kernelbench_solution : vopts.candidate;
        try {
          if (!json_out.empty())
            write_output(json_out, json_text(kcv::error_report_json(op, cand, vopts.backend, vopts.seed, why)));
          if (!junit_out.empty()) write_output(junit_out, kcv::error_report_junit(op, cand, why));
        } catch (const std::exception& w) {
          std::cerr << "kcv: also could not write the error report: " << kcv::clean_text(w.what()) << "\n";
        }
        throw;
      }
    }
    if (*contracts) return cmd_contracts(*show ? show_op : "");
    if (*replay) return cmd_replay(report_path, replay_gate, replay_case, replay_timeout);
  } catch (const kcv::Interrupted& e) {
    std::cerr << "kcv: stopped by " << (e.signal == SIGINT ? "SIGINT" : e.signal == SIGTERM ? "SIGTERM" : "a signal")
              << "; workers ended, temporary files removed\n";
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

// verify_to_report_files: a verification that ends in report files, shared by `kcv verify` and
// each pair of a corpus run (kcv/verify_report.hpp).
#include "kcv/verify_report.hpp"

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include <fmt/format.h>

#include "kcv/candidate.hpp"
#include "kcv/report.hpp"
#include "kcv/runner.hpp"
#include "kcv/text.hpp"

namespace fs = std::filesystem;

namespace kcv {

void write_report_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text << std::flush;
    if (!std::cout) throw SetupError("cannot write the report to standard output");
    return;
  }
  const fs::path target(path);
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(target, ec);
  if (fs::exists(link) && (fs::is_symlink(link) || !fs::is_regular_file(link))) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) throw SetupError(fmt::format("cannot write '{}'", path));
    return;
  }
  if (target.has_parent_path() && !fs::exists(target.parent_path()))
    throw SetupError(fmt::format("cannot write '{}': directory does not exist", path));
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw SetupError(fmt::format("cannot write '{}'", path));
    out << text;
    if (!out.flush()) throw SetupError(fmt::format("cannot write '{}'", path));
  }
  fs::rename(tmp, target);
}

std::string report_json_text(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

VerifyReportOutcome verify_error_outcome(const VerifyOptions& o, const ReportFiles& files, const std::exception& e) {
  // A setup error still leaves the reports asked for: a record of the error (exit 2).
  const bool setup = dynamic_cast<const SetupError*>(&e) != nullptr;
  VerifyReportOutcome out;
  out.exit_code = kExitSetup;
  out.error = (setup ? "" : "internal error: ") + clean_text(e.what());
  const bool kb = o.kernelbench.given();
  const std::string op = kb ? "kernelbench" : o.op;
  const std::string cand = kb ? o.kernelbench.solution : o.candidate;
  try {
    if (!files.json.empty())
      write_report_file(files.json, report_json_text(error_report_json(op, cand, o.backend, o.seed, out.error)));
    if (!files.junit.empty()) write_report_file(files.junit, error_report_junit(op, cand, o.backend, out.error));
  } catch (const std::exception& w) {
    out.error_report_failure = clean_text(w.what());
  }
  return out;
}

VerifyReportOutcome verify_to_report_files(const VerifyOptions& o, const ReportFiles& files, const GateCallback& on_gate) {
  try {
    Report report = verify(o, on_gate);
    if (!files.json.empty() && files.json != "-" && report.provenance.is_object()) {
      // NOTES: replay resolves these against the report's directory first (resolve_recorded), so a
      // report moved with its files, or read from another directory, still finds them.
      const fs::path dir = fs::absolute(files.json).parent_path();
      nlohmann::json rel = nlohmann::json::object();
      auto add = [&](const char* key, const std::string& file) {
        std::error_code ec;
        const fs::path p = fs::relative(fs::absolute(file), dir, ec);
        if (!ec && !p.empty()) rel[key] = p.string();
      };
      if (!o.kernelbench.given()) {
        add("candidate", o.candidate);
      } else {
        add("problem", o.kernelbench.problem);
        add("solution", o.kernelbench.solution);
      }
      report.provenance["paths_from_report"] = rel;
    }
    if (!files.json.empty()) write_report_file(files.json, report_json_text(report_to_json(report)));
    if (!files.junit.empty()) write_report_file(files.junit, report_to_junit(report));
    VerifyReportOutcome out;
    out.exit_code = report.verdict == Verdict::pass ? kExitPass : kExitFail;
    out.report = std::move(report);
    return out;
  } catch (const Interrupted&) {
    throw;  // stopped, not a setup error: no error report
  } catch (const std::exception& e) {
    return verify_error_outcome(o, files, e);
  }
}

void keep_large_allocations_in_heap() {
  // NOTES: keeping them in the heap instead of fresh mappings saves the page faults and zeroing (a
  // third of a large problem's host time: bench/results/kernelbench-host-time.md). Never trimmed:
  // a threshold of 1 GiB still gave a case's gigabyte back at its end and faulted it in again at
  // the next (session 10: the kernel zeroing pages was 32% of kcv's samples on a 4096² problem).
  mallopt(M_MMAP_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TRIM_THRESHOLD, -1);
}

namespace {
void on_stop_signal(int sig) { request_stop(sig); }
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

std::string stopped_text(int sig) {
  return fmt::format("kcv: stopped by {}; workers ended, temporary files removed\n",
                     sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal");
}

std::string setup_error_text(const VerifyReportOutcome& outcome) {
  std::string text;
  if (!outcome.error_report_failure.empty())
    text = "kcv: also could not write the error report: " + outcome.error_report_failure + "\n";
  return text + "kcv: " + outcome.error + "\n";
}

}  // namespace kcv

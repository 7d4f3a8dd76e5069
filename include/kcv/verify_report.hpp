/// A verification that ends in report files: what `kcv verify --json/--junit` does and what each
/// pair of a corpus run does (docs/architecture.md "Corpus runs"), in one code path. The CLI keeps
/// its table and its printing; everything that decides what a report file holds and what exit code
/// it goes with is here.
#pragma once

#include <exception>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kcv/engine.hpp"

namespace kcv {

/// Exit codes of a verification: every selected gate passed / some did not / usage or setup error.
inline constexpr int kExitPass = 0, kExitFail = 1, kExitSetup = 2;

/// Writes a report to path (issue 21 item 6). "-": standard output. A path that is a symlink or
/// exists and is not a regular file (/dev/stdout, a FIFO, a device) is written in place, never
/// replaced. Otherwise a temporary file beside it and a rename: a reader never sees half a file.
/// Throws SetupError when it cannot write.
void write_report_file(const std::string& path, const std::string& text);

/// A JSON document as a report file's text: 2-space indent and a newline; any byte that is not
/// UTF-8 replaced (clean_text has made every string valid already; this keeps a writer from ever
/// throwing on one).
std::string report_json_text(const nlohmann::json& j);

/// Where a verification's reports go: "" none, "-" standard output (write_report_file).
struct ReportFiles {
  std::string json;    ///< kcv.report/1
  std::string junit;   ///< JUnit XML
};

/// What verify_to_report_files did.
struct VerifyReportOutcome {
  /// kExitPass when the report's verdict is PASS, kExitFail when it is FAIL, kExitSetup when the
  /// verification or a report file failed (then `error` says why and the files hold its record).
  int exit_code = kExitSetup;
  /// The verification's report when it finished and its files were written.
  std::optional<Report> report;
  /// exit_code kExitSetup: the one-line reason, "internal error: ..." for an exception that is no
  /// SetupError (the CLI prints it as "kcv: <error>").
  std::string error;
  /// Why the error record could not be written either ("" when it was, or when none was asked).
  std::string error_report_failure;
};

/// Runs verify(options, on_gate) and writes its reports to files: the JSON's provenance gets
/// paths_from_report (the problem and solution, or the candidate, relative to the JSON file's
/// directory, which replay tries first), then the JSON, then the JUnit. A SetupError or any other
/// exception, from the verification or from writing, becomes the outcome kExitSetup with the error
/// record (error_report_json, error_report_junit) written in the reports' place. Interrupted
/// (request_stop) is thrown on: stopped is no setup error, and gets no record.
VerifyReportOutcome verify_to_report_files(const VerifyOptions& options, const ReportFiles& files,
                                           const GateCallback& on_gate = {});

// ---- the process a verification runs in: `kcv verify` and each forked pair of a corpus run ----

/// Keeps large allocations in the heap, never trimmed: every case allocates and frees tensors of
/// the same large sizes.
void keep_large_allocations_in_heap();

/// SIGINT and SIGTERM ask the verification to stop (request_stop): the runner ends its workers,
/// the temporary directory goes with the unwinding, and the process exits 128+signal. No
/// SA_RESTART: waits wake up.
void install_stop_handlers();

/// The stderr line of a verification stopped by sig (then Interrupted reached its caller).
std::string stopped_text(int sig);

/// The stderr lines of an outcome kExitSetup: "kcv: <error>", after a line saying the error record
/// could not be written either when it could not; each line ends in a newline.
std::string setup_error_text(const VerifyReportOutcome& outcome);

/// The outcome kExitSetup for an exception met on the way to verify_to_report_files (the CLI's
/// settings from the environment): the error record written to files, as that function does.
VerifyReportOutcome verify_error_outcome(const VerifyOptions& options, const ReportFiles& files,
                                         const std::exception& e);

}  // namespace kcv

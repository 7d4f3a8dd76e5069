/// Report writers: JSON (schema kcv.report/1), JUnit XML, and the terminal table.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kcv/engine.hpp"

namespace kcv {

/// Every string in it (evidence, labels, paths, the KernelBench section) is valid UTF-8 without
/// control characters (clean_text): a candidate's text cannot break a JSON reader.
nlohmann::json report_to_json(const Report& r);

/// The verdict of a report that records a setup error (exit 2) instead of a verification.
inline constexpr const char* kErrorVerdict = "ERROR";
/// A kcv.report/1 record of a setup error: op, candidate, backend, seed (null when not chosen yet),
/// verdict ERROR, the one-line error, and no gates. report_from_json refuses it (nothing to replay).
nlohmann::json error_report_json(const std::string& op, const std::string& candidate, const std::string& backend,
                                 std::optional<uint64_t> seed, const std::string& error);
/// The JUnit XML of the same: one testcase "setup" with an error (and the provenance properties).
std::string error_report_junit(const std::string& op, const std::string& candidate, const std::string& backend,
                               const std::string& error);
/// Parses a kcv.report/1 document; throws SetupError when it is not one.
Report report_from_json(const nlohmann::json& j);
Verdict parse_verdict(const std::string& s);

std::string report_to_junit(const Report& r);

/// One row per gate: verdict, cases, seconds, short evidence. color: ANSI colors for a tty.
void print_table(std::ostream& out, const Report& r, bool color);
/// One gate's row, for progress output while gates run.
std::string table_row(const GateReport& g, bool color);

}  // namespace kcv

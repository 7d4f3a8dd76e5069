/// Report writers: JSON (schema kcv.report/1), JUnit XML, and the terminal table.
#pragma once

#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "kcv/engine.hpp"

namespace kcv {

nlohmann::json report_to_json(const Report& r);
/// Parses a kcv.report/1 document; throws SetupError when it is not one.
Report report_from_json(const nlohmann::json& j);
Verdict parse_verdict(const std::string& s);

std::string report_to_junit(const Report& r);

/// One row per gate: verdict, cases, seconds, short evidence. color: ANSI colors for a tty.
void print_table(std::ostream& out, const Report& r, bool color);
/// One gate's row, for progress output while gates run.
std::string table_row(const GateReport& g, bool color);

}  // namespace kcv

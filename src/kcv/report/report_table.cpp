// The terminal table: one row per gate.
#include <ostream>

#include <fmt/format.h>

#include "kcv/report.hpp"
#include "kcv/text.hpp"

namespace kcv {
namespace {

const char* color_of(Verdict v) {
  switch (v) {
    case Verdict::pass: return "\033[32m";
    case Verdict::skipped: return "\033[33m";
    default: return "\033[31m";
  }
}

/// One line of at most about n bytes, no escape sequence or broken UTF-8 from the candidate's text.
std::string shorten(const std::string& s, std::size_t n) {
  std::string one_line;
  for (char c : clean_text(s, /*keep_newlines=*/true)) one_line += (c == '\n' ? ' ' : c);
  return one_line.size() <= n ? one_line : std::string(utf8_prefix(one_line, n - 3)) + "...";
}

}  // namespace

std::string table_row(const GateReport& g, bool color) {
  const std::string verdict = verdict_name(g.verdict);
  const std::string shown = color ? fmt::format("{}{:<8}\033[0m", color_of(g.verdict), verdict) : fmt::format("{:<8}", verdict);
  return fmt::format("  {:<14} {} {:>6} {:>8.2f}s  {}", g.id, shown, g.cases, g.seconds,
                     shorten(g.evidence, 160));
}

void print_table(std::ostream& out, const Report& r, bool color) {
  out << fmt::format("  {:<14} {:<8} {:>6} {:>9}  {}\n", "gate", "verdict", "cases", "time", "evidence");
  for (const auto& g : r.gates) out << table_row(g, color) << "\n";
}

}  // namespace kcv

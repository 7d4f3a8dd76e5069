// JUnit XML: one testsuite per verification, one testcase per gate.
#include <fmt/format.h>

#include "kcv/report.hpp"
#include "kcv/text.hpp"

namespace kcv {
namespace {

/// XML text of s: clean_text first (valid UTF-8, no control characters: what XML 1.0 allows),
/// then the five entities.
std::string xml_escape(const std::string& raw) {
  const std::string s = clean_text(raw);
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

/// The report's provenance as JUnit properties, one per key ("provenance.kcv_commit", ...), in
/// the JSON's order; a null value (not found) is left out, and so is paths_from_report (relative
/// to the JSON report's directory, not to this file's).
std::string provenance_properties(const nlohmann::json& p) {
  std::string x;
  if (!p.is_object()) return x;
  for (const auto& [key, value] : p.items()) {
    if (value.is_null() || value.is_structured()) continue;
    x += fmt::format("<property name=\"provenance.{}\" value=\"{}\"/>", xml_escape(key),
                     xml_escape(value.is_string() ? value.get<std::string>() : value.dump()));
  }
  return x;
}

}  // namespace

std::string report_to_junit(const Report& r) {
  int failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  for (const auto& g : r.gates) {
    seconds += g.seconds;
    if (g.verdict == Verdict::fail || g.verdict == Verdict::refused) ++failures;
    if (g.verdict == Verdict::crash || g.verdict == Verdict::timeout) ++errors;
    if (g.verdict == Verdict::skipped) ++skipped;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites><testsuite name=\"kcv.{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" "
                   "time=\"{:.3f}\">\n",
                   xml_escape(r.op), r.gates.size(), failures, errors, skipped, seconds);
  x += fmt::format("  <properties><property name=\"candidate\" value=\"{}\"/><property name=\"backend\" value=\"{}\"/>"
                   "<property name=\"seed\" value=\"{}\"/>{}</properties>\n",
                   xml_escape(r.candidate), xml_escape(r.backend), r.seed, provenance_properties(r.provenance));
  for (const auto& g : r.gates) {
    x += fmt::format("  <testcase classname=\"kcv.{}\" name=\"{}\" time=\"{:.3f}\">", xml_escape(r.op), g.id, g.seconds);
    const std::string body = xml_escape(fmt::format("{} (seed {}, {} cases): {}{}", verdict_name(g.verdict), g.seed,
                                                    g.cases, g.evidence,
                                                    g.out_of_memory ? " [out of memory]" : ""));
    switch (g.verdict) {
      case Verdict::pass: break;
      case Verdict::fail:
      case Verdict::refused:
        x += fmt::format("<failure type=\"{}\" message=\"{}\"/>", verdict_name(g.verdict), body);
        break;
      case Verdict::crash:
      case Verdict::timeout:
        x += fmt::format("<error type=\"{}\" message=\"{}\"/>", verdict_name(g.verdict), body);
        break;
      case Verdict::skipped:
        x += fmt::format("<skipped message=\"{}\"/>", body);
        break;
    }
    x += "</testcase>\n";
  }
  x += "</testsuite></testsuites>\n";
  return x;
}

std::string error_report_junit(const std::string& op, const std::string& candidate, const std::string& backend,
                               const std::string& error) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites><testsuite name=\"kcv.{0}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\" "
                   "time=\"0\">\n  <properties><property name=\"candidate\" value=\"{1}\"/>{4}</properties>\n"
                   "  <testcase classname=\"kcv.{0}\" name=\"setup\" time=\"0\"><error type=\"{2}\" message=\"{3}\"/>"
                   "</testcase>\n</testsuite></testsuites>\n",
                   xml_escape(op), xml_escape(candidate), kErrorVerdict, xml_escape(error),
                   provenance_properties(error_report_json(op, candidate, backend, std::nullopt, error)["provenance"]));
  return x;
}

}  // namespace kcv

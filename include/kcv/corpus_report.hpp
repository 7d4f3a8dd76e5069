/// The corpus report: the self-contained HTML page `kcv report OUT` writes from a corpus journal
/// (OUT/journal.jsonl; format in docs/kernelbench.md). The counts behind it: kcv/stats.hpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/stats.hpp"

namespace kcv {

/// The report page: one self-contained HTML document (inline CSS and SVG, no script, no URLs).
std::string corpus_report_html(const std::vector<nlohmann::json>& journal_records);

/// Reads OUT/journal.jsonl and writes OUT/report.html (atomically: a temporary file, then rename).
/// Throws SetupError on a missing or unreadable journal, a corrupt line, or a failed write.
void write_corpus_report(const std::string& out_dir);

}  // namespace kcv

/// The corpus report: the self-contained HTML page `kcv report OUT` writes from a corpus journal
/// (OUT/journal.jsonl; format in docs/kernelbench.md). The counts behind it: kcv/stats.hpp.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kcv/stats.hpp"

namespace kcv {

/// The report page: one self-contained HTML document (inline CSS, SVG and a small inline script
/// that sorts tables; no URLs). out_dir is what its replay lines name as the corpus OUT.
std::string corpus_report_html(const std::vector<nlohmann::json>& journal_records, const std::string& out_dir = "OUT");

/// The counts behind the page, for machines: schema kcv.corpus-summary/1 (docs/kernelbench.md).
nlohmann::json corpus_summary_json(const CorpusSummary& s);
/// The headline and the per-gate table as markdown, for results files.
std::string corpus_summary_markdown(const CorpusSummary& s);

/// Reads OUT/journal.jsonl and writes OUT/report.html, OUT/summary.json and OUT/summary.md (each
/// atomically: a temporary file, then rename).
/// Throws SetupError on a missing or unreadable journal, a corrupt line, or a failed write.
void write_corpus_report(const std::string& out_dir);

}  // namespace kcv

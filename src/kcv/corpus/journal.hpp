// Internals of the corpus journal shared by run and merge: lines kept with their exact text.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kcv::corpus_detail {

struct JournalLine {
  nlohmann::json record;
  std::string text;   // the line as stored, without its '\n'
  int line = 0;       // 1-based line number in the file
};

/// Splits journal text into records. A last line without '\n' is dropped; whitespace-only lines
/// are skipped; a complete line that is not a JSON object (or a result without a string "key")
/// throws SetupError naming path and line.
std::vector<JournalLine> parse_journal(const std::string& text, const std::string& path);

/// The whole file; "" when it does not exist. Throws SetupError when it exists but cannot be read.
std::string read_file_text(const std::string& path);

/// Now, UTC, ISO 8601 ("2026-11-29T19:25:22Z").
std::string iso_now();

}  // namespace kcv::corpus_detail

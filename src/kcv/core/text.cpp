// clean_text: candidate-controlled text made valid UTF-8 without control characters.
#include "kcv/text.hpp"

#include <cstdint>

#include <fmt/format.h>

namespace kcv {

namespace {

/// The length of the valid UTF-8 sequence at s[i] and its code point; 0 when it is not one
/// (a stray continuation byte, a truncated, overlong or surrogate sequence, past U+10FFFF).
std::size_t decode(std::string_view s, std::size_t i, uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) { cp = c; return 1; }
  std::size_t n;
  uint32_t min;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool shown_escaped(uint32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0xFFFE || cp == 0xFFFF ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string clean_text(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const std::size_t n = decode(s, i, cp);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (cp == '\n') out += keep_newlines ? "\n" : "\\n";
    else if (cp == '\t') out += '\t';
    else if (shown_escaped(cp)) out += cp < 0x80 ? fmt::format("\\x{:02x}", cp) : fmt::format("\\u{:04x}", cp);
    else out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string_view utf8_prefix(std::string_view s, std::size_t n) {
  if (s.size() <= n) return s;
  std::size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut);
}

std::string trim_blanks(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

}  // namespace kcv

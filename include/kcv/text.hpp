/// Text that a candidate controls — its refusal message, its worker's log, compiler output, a
/// Python traceback — made safe for a terminal, JSON and XML before kcv shows or writes it
/// (issue 21 item 6): valid UTF-8 with no control characters.
#pragma once

#include <string>
#include <string_view>

namespace kcv {

/// s with every byte that is not part of a valid UTF-8 sequence written as "\xNN", every control
/// character (C0 but tab, DEL, C1) as "\xNN" or "\uNNNN", the code points XML 1.0 forbids
/// (U+FFFE, U+FFFF) and the bidirectional overrides (U+202A–U+202E, U+2066–U+2069, which reorder
/// what a terminal shows) as "\uNNNN". A newline stays a newline with keep_newlines, else "\n"
/// (two characters): a one-line message stays one line. Valid, printable text is unchanged.
std::string clean_text(std::string_view s, bool keep_newlines = false);

/// s without its leading and trailing blanks (space, tab, CR, LF).
std::string trim_blanks(std::string_view s);

/// The longest prefix of s of at most n bytes that does not end inside a UTF-8 sequence.
std::string_view utf8_prefix(std::string_view s, std::size_t n);

}  // namespace kcv

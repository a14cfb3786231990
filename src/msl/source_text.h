// Quoting the user's lines in error messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace alloy::msl {

// Line `line` (1-based) of `text`, without its newline; "" when out of range.
std::string_view line_of(std::string_view text, int line);

// Two lines quoting `line` of `text` with a caret under column `col`
// (1-based, bytes; tabs in the line are kept so the caret lines up):
//     12 |   float y = undefined_thing;
//        |             ^
// col <= 0 leaves the caret line out.
std::string quote_line(std::string_view text, int line, int col);

// The value of an integer literal as the user wrote it ("16", "0x10", "020",
// "16u"); nullopt for any other text or a value above `max`. The front end
// reads indices with it: std::stoi would throw std::out_of_range, which the
// front end does not document, for `[[buffer(99999999999)]]`.
std::optional<long long> integer_literal(std::string_view text, long long max);

// Throws CompileError "[where] file:line:col: error: what" followed by the quote.
[[noreturn]] void throw_compile_error(std::string_view where, const std::string& file,
                                      std::string_view text, int line, int col,
                                      std::string_view what);

}  // namespace alloy::msl

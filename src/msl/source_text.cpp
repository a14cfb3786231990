#include "msl/source_text.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "alloy/msl/translate.h"

namespace alloy::msl {

std::string_view line_of(std::string_view text, int line) {
  if (line < 1) return {};
  std::size_t start = 0;
  for (int l = 1; l < line; ++l) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  std::size_t end = text.find('\n', start);
  std::string_view s = text.substr(start, end == std::string_view::npos ? text.size() - start
                                                                        : end - start);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

std::optional<long long> integer_literal(std::string_view text, long long max) {
  while (!text.empty() && (text.back() == 'u' || text.back() == 'U' || text.back() == 'l' || text.back() == 'L'))
    text.remove_suffix(1);
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    text.remove_prefix(2);
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
  }
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0 || value > max) return std::nullopt;
  return value;
}

std::string quote_line(std::string_view text, int line, int col) {
  std::string_view code = line_of(text, line);
  // A column past the end of the line (from a compiler's log) puts the caret
  // just after the line, not a column's worth of blanks away.
  col = static_cast<int>(std::min<long long>(col, static_cast<long long>(code.size()) + 1));
  std::string number = std::to_string(line);
  std::string gutter = number.size() < 6 ? std::string(6 - number.size(), ' ') + number : number;
  std::string out = gutter + " | " + std::string(code) + "\n";
  if (col > 0) {
    std::string pad;
    for (int i = 0; i + 1 < col; ++i)
      pad += (i < static_cast<int>(code.size()) && code[i] == '\t') ? '\t' : ' ';
    out += std::string(gutter.size(), ' ') + " | " + pad + "^\n";
  }
  return out;
}

void throw_compile_error(std::string_view where, const std::string& file, std::string_view text,
                         int line, int col, std::string_view what) {
  std::ostringstream msg;
  msg << "[" << where << "] " << file << ":" << line << ":" << col << ": error: " << what << "\n"
      << quote_line(text, line, col);
  throw CompileError(msg.str(), file, line, col);
}

}  // namespace alloy::msl

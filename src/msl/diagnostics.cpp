// Compiler logs rewritten to point at the user's code. Thanks to the `#line`
// directives, g++/clang and NVRTC already name "source"/"header" and the
// user's line; what remains is the column (shifted where tokens were
// rewritten; missing from NVRTC's location) and quoting the user's line.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>
#include <vector>

#include "alloy/msl/translate.h"
#include "msl/source_text.h"

namespace alloy::msl {
namespace {

struct Location {
  std::string file;
  int line = 0;
  int col = 0;       // 0: not given
  std::string rest;  // after "file:line:col: " or "file(line): "
};

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// A line or column number of a log; nullopt past int (then the log line is
// no location of ours and passes through as it is).
std::optional<int> number(std::string_view s) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (!all_digits(s) || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// g++/clang: "file:line:col: rest" (or "file:line: rest").
std::optional<Location> parse_gcc(std::string_view l) {
  std::size_t a = l.find(':');
  if (a == std::string_view::npos || a == 0) return std::nullopt;
  std::size_t b = l.find(':', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  const std::optional<int> line = number(l.substr(a + 1, b - a - 1));
  if (!line) return std::nullopt;
  Location loc;
  loc.file = std::string(l.substr(0, a));
  loc.line = *line;
  std::size_t c = l.find(':', b + 1);
  std::size_t rest = b + 1;
  if (c != std::string_view::npos) {
    if (const std::optional<int> col = number(l.substr(b + 1, c - b - 1))) {
      loc.col = *col;
      rest = c + 1;
    }
  }
  while (rest < l.size() && l[rest] == ' ') ++rest;
  loc.rest = std::string(l.substr(rest));
  return loc;
}

// NVRTC: "file(line): rest".
std::optional<Location> parse_nvrtc(std::string_view l) {
  std::size_t open = l.find('(');
  if (open == std::string_view::npos || open == 0) return std::nullopt;
  std::size_t close = l.find("): ", open);
  if (close == std::string_view::npos) return std::nullopt;
  const std::optional<int> line = number(l.substr(open + 1, close - open - 1));
  if (!line) return std::nullopt;
  Location loc;
  loc.file = std::string(l.substr(0, open));
  loc.line = *line;
  loc.rest = std::string(l.substr(close + 3));
  return loc;
}

// NVRTC's template context, "... detected during instantiation of ... at line
// 12 of source": the user's line the instantiation comes from.
std::optional<Location> parse_nvrtc_context(std::string_view l) {
  std::size_t at = l.rfind(" at line ");
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t digits = at + 9, of = l.find(" of ", digits);
  if (of == std::string_view::npos) return std::nullopt;
  const std::optional<int> line = number(l.substr(digits, of - digits));
  std::string_view file = l.substr(of + 4);
  while (!file.empty() && (file.back() == ' ' || file.back() == '\r')) file.remove_suffix(1);
  if (!line || (file != "source" && file != "header")) return std::nullopt;
  Location loc;
  loc.file = std::string(file);
  loc.line = *line;
  return loc;
}

// A compiler's own quote of a line: "   12 |   code" or "      |   ^~~~".
bool is_snippet_line(std::string_view l) {
  std::size_t i = 0;
  while (i < l.size() && l[i] == ' ') ++i;
  while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i]))) ++i;
  while (i < l.size() && l[i] == ' ') ++i;
  return i < l.size() && l[i] == '|' && i > 0;
}

bool is_caret_line(std::string_view l) {
  std::size_t i = l.find_first_not_of(" \t");
  return i != std::string_view::npos && l[i] == '^' &&
         l.find_first_not_of("^~ \t", i) == std::string_view::npos;
}

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t nl = s.find('\n', start);
    if (nl == std::string_view::npos) {
      if (start < s.size()) out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

// NVRTC echoes the generated line and puts a caret under the column; find
// that column in the generated line.
int column_from_echo(std::string_view generated, std::string_view echo, std::string_view caret) {
  int caret_at = static_cast<int>(caret.find('^'));
  std::size_t lead = generated.find_first_not_of(" \t");
  if (lead == std::string_view::npos) return 0;
  std::string_view code = generated.substr(lead);
  std::size_t at = echo.find(code);
  if (at == std::string_view::npos) {
    std::size_t echo_lead = echo.find_first_not_of(" \t");
    if (echo_lead == std::string_view::npos) return 0;
    at = echo_lead;
  }
  int col = caret_at - static_cast<int>(at) + static_cast<int>(lead) + 1;
  return col >= 1 ? col : 0;
}

}  // namespace

std::string map_diagnostics(const TranslatedKernel& k, const std::string& log,
                            const KernelSpec& spec) {
  std::vector<std::string_view> lines = split_lines(log);
  std::ostringstream out;
  bool in_our_quote = false;  // drop the compiler's own quote after ours
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (in_our_quote && is_snippet_line(l)) continue;
    in_our_quote = false;

    bool nvrtc = false;
    std::optional<Location> loc = parse_gcc(l);
    if (!loc || (loc->file != "source" && loc->file != "header" &&
                 loc->file != k.lines.generated_file)) {
      loc = parse_nvrtc(l);
      nvrtc = true;
    }
    if (!loc || (loc->file != "source" && loc->file != "header" &&
                 loc->file != k.lines.generated_file)) {
      out << l << "\n";
      if (std::optional<Location> site = parse_nvrtc_context(l)) {
        const std::string_view text =
            site->file == "source" ? std::string_view(spec.source) : std::string_view(spec.header);
        if (!line_of(text, site->line).empty())
          out << site->file << ":" << site->line << ": note: the instantiation above comes from here\n"
              << quote_line(text, site->line, 0);
      }
      continue;
    }
    Origin origin = loc->file == "source"   ? Origin::Source
                    : loc->file == "header" ? Origin::Header
                                            : Origin::Generated;
    int generated_line = origin == Origin::Generated ? loc->line
                                                     : k.lines.generated_line(origin, loc->line);
    std::string_view generated_text = line_of(k.source, generated_line);
    // A column past the end of the generated line it names is its end (a
    // log's column is not trusted to be small: user_column adds to it).
    int col = generated_text.empty() ? loc->col
                                     : std::min(loc->col, static_cast<int>(generated_text.size()) + 1);
    if (nvrtc && i + 2 < lines.size() &&
        is_caret_line(lines[i + 2])) {
      col = column_from_echo(generated_text, lines[i + 1], lines[i + 2]);
      i += 2;
    }
    int user_col = col > 0 && origin != Origin::Generated
                       ? k.lines.user_column(generated_line, col)
                       : col;
    out << loc->file << ":" << loc->line;
    if (user_col > 0) out << ":" << user_col;
    out << ": " << loc->rest << "\n";
    std::string_view text = origin == Origin::Source   ? std::string_view(spec.source)
                            : origin == Origin::Header ? std::string_view(spec.header)
                                                       : std::string_view(k.source);
    if (!line_of(text, loc->line).empty() || generated_line > 0)
      out << quote_line(text, loc->line, user_col);
    in_our_quote = true;
  }
  return out.str();
}

}  // namespace alloy::msl

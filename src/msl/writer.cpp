#include "msl/writer.h"

namespace alloy::msl {

int LineMap::generated_line(Origin origin, int line) const {
  for (std::size_t k = 0; k < lines.size(); ++k)
    if (lines[k].origin == origin && lines[k].line == line) return static_cast<int>(k) + 1;
  return 0;
}

int LineMap::user_column(int generated_line, int generated_col) const {
  if (generated_line < 1 || generated_line > static_cast<int>(lines.size())) return generated_col;
  const ColumnAnchor* best = nullptr;
  for (const ColumnAnchor& a : lines[generated_line - 1].anchors)
    if (a.generated_col <= generated_col) best = &a;
  if (!best) return generated_col;
  return best->exact ? best->user_col + (generated_col - best->generated_col) : best->user_col;
}

void Writer::new_line_info() {
  LineInfo info;
  info.origin = origin_;
  info.line = origin_ == Origin::Generated ? line_ : presumed_;
  if (origin_ != Origin::Generated) info.anchors.push_back({1, 1, true});
  map_.lines.push_back(std::move(info));
}

void Writer::put(char c) {
  if (map_.lines.empty()) new_line_info();
  text_ += c;
  if (c != '\n') {
    ++col_;
    return;
  }
  ++line_;
  col_ = 1;
  if (pending_) {
    origin_ = pending_origin_;
    presumed_ = pending_line_;
    pending_ = false;
  } else {
    ++presumed_;
  }
  new_line_info();
}

void Writer::generated(std::string_view text) {
  for (char c : text) put(c);
}

void Writer::user_verbatim(std::string_view text) {
  for (char c : text) put(c);
}

void Writer::user_token(std::string_view out, int user_col, int user_len) {
  if (map_.lines.empty()) new_line_info();
  if (out.find('\x02') != std::string_view::npos) {
    // Moved text between line markers: each marker a `#line` directive.
    const Origin own_origin = origin_;
    const int own_line = presumed_;
    for (std::size_t at = 0; at < out.size();) {
      const std::size_t open = out.find('\x02', at);
      const std::string_view piece = out.substr(at, open == std::string_view::npos ? out.npos : open - at);
      for (char c : piece) put(c);
      if (open == std::string_view::npos) break;
      const std::size_t close = out.find('\x02', open + 1);
      const std::string_view number =
          close == std::string_view::npos ? std::string_view() : out.substr(open + 1, close - open - 1);
      // A \x02 of the user's own text (a fuzzed token) is no marker: written as it is.
      if (close == std::string_view::npos || number.size() > 9 ||
          number.find_first_not_of("0123456789") != std::string_view::npos) {
        put(out[open]);
        at = open + 1;
        continue;
      }
      // (The directive's own line is ours, whatever the line before it was.)
      end_line();
      map_.lines.back() = LineInfo{};
      map_.lines.back().line = line_;
      if (number.empty()) line_directive(own_origin, own_line);
      else line_directive(Origin::Source, std::stoi(std::string(number)));
      at = close + 1;
    }
    return;
  }
  auto& anchors = map_.lines.back().anchors;
  if (!out.empty()) anchors.push_back({col_, user_col, false});
  for (char c : out) put(c);
  map_.lines.back().anchors.push_back({col_, user_col + user_len, true});
}

void Writer::retarget(Origin origin, int line) {
  end_line();
  if (map_.lines.empty()) new_line_info();
  origin_ = origin;
  presumed_ = line;
  map_.lines.pop_back();
  new_line_info();
}

void Writer::end_line() {
  if (col_ != 1) put('\n');
}

void Writer::line_directive(Origin origin, int line) {
  end_line();
  const char* file = origin == Origin::Source   ? "source"
                     : origin == Origin::Header ? "header"
                                                : nullptr;
  int target = origin == Origin::Generated ? line_ + 1 : line;
  std::string d = "#line " + std::to_string(target) + " \"" +
                  (file ? std::string(file) : map_.generated_file) + "\"\n";
  pending_ = true;
  pending_origin_ = origin;
  pending_line_ = target;
  generated(d);
}

LineMap Writer::take_map() {
  // A trailing empty line (after the last newline) holds no text.
  if (!map_.lines.empty() && col_ == 1) map_.lines.pop_back();
  return std::move(map_);
}

}  // namespace alloy::msl

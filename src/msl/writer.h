// Builds a translation unit and, as it goes, the map from its lines to the
// user's lines and columns.
#pragma once

#include <string>
#include <string_view>

#include "alloy/msl/translate.h"

namespace alloy::msl {

class Writer {
 public:
  // Text of our own; may span lines.
  void generated(std::string_view text);

  // `#line` directive so what follows reads as `origin`'s line `line`
  // (Generated: the real line, so the generated file can be quoted).
  void line_directive(Origin origin, int line = 0);

  // User text copied as is (spaces, comments, untouched tokens); may span lines.
  void user_verbatim(std::string_view text);

  // A user token of `user_len` bytes at `user_col`, written as `out`
  // (single line; "" drops it). Text a rewrite moved there from elsewhere
  // in the source (the CPU regions' uniform declarations) is framed by
  // line markers: line_marker(n) before it, then line_marker_back() to
  // return to the token's own line; each becomes a `#line` directive.
  void user_token(std::string_view out, int user_col, int user_len);
  static std::string line_marker(int source_line) { return "\x02" + std::to_string(source_line) + "\x02"; }
  static std::string line_marker_back() { return "\x02\x02"; }

  // What follows, from the start of the current (empty) line, is user text
  // from `origin`'s line `line`, without a #line directive (Metal form).
  void retarget(Origin origin, int line);

  // Ends the current line if anything is on it.
  void end_line();

  int line() const { return line_; }  // the physical line being written, 1-based
  std::string take_text() { return std::move(text_); }
  LineMap take_map();

 private:
  void put(char c);
  void new_line_info();

  std::string text_;
  LineMap map_;
  int line_ = 1;
  int col_ = 1;  // next column on the physical line
  Origin origin_ = Origin::Generated;
  int presumed_ = 1;  // the line the compiler believes this one is
  // After a #line directive, the next line takes this origin/number.
  bool pending_ = false;
  Origin pending_origin_ = Origin::Generated;
  int pending_line_ = 0;
};

}  // namespace alloy::msl

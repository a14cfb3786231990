#include "msl/macro_calls.h"

#include <algorithm>
#include <cctype>

#include "msl/token_rules.h"

namespace alloy::msl::macro_calls {

using Toks = std::vector<Token>;

void require(bool ok, const std::string& why) {
  if (!ok) throw NotTaken{why};
}

std::optional<Macro> function_like(std::string_view text, const Token& d) {
  TextRange body;
  std::string name;
  std::optional<std::vector<std::string>> params = macro_parameters(text, d);
  if (!params || !define_body(text, d, body, &name)) return std::nullopt;
  Macro m;
  m.name = name;
  m.directive = &d;
  for (const std::string& p : *params)
    require(p != "..." && !p.empty() && (std::isalpha(static_cast<unsigned char>(p[0])) || p[0] == '_'),
            "the macro `" + name + "` on line " + std::to_string(d.line) + " takes `" + p + "`");
  m.params = std::move(*params);
  LexOptions opt;
  opt.directives = false;
  m.body = lex_range(text, body.begin, body.end, body.line, body.col, opt);
  return m;
}

Call find_call(const Toks& s, std::size_t i, const Macro& m) {
  const std::string where = "the call of `" + m.name + "` on line " + std::to_string(s[i].line);
  require(!is_member_access(s, i) && !(i > 0 && s[i - 1].is_punct("::")), where + " is not a plain name");
  require(i + 1 < s.size() && s[i + 1].is_punct("("), where + " has no arguments");
  const std::size_t close = matching_paren(s, i + 1);
  require(close < s.size() && close + 1 < s.size() && s[close + 1].is_punct(";"),
          where + " is not a statement of its own");
  const bool starts = i == 0 || s[i - 1].is_punct(";") || s[i - 1].is_punct("{") || s[i - 1].is_punct("}") ||
                      s[i - 1].kind == TokenKind::Directive;
  require(starts, where + " does not begin a statement (a braceless branch, or in an expression)");
  for (std::size_t k = i + 2; k < close; ++k)
    require(s[k].kind != TokenKind::Directive, where + " has a preprocessor line among its arguments");
  Call c{&m, i, close, {}};
  // The preprocessor's split: commas outside parentheses only.
  int depth = 0;
  std::size_t b = i + 2;
  for (std::size_t k = i + 2; k <= close; ++k) {
    if (k == close || (depth == 0 && s[k].is_punct(","))) {
      c.args.push_back({b, k});
      b = k + 1;
      continue;
    }
    depth += s[k].is_punct("(") - s[k].is_punct(")");
  }
  if (m.params.empty() && c.args.size() == 1 && c.args[0].first == c.args[0].second) c.args.clear();
  require(c.args.size() == m.params.size(), where + " gives " + std::to_string(c.args.size()) +
                                                " arguments for " + std::to_string(m.params.size()) + " parameters");
  return c;
}

namespace {
// The macro's body at call `c`, on one line.
std::string expanded(const Toks& s, const Call& c, bool do_while_as_block) {
  const Macro& m = *c.macro;
  const Toks& t = m.body;
  std::size_t b = 0, e = t.size();
  if (do_while_as_block && t.size() >= 6 && t[0].is_ident("do") && t[1].is_punct("{")) {
    const std::size_t close = matching_bracket(t, 1);
    if (close + 5 == t.size() && t[close + 1].is_ident("while") && t[close + 2].is_punct("(") &&
        t[close + 3].text == "0" && t[close + 4].is_punct(")")) {
      for (std::size_t k = 2; k < close; ++k)
        require(!t[k].is_ident("break") && !t[k].is_ident("continue"),
                "the macro `" + m.name + "` leaves its `do ... while (0)` by `" + t[k].text + "`");
      b = 1, e = close + 1;
    }
  }
  std::string out;
  for (std::size_t k = b; k < e; ++k) {
    std::string piece = t[k].text;
    if (t[k].kind == TokenKind::Identifier) {
      auto p = std::find(m.params.begin(), m.params.end(), t[k].text);
      if (p != m.params.end()) {
        // The argument's tokens, not its text: a comment inside it would
        // swallow the rest of the call's line.
        auto [ab, ae] = c.args[p - m.params.begin()];
        piece.clear();
        for (std::size_t a = ab; a < ae; ++a) piece += (a == ab ? "" : " ") + s[a].text;
      }
    }
    out += (out.empty() ? "" : " ") + piece;
  }
  return out;
}

}  // namespace

std::string expand_calls(std::string text, const Toks& s, const std::vector<Call>& calls, bool do_while_as_block) {
  // From the end back, so that each call's offsets still hold.
  for (auto c = calls.rbegin(); c != calls.rend(); ++c) {
    const std::size_t b = s[c->name].begin, e = s[c->close].end;
    const std::size_t newlines = std::count(text.begin() + b, text.begin() + e, '\n');
    text.replace(b, e - b, expanded(s, *c, do_while_as_block) + std::string(newlines, '\n'));
  }
  return text;
}

}  // namespace alloy::msl::macro_calls

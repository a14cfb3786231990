#include "msl/cpu_inline_macros.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include "msl/cpu_threads.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

using Toks = std::vector<Token>;

struct NotTaken {
  std::string why;
};

void require(bool ok, const std::string& why) {
  if (!ok) throw NotTaken{why};
}

struct Macro {
  std::string name;
  const Token* directive = nullptr;
  std::vector<std::string> params;
  Toks body;  // lexed as the preprocessor sees it (`#` an operator, no comments)
  bool syncs = false;
};

// A function-like `#define` of the header; nullopt for other directives and
// object-like macros.
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
  for (std::size_t k = 0; k < m.body.size() && !m.syncs; ++k) m.syncs = is_sync_use(m.body, k);
  return m;
}

struct Call {
  const Macro* macro = nullptr;
  std::size_t name = 0, close = 0;                           // source tokens: the name, its `)`
  std::vector<std::pair<std::size_t, std::size_t>> args;    // each argument's tokens [b, e)
};

// The call at source token `i`, a statement of its own.
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

// The macro's body at call `c`, on one line: each parameter the argument's
// text, `do { X } while (0)` the block `{ X }`.
std::string expanded(const Toks& s, const Call& c) {
  const Macro& m = *c.macro;
  const Toks& t = m.body;
  std::size_t b = 0, e = t.size();
  if (t.size() >= 6 && t[0].is_ident("do") && t[1].is_punct("{")) {
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

std::optional<InlinedHelpers> inline_macros(const KernelSpec& spec, const LexedKernel& lexed) {
  const Toks& h = lexed.header.tokens;
  const Toks& s = lexed.source.tokens;
  std::map<std::string, Macro> macros;  // the synchronising ones
  std::map<std::string, int> defined;
  for (const Token& d : h) {
    if (d.kind != TokenKind::Directive) continue;
    const std::string directive = directive_name(d);
    if (directive == "define") {
      TextRange body;
      std::string name;
      define_body(lexed.header.text, d, body, &name);
      ++defined[name];
    }
    if (std::optional<Macro> m = function_like(lexed.header.text, d); m && m->syncs) macros[m->name] = std::move(*m);
  }
  if (macros.empty()) return std::nullopt;
  for (const auto& [name, m] : macros)
    require(defined[name] == 1, "the header defines `" + name + "` more than once");
  // Another directive naming it (`#undef`, `#ifdef`, `defined(...)`) would
  // see it gone once its definition is blank.
  for (const Toks* text : {&h, &s})
    for (const Token& d : *text) {
      if (d.kind != TokenKind::Directive) continue;
      LexOptions opt;
      opt.directives = false;
      const std::string where = "a directive on line " + std::to_string(d.line) + " of the " +
                                (text == &h ? "header" : "body");
      Toks words;
      try {
        words = lex(std::string_view(d.text).substr(1), opt);
      } catch (const std::exception&) {
        require(false, where + " does not lex");  // (`#error don't`)
      }
      for (const auto& [name, m] : macros)
        if (&d != m.directive)
          for (const Token& w : words) require(!w.is_ident(name), where + " names `" + name + "`");
    }
  for (const auto& [name, m] : macros) {
    for (const Token& t : m.body)
      require(!t.is_punct("#") && !t.is_punct("##"), "the macro `" + name + "` uses `#` or `##`");
    // Its name in the header's functions (other macros are directives)
    // would call it where no expansion is.
    for (const Token& t : h)
      require(!t.is_ident(name), "the header names `" + name + "` on line " + std::to_string(t.line));
  }
  std::vector<Call> calls;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].kind == TokenKind::Identifier && macros.count(s[i].text)) calls.push_back(find_call(s, i, macros.at(s[i].text)));
  for (const Call& a : calls)
    for (const Call& b : calls)
      require(&a == &b || b.name < a.name || b.name > a.close,
              "the call of `" + b.macro->name + "` on line " + std::to_string(s[b.name].line) +
                  " is in another's arguments");

  InlinedHelpers out;
  out.source = spec.source;
  // From the end back, so that each call's offsets still hold.
  for (auto c = calls.rbegin(); c != calls.rend(); ++c) {
    const std::size_t b = s[c->name].begin, e = s[c->close].end;
    const std::size_t newlines = std::count(out.source.begin() + b, out.source.begin() + e, '\n');
    out.source.replace(b, e - b, expanded(s, *c) + std::string(newlines, '\n'));
  }
  out.header = spec.header;
  for (const auto& [name, m] : macros)
    for (std::size_t k = m.directive->begin; k < m.directive->end; ++k)
      if (out.header[k] != '\n') out.header[k] = ' ';
  std::map<std::string, int> count;
  for (const Call& c : calls) ++count[c.macro->name];
  for (const auto& [name, m] : macros) {
    const int n = count[name];
    out.note += (out.note.empty() ? "" : "; ") + name +
                (n == 0 ? ", a macro not called, is left out"
                        : ", a macro, is expanded at " + (n == 1 ? std::string("its call") : "its " + std::to_string(n) + " calls") +
                              " in the body");
  }
  out.note += calls.empty() ? " (it would keep the kernel on fibers)" : " (a region cannot end inside a macro's call)";
  return out;
}

}  // namespace

std::optional<InlinedHelpers> inline_sync_macros(const KernelSpec& spec, const LexedKernel& lexed,
                                                 std::string* why_not) {
  try {
    return inline_macros(spec, lexed);
  } catch (const NotTaken& e) {
    if (why_not) *why_not = e.why;
    return std::nullopt;
  }
}

}  // namespace alloy::msl

#include "msl/address_space_overloads.h"

#include <algorithm>
#include <map>
#include <string>

#include "msl/source_text.h"

namespace alloy::msl {
namespace {

constexpr std::string_view kWhere = "msl::translate";

bool is_space(const Token& t) { return t.is_ident("device") || t.is_ident("thread") || t.is_ident("threadgroup"); }

// Tokens [b, e) as C++ sees them once address spaces go (`constant` is
// const, once: `const constant` is const).
std::string without_spaces(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  std::string s, last;
  for (std::size_t k = b; k < e; ++k) {
    if (is_space(t[k])) continue;
    const std::string word = t[k].is_ident("constant") ? "const" : t[k].text;
    if (word == "const" && last == "const") continue;
    s += word + ' ';
    last = word;
  }
  return s;
}

// After a parameter list: the qualifiers a member function may carry.
bool is_qualifier(const Token& t) {
  return is_space(t) || t.is_ident("constant") || t.is_ident("const") || t.is_ident("volatile") ||
         t.is_ident("noexcept") || t.is_ident("override") || t.is_ident("final") || t.is_punct("&") || t.is_punct("&&");
}

bool is_control(const Token& t) {
  return t.is_ident("if") || t.is_ident("for") || t.is_ident("while") || t.is_ident("switch") || t.is_ident("catch");
}

std::size_t matching(const std::vector<Token>& t, std::size_t open, const char* o, const char* c) {
  int depth = 0;
  for (std::size_t k = open; k < t.size(); ++k) {
    if (t[k].is_punct(o)) ++depth;
    if (t[k].is_punct(c) && --depth == 0) return k;
  }
  return t.size();
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> address_space_repeats(const LexedText& text,
                                                                      const std::vector<Token>& t) {
  std::map<std::pair<std::size_t, std::string>, std::string> seen;  // (scope, declaration) -> its first body
  std::vector<std::pair<std::size_t, std::size_t>> repeats;
  std::vector<std::size_t> scopes{t.size()};  // the `{` of each open scope; size(): the file's
  std::size_t start = 0;                      // of the current declaration
  int conditionals = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& x = t[i];
    if (x.kind == TokenKind::Directive) {
      conditionals = std::max(0, conditionals + conditional_nesting(x));
      start = i + 1;
      continue;
    }
    if (x.is_punct(";") || x.is_punct("}") || (x.is_punct(":") && i > 0 && t[i - 1].kind == TokenKind::Identifier &&
                                                 (t[i - 1].is_ident("public") || t[i - 1].is_ident("private") ||
                                                  t[i - 1].is_ident("protected")))) {
      if (x.is_punct("}") && scopes.size() > 1) scopes.pop_back();
      start = i + 1;
      continue;
    }
    if (x.is_punct("{")) {
      scopes.push_back(i);
      start = i + 1;
      continue;
    }
    // `name (params) qualifiers {`: a function's definition.
    if (!x.is_punct("(") || i == 0 || t[i - 1].kind != TokenKind::Identifier || is_control(t[i - 1])) continue;
    const std::size_t close = matching(t, i, "(", ")");
    std::size_t open = close + 1;
    while (open < t.size() && is_qualifier(t[open])) ++open;
    if (open >= t.size() || !t[open].is_punct("{")) continue;
    const std::size_t end = matching(t, open, "{", "}");
    if (end >= t.size()) continue;
    const std::size_t decl_begin = start;
    if (conditionals == 0) {
      const auto key = std::make_pair(scopes.back(), without_spaces(t, decl_begin, open));
      const std::string body = without_spaces(t, open, end + 1);
      auto [it, first] = seen.emplace(key, body);
      if (!first) {
        if (it->second != body) {
          const Token& name = t[i - 1];
          throw_compile_error(kWhere, text.file, text.text, name.line, name.col,
                              "'" + name.text +
                                  "' is defined again for another address space, with another body: Alloy's C++ "
                                  "has one pointer type for every address space (device, threadgroup, constant, "
                                  "thread), so these overloads would be one function; give them different names");
        }
        std::size_t last = end;
        if (last + 1 < t.size() && t[last + 1].is_punct(";")) ++last;
        repeats.emplace_back(decl_begin, last);
      }
    }
    // Past the body: its own declarations are another scope's.
    i = end;
    start = end + 1;
  }
  return repeats;
}

}  // namespace alloy::msl

#include "msl/storage_rules.h"

#include <algorithm>
#include <string>
#include <vector>

#include "msl/source_text.h"

namespace alloy::msl {
namespace {

constexpr std::string_view kWhere = "msl::translate";

enum class Scope { Namespace, Type, Function, Expression };

bool is_one_of(const Token& t, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (t.is_ident(w)) return true;
  return false;
}

// What the `{` ending the statement [b, e) opens.
Scope opened_by(const std::vector<const Token*>& toks, std::size_t b, std::size_t e) {
  bool paren = false;
  for (std::size_t k = b; k < e; ++k) {
    const Token& t = *toks[k];
    if (t.is_ident("namespace") || (t.is_ident("extern") && k + 1 < e && toks[k + 1]->kind == TokenKind::String))
      return Scope::Namespace;
    if (t.is_punct("=") || t.is_ident("return")) return Scope::Expression;
    if (t.is_punct("(")) paren = true;
    if (!paren && is_one_of(t, {"struct", "class", "union", "enum"})) return Scope::Type;
  }
  return paren ? Scope::Function : Scope::Expression;
}

// The declarator's name in the declaration [b, e): the identifier before
// the first `=`, `[`, `{` or the end.
const Token& declared_name(const std::vector<const Token*>& toks, std::size_t b, std::size_t e) {
  std::size_t name = b;
  for (std::size_t k = b; k < e; ++k) {
    const Token& t = *toks[k];
    if (t.is_punct("=") || t.is_punct("[") || t.is_punct("{") || t.is_punct(",")) break;
    if (t.kind == TokenKind::Identifier) name = k;
  }
  return *toks[name];
}

bool looks_like_macro(const Token& t) {
  if (t.kind != TokenKind::Identifier || t.text.size() < 2) return false;
  bool letter = false;
  for (char c : t.text) {
    if (c >= 'a' && c <= 'z') return false;
    letter = letter || (c >= 'A' && c <= 'Z');
  }
  return letter;
}

class Checker {
 public:
  Checker(const LexedText& text, bool program_scope) : text_(text), program_scope_(program_scope) {}

  void run() {
    int conditionals = 0;
    for (const Token& t : text_.tokens) {
      if (t.kind == TokenKind::Directive) {
        conditionals = std::max(0, conditionals + conditional_nesting(t));
        continue;
      }
      toks_.push_back(&t);
      checked_.push_back(conditionals == 0);
    }
    std::vector<Scope> scopes{program_scope_ ? Scope::Namespace : Scope::Function};
    std::size_t start = 0;  // of the current statement
    int parens = 0;
    for (std::size_t i = 0; i < toks_.size(); ++i) {
      const Token& t = *toks_[i];
      if (t.is_ident("thread_local") && checked_[i])
        fail(t, "Metal has no thread_local storage; keep per-thread values in local variables");
      if (t.is_punct("(") || t.is_punct("[")) ++parens;
      if ((t.is_punct(")") || t.is_punct("]")) && parens > 0) --parens;
      if (parens > 0) continue;
      if (t.is_punct("{")) {
        scopes.push_back(scopes.back() == Scope::Expression ? Scope::Expression : opened_by(toks_, start, i));
        start = i + 1;
        after_type_ = false;
      } else if (t.is_punct("}")) {
        after_type_ = scopes.size() > 1 && scopes.back() == Scope::Type;  // `struct S {...} s;` declares s
        if (scopes.size() > 1) scopes.pop_back();
        start = i + 1;
      } else if (t.is_punct(";")) {
        statement(scopes.back(), start, i);
        start = i + 1;
        after_type_ = false;
      }
    }
  }

 private:
  void statement(Scope scope, std::size_t b, std::size_t e) {
    if (b >= e || scope == Scope::Type || scope == Scope::Expression) return;
    for (std::size_t k = b; k < e; ++k)
      if (!checked_[k]) return;
    const Token& first = *toks_[b];
    bool immutable = false, is_static = false, paren_first = false, seen_assign = false;
    for (std::size_t k = b; k < e; ++k) {
      const Token& t = *toks_[k];
      if (is_one_of(t, {"constant", "constexpr", "const", "threadgroup", "typedef", "using", "template",
                        "static_assert", "namespace", "extern", "friend", "struct", "class", "union", "enum",
                        "return", "goto", "break", "continue", "operator"}))
        immutable = true;  // not a mutable variable, or not a declaration
      if (t.is_ident("static")) is_static = true;
      if (t.is_punct("=")) seen_assign = true;
      if (t.is_punct("(") && !seen_assign) paren_first = true;
    }
    if (immutable || paren_first) return;
    // A macro may stand for anything (`STEEL_CONST int k = 4;`): an
    // all-capitals name of two letters or more is taken for one.
    for (std::size_t k = b; k < e && !toks_[k]->is_punct("="); ++k)
      if (looks_like_macro(*toks_[k])) return;
    if (scope == Scope::Namespace) {
      // A declaration needs a type and a name: `x;` or `x = 1;` alone is not one.
      std::size_t idents = 0;
      for (std::size_t k = b; k < e && !toks_[k]->is_punct("=") && !toks_[k]->is_punct("["); ++k)
        idents += toks_[k]->kind == TokenKind::Identifier ? 1 : 0;
      if (idents < (after_type_ ? 1u : 2u)) return;
      const Token& name = declared_name(toks_, b, e);
      fail(name, "program-scope variable '" + name.text +
                     "' must be declared in the constant address space (Metal's rule; a mutable one would be "
                     "shared by every thread and kept between launches): write `constant` before its type");
    } else if (is_static && first.kind == TokenKind::Identifier) {
      const Token& name = declared_name(toks_, b, e);
      fail(name, "static variable '" + name.text +
                     "' must be constant (Metal's rule; a mutable one would be shared by every thread and kept "
                     "between launches): make it a local variable, or `constant`/`constexpr`");
    }
  }

  [[noreturn]] void fail(const Token& t, const std::string& why) {
    throw_compile_error(kWhere, text_.file, text_.text, t.line, t.col, why);
  }

  const LexedText& text_;
  bool program_scope_;
  std::vector<const Token*> toks_;
  std::vector<bool> checked_;
  bool after_type_ = false;  // the statement follows a struct's, class's, union's or enum's body
};

}  // namespace

void check_storage_rules(const LexedText& text, bool at_program_scope) { Checker(text, at_program_scope).run(); }

}  // namespace alloy::msl

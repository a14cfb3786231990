#include "msl/cpu_uniform_values.h"

#include <map>

#include "msl/builtins.h"
#include "msl/cpu_regions_syntax.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

using Kind = BodyStmt::Kind;

// A use of a name at t[k], not a member (`v.W`) or a qualified name's tail.
bool names_at(const std::vector<Token>& t, std::size_t k, const std::string& name) {
  return t[k].is_ident(name) && !is_member_access(t, k) && !(k > 0 && t[k - 1].is_punct("::"));
}

// The name at t[k] is a whole argument of a call (`f(W)`, `f(a, W)`) that
// may take it by reference: the callee is not a pure function or a cast.
bool passed_alone(const std::vector<Token>& t, std::size_t k, std::size_t begin) {
  if (k == begin || k + 1 >= t.size()) return false;
  if (!(t[k - 1].is_punct("(") || t[k - 1].is_punct(",")) || !(t[k + 1].is_punct(")") || t[k + 1].is_punct(",")))
    return false;
  int depth = 0;
  for (std::size_t j = k; j-- > begin;) {
    if (t[j].is_punct(")") || t[j].is_punct("]") || t[j].is_punct("}")) ++depth;
    if (!(t[j].is_punct("(") || t[j].is_punct("[") || t[j].is_punct("{"))) continue;
    if (depth > 0) {
      --depth;
      continue;
    }
    if (!t[j].is_punct("(")) return false;  // an element index or a brace list: read
    if (j == begin) return false;
    const Token& callee = t[j - 1];
    if (callee.kind != TokenKind::Identifier) return callee.is_punct(">");  // `f<T>(W)`: a call
    static const std::set<std::string> keywords = {"if", "while", "for", "switch", "return", "sizeof"};
    return !keywords.count(callee.text) && !is_pure_call(callee.text);
  }
  return false;
}

// The name declared at t[d.name] is never named before it and never
// changed after it (assigned, incremented, its address taken, or passed
// alone to a call that is not a pure function).
bool keeps_its_value(const std::vector<Token>& t, std::size_t body_begin, std::size_t body_end,
                     const regions::Declaration& d) {
  const std::string& name = t[d.name].text;
  for (std::size_t k = body_begin; k < d.name; ++k)
    if (names_at(t, k, name)) return false;
  for (std::size_t k = d.name + 1; k < body_end; ++k)
    if (names_at(t, k, name) && (changes_name_at(t, k, /*or_address=*/true) || passed_alone(t, k, body_begin)))
      return false;
  return true;
}

// The declared type in tokens [b, e), without `const`, when it is one
// integer type ("" otherwise).
std::string integer_type(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  std::string type;
  for (std::size_t k = b; k < e; ++k) {
    if (t[k].is_ident("const")) continue;
    if (t[k].kind != TokenKind::Identifier) return "";
    type += (type.empty() ? "" : " ") + t[k].text;
  }
  if (type == "unsigned" || type == "unsigned int") return type;
  // Not the 8-bit ones: no kernel keeps a position or a size in a char.
  const ScalarInfo* s = find_scalar_type(type);
  return s && s->integer && s->size >= 2 ? type : "";
}

// Whether `e / K` at t[k] (the position's token) is the whole operand it
// reads: what precedes it binds less tightly, and nothing after K extends it.
bool whole_operand(const std::vector<Token>& t, std::size_t k) {
  if (k == 0 || k + 3 >= t.size()) return false;
  static const std::set<std::string> after_ok = {
      "(",  "[",  ",",  "=",  "{",  "?",  ":",  ";",  "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=",
      "|=", "^=", "<",  ">",  "<=", ">=", "==", "!=", "&&", "||", "|",  "^",  "<<", ">>"};
  const Token& before = t[k - 1];
  bool ok = before.is_ident("return") || (before.kind == TokenKind::Punct && after_ok.count(before.text));
  // A binary + or - (its left operand ends just before it), not a sign.
  if ((before.is_punct("+") || before.is_punct("-")) && k >= 2) {
    const Token& left = t[k - 2];
    ok = (left.kind == TokenKind::Identifier && !left.is_ident("return")) || left.kind == TokenKind::Number ||
         left.is_punct(")") || left.is_punct("]");
  }
  static const std::set<std::string> extends = {"[", "(", ".", "->", "++", "--", "::"};
  const Token& next = t[k + 3];
  return ok && !(next.kind == TokenKind::Punct && extends.count(next.text));
}

// Tokens k.. are `thread_position_in_grid . x`.
bool position_x_at(const std::vector<Token>& t, std::size_t k) {
  return k + 2 < t.size() && t[k].is_ident("thread_position_in_grid") && t[k + 1].is_punct(".") &&
         t[k + 2].is_ident("x");
}

}  // namespace

bool may_have_thread_rows(const std::vector<Token>& t) {
  for (std::size_t k = 1; k + 3 < t.size(); ++k)
    if (t[k - 1].is_punct("=") && position_x_at(t, k) && t[k + 3].is_punct(";")) return true;
  return false;
}

std::optional<ThreadRows> thread_rows(const std::vector<Token>& t, const std::vector<BodyStmt>& body,
                                      std::size_t body_begin, std::size_t body_end, const UniformNames& names,
                                      const UniformDeclarations& uniform, const std::set<std::string>& constants) {
  // The integer uniform declarations and template constants (not hidden by
  // a declaration of the body): the named divisors.
  std::set<std::string> divisors;
  for (const BodyStmt& s : body) {
    if (!uniform.statements.count(s.begin)) continue;
    const auto d = regions::declaration(t, s.begin, s.end - 1);
    if (d && !integer_type(t, d->type_begin, d->name).empty()) divisors.insert(t[d->name].text);
  }
  for (const std::string& c : constants)
    if (!names.body_locals.count(c) && !names.thread_values.count(c)) divisors.insert(c);
  // A decimal literal of at least 8 (with a u suffix or none).
  auto literal = [](const Token& k) {
    if (k.kind != TokenKind::Number || k.text.size() > 9) return false;
    std::size_t digits = 0;
    while (digits < k.text.size() && k.text[digits] >= '0' && k.text[digits] <= '9') ++digits;
    const std::string rest = k.text.substr(digits);
    return digits > 0 && k.text[0] != '0' && (rest.empty() || rest == "u" || rest == "U") &&
           std::stoul(k.text.substr(0, digits)) >= 8;
  };
  // The position: `E e = thread_position_in_grid.x;` at the body's scope.
  for (const BodyStmt& s : body) {
    if (s.kind != Kind::Simple || s.end < s.begin + 4 || regions::has_sync(t, s.begin, s.end)) continue;
    const auto d = regions::declaration(t, s.begin, s.end - 1);
    if (!d || d->multiple || d->init != '=' || d->array || d->threadgroup || d->constant || d->is_static) continue;
    const std::size_t init = d->after + 1;
    if (init + 3 != s.end - 1 || !position_x_at(t, init) || !names.thread_values.count("thread_position_in_grid") ||
        names.body_locals.count("thread_position_in_grid"))
      continue;
    ThreadRows rows;
    rows.index_type = integer_type(t, d->type_begin, d->name);
    // (`auto e = thread_position_in_grid.x;` is a uint.)
    if (d->uses_auto && d->name == d->type_begin + 1 + t[d->type_begin].is_ident("const")) rows.index_type = "uint";
    const std::string& name = t[d->name].text;
    if (rows.index_type.empty() || !names.declared_once.count(name) || !keeps_its_value(t, body_begin, body_end, *d))
      return std::nullopt;
    // Its divisions by each divisor, the most frequent taken.
    std::map<std::string, std::pair<std::set<std::size_t>, std::set<std::size_t>>> uses;
    for (std::size_t k = d->name + 1; k + 3 < body_end; ++k) {
      if (!names_at(t, k, name) || !(t[k + 1].is_punct("/") || t[k + 1].is_punct("%"))) continue;
      const bool named = divisors.count(t[k + 2].text) && names_at(t, k + 2, t[k + 2].text);
      if (!(named || literal(t[k + 2])) || !whole_operand(t, k)) continue;
      auto& [quotients, remainders] = uses[t[k + 2].text];
      (t[k + 1].is_punct("/") ? quotients : remainders).insert(k);
    }
    std::size_t most = 0;
    for (auto& [divisor, found] : uses)
      if (found.first.size() + found.second.size() > most) {
        most = found.first.size() + found.second.size();
        rows.divisor = divisor;
        rows.quotients = found.first;
        rows.remainders = found.second;
      }
    if (most == 0) return std::nullopt;
    return rows;
  }
  return std::nullopt;
}

UniformDeclarations uniform_declarations(const std::vector<Token>& t, const std::vector<BodyStmt>& body,
                                         std::size_t body_begin, std::size_t body_end, UniformNames& names,
                                         const std::set<std::string>& written, bool element_reads) {
  UniformDeclarations found;
  const std::set<std::string> locals = names.body_locals;  // before any is taken as uniform
  // The body's own constants (declared once, at its scope): the group's.
  for (const BodyStmt& s : body) {
    if (!regions::group_declaration(t, s) || regions::type_alias(t, s)) continue;
    const auto d = regions::declaration(t, s.begin, s.end - 1);
    if (d && d->constant && !d->threadgroup && !d->multiple && names.declared_once.count(t[d->name].text))
      names.body_locals.erase(t[d->name].text);
  }
  for (const BodyStmt& s : body) {
    if (s.kind == Kind::Directive) break;
    bool returns = false;
    for (std::size_t k = s.begin; k < s.end; ++k) returns = returns || t[k].is_ident("return");
    if (returns) break;
    if (s.kind != Kind::Simple || regions::has_sync(t, s.begin, s.end) || regions::group_declaration(t, s)) continue;
    const auto d = regions::declaration(t, s.begin, s.end - 1);
    if (!d || d->multiple || d->init != '=' || d->array || d->threadgroup || d->constant || d->is_static) continue;
    bool reference = false;
    for (std::size_t k = d->type_begin; k < d->name; ++k)
      reference = reference || t[k].is_punct("&") || t[k].is_punct("&&");
    const std::string& name = t[d->name].text;
    if (reference || !names.declared_once.count(name)) continue;
    const std::size_t init = d->after + 1, end = s.end - 1;
    if (!is_uniform_condition(t, init, end, names)) continue;
    // An element read only of a buffer no thread writes, named directly.
    bool reads_ok = true;
    for (std::size_t k = init; k < end && reads_ok; ++k) {
      if (!t[k].is_punct("[")) continue;
      const Token& buffer = t[k - 1];
      reads_ok = element_reads && k > init && buffer.kind == TokenKind::Identifier && !locals.count(buffer.text) &&
                 !written.count(buffer.text) && !is_member_access(t, k - 1);
    }
    if (!reads_ok) continue;
    // Moved before the first region, it must mean there what it means here,
    // and keep one value from there on.
    if (!keeps_its_value(t, body_begin, body_end, *d)) continue;
    found.statements.insert(s.begin);
    found.names.insert(d->name);
    names.body_locals.erase(name);
  }
  return found;
}

}  // namespace alloy::msl

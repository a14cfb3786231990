#include "msl/cpu_uniform_values.h"

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

}  // namespace

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
    bool stays = true;
    for (std::size_t k = body_begin; k < d->name && stays; ++k) stays = !names_at(t, k, name);
    for (std::size_t k = d->name + 1; k < body_end && stays; ++k)
      stays = !names_at(t, k, name) || (!changes_name_at(t, k, /*or_address=*/true) && !passed_alone(t, k, body_begin));
    if (!stays) continue;
    found.statements.insert(s.begin);
    found.names.insert(d->name);
    names.body_locals.erase(name);
  }
  return found;
}

}  // namespace alloy::msl

#include "msl/cpu_uniform_loops.h"

#include <map>

#include "msl/builtins.h"
#include "msl/cpu_regions_syntax.h"
#include "msl/token_rules.h"

namespace alloy::msl {

bool is_pure_call(const std::string& name) {
  static const std::set<std::string> pure = {"min",    "max",      "clamp", "abs", "ceildiv",
                                             "select", "popcount", "clz",   "ctz"};
  return pure.count(name) > 0 || find_scalar_type(name) != nullptr;  // and conversions: `uint(x)`
}

namespace {

bool assigns(const Token& x) {
  static const std::set<std::string> ops = {"=",  "+=", "-=",  "*=",  "/=", "%=", "&=",
                                            "|=", "^=", "<<=", ">>=", "++", "--"};
  return x.kind == TokenKind::Punct && ops.count(x.text) > 0;
}

// Tokens [b, e) read only values every thread of the group shares: see the header.
bool uniform_tokens(const std::vector<Token>& t, std::size_t b, std::size_t e, const std::string& counter,
                    const UniformNames& names) {
  for (std::size_t k = b; k < e; ++k) {
    const Token& x = t[k];
    switch (x.kind) {
      case TokenKind::Number:
        continue;
      case TokenKind::Punct:
        if (assigns(x) || x.is("->") || x.is("&") || x.is("*")) {
          // `*` and `&` only as binary operators (after an operand).
          if ((x.is("*") || x.is("&")) && k > b &&
              (t[k - 1].kind == TokenKind::Number || t[k - 1].kind == TokenKind::Identifier || t[k - 1].is(")")))
            continue;
          return false;
        }
        if (x.is("[") && !names.indexing) return false;
        continue;
      case TokenKind::Identifier: {
        if (is_member_access(t, k)) continue;  // `v.x`: the value's own uniformity decides
        // A call, qualified or not (`metal::simd_is_first()` differs by lane).
        if (k + 1 < e && t[k + 1].is_punct("(")) {
          if (!is_pure_call(x.text)) return false;
          continue;
        }
        if (k > b && t[k - 1].is_punct("::")) continue;  // a qualified name's tail
        if (x.text == counter || x.is("true") || x.is("false")) continue;
        if (names.body_locals.count(x.text) || names.thread_values.count(x.text) || names.macros.count(x.text))
          return false;
        continue;
      }
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

bool is_uniform_loop(const std::vector<Token>& t, const LoopTokens& loop, const UniformNames& names) {
  const std::string& counter = t[loop.counter].text;
  // Declared once in the whole body (this init), so every use in the body
  // is this counter (no value of that name lives in the group's frame), and
  // the body never changes it.
  if (names.repeated.count(counter)) return false;
  for (std::size_t k = loop.body_b; k < loop.body_e; ++k) {
    if (!t[k].is_ident(counter) || is_member_access(t, k) || (k > 0 && t[k - 1].is_punct("::"))) continue;
    if (changes_name_at(t, k, /*or_address=*/true)) return false;
  }
  if (!uniform_tokens(t, loop.counter_init, loop.init_e, counter, names)) return false;
  if (!uniform_tokens(t, loop.cond_b, loop.cond_e, counter, names)) return false;
  // The increment: ++c, c++, --c, c--, or c op= (uniform).
  const std::size_t b = loop.inc_b, e = loop.inc_e;
  if (e == b + 2) {
    const bool pre = (t[b].is_punct("++") || t[b].is_punct("--")) && t[b + 1].is_ident(counter);
    const bool post = t[b].is_ident(counter) && (t[b + 1].is_punct("++") || t[b + 1].is_punct("--"));
    return pre || post;
  }
  static const std::set<std::string> compound = {"+=", "-=", "*=", "/=", "<<=", ">>="};
  return e > b + 2 && t[b].is_ident(counter) && t[b + 1].kind == TokenKind::Punct && compound.count(t[b + 1].text) &&
         uniform_tokens(t, b + 2, e, counter, names);
}

bool is_uniform_condition(const std::vector<Token>& t, std::size_t b, std::size_t e, const UniformNames& names) {
  return b < e && uniform_tokens(t, b, e, std::string(), names);
}

bool changes_name_at(const std::vector<Token>& t, std::size_t k, bool or_address) {
  return (k + 1 < t.size() && assigns(t[k + 1])) ||
         (k > 0 && (t[k - 1].is_punct("++") || t[k - 1].is_punct("--") || (or_address && t[k - 1].is_punct("&"))));
}

bool is_uniform_for(const std::vector<Token>& t, const BodyStmt& s, const UniformNames& names) {
  std::size_t s1 = 0, s2 = 0;
  regions::for_clauses(t, s, s1, s2);
  auto d = regions::declaration(t, s.open + 1, s1);
  if (!d || d->init != '=' || d->array || d->multiple || d->threadgroup) return false;
  for (std::size_t k = d->type_begin; k < d->name; ++k)
    if (t[k].is_punct("&") || t[k].is_punct("*")) return false;
  LoopTokens loop;
  loop.init_b = s.open + 1;
  loop.init_e = s1;
  loop.cond_b = s1 + 1;
  loop.cond_e = s2;
  loop.inc_b = s2 + 1;
  loop.inc_e = s.close;
  loop.body_b = s.close + 1;
  loop.body_e = s.end;
  loop.counter = d->name;
  loop.counter_init = d->after + 1;
  return is_uniform_loop(t, loop, names);
}

const std::set<std::string>& per_thread_attributes() {
  static const std::set<std::string> per_thread = {
      "thread_position_in_grid",   "thread_position_in_threadgroup", "thread_index_in_threadgroup",
      "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup", "thread_index_in_quadgroup",
      "quadgroup_index_in_threadgroup"};
  return per_thread;
}

namespace {
// `all`: every declaration; `group`: those outside statements with no
// barrier or SIMD-group call, which on the CPU are C++ locals of one region.
void count_declarations(const std::vector<Token>& t, const std::vector<BodyStmt>& list, bool in_region,
                        std::map<std::string, int>& all, std::map<std::string, int>& group) {
  for (const BodyStmt& s : list) {
    const bool region = in_region || (s.kind != BodyStmt::Kind::Simple && !regions::has_sync(t, s.begin, s.end));
    auto count = [&](std::size_t b, std::size_t e) {
      for (const regions::Declarator& d : regions::declarators(t, b, e)) {
        ++all[t[d.decl.name].text];
        if (!region) ++group[t[d.decl.name].text];
      }
    };
    if (s.kind == BodyStmt::Kind::Simple) count(s.begin, s.end - 1);
    if (s.kind == BodyStmt::Kind::For) {
      std::size_t s1 = 0, s2 = 0;
      regions::for_clauses(t, s, s1, s2);
      count(s.open + 1, s1);
    }
    count_declarations(t, s.kids, region, all, group);
  }
}
}  // namespace

UniformNames body_names(const std::vector<Token>& t, const std::vector<BodyStmt>& body) {
  std::map<std::string, int> all, group;
  count_declarations(t, body, false, all, group);
  UniformNames names;
  for (const auto& [name, n] : all) {
    names.body_locals.insert(name);
    if (n == 1) names.declared_once.insert(name);
  }
  for (const auto& [name, n] : group)
    if (n > 1) names.repeated.insert(name);
  return names;
}

std::set<std::string> macros_naming_anything(const LexedKernel& lexed) {
  std::set<std::string> out = lexed.source.macros_naming_anything;
  out.insert(lexed.header.macros_naming_anything.begin(), lexed.header.macros_naming_anything.end());
  for (const IncludedFile& f : lexed.includes)
    out.insert(f.lexed.macros_naming_anything.begin(), f.lexed.macros_naming_anything.end());
  return out;
}

}  // namespace alloy::msl

#include "msl/converged_calls.h"

#include "msl/builtins.h"
#include "msl/cpu_regions_syntax.h"
#include "msl/cpu_uniform_loops.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

using Kind = BodyStmt::Kind;

// A call of a SIMD-group function (simd_*, quad_*, simdgroup_* matrix
// functions) at t[k]; the barriers need no reconvergence.
bool is_simd_group_call(const std::vector<Token>& t, std::size_t k) {
  return t[k].kind == TokenKind::Identifier && !is_member_access(t, k) && k + 1 < t.size() &&
         t[k + 1].is_punct("(") && is_sync_function(t[k].text) && !regions::is_barrier_name(t[k].text);
}

class Walker {
 public:
  Walker(const std::vector<Token>& t, const UniformNames& names) : t_(t), names_(names) {}

  // Walks statements every lane present reaches; false once one leaves the kernel.
  bool list(const std::vector<BodyStmt>& stmts, bool lone_body = false) {
    for (const BodyStmt& s : stmts) {
      for (std::size_t k = s.begin; k < s.end; ++k)
        if (t_[k].is_ident("return") || t_[k].is_ident("goto")) return false;
      switch (s.kind) {
        case Kind::Simple:
          for (std::size_t k = s.begin; k < s.end; ++k)
            if (is_simd_group_call(t_, k)) {
              found_.push_back({s.begin, s.end, lone_body});
              break;
            }
          break;
        case Kind::Block:
          if (!list(s.kids)) return false;
          break;
        case Kind::For:
          if (!s.kids.empty() && !regions::jumps_out(t_, s.kids[0]) && is_uniform_for(t_, s, names_)) {
            const BodyStmt& body = s.kids[0];
            if (!(body.kind == Kind::Block ? list(body.kids) : list({body}, true))) return false;
          }
          break;
        case Kind::If:
          // Every thread takes it the same way: each branch's statements
          // are reached by every lane present.
          if (is_uniform_condition(t_, s.open + 1, s.close, names_))
            for (const BodyStmt& branch : s.kids)
              if (!(branch.kind == Kind::Block ? list(branch.kids) : list({branch}, true))) return false;
          break;
        default:
          break;
      }
    }
    return true;
  }

  std::vector<ConvergedStatement> found_;

 private:
  const std::vector<Token>& t_;
  const UniformNames& names_;
};

// When the statement parser declines the body: its own scope only, token by
// token, up to the first `return`.
std::vector<ConvergedStatement> body_scope_statements(const std::vector<Token>& toks) {
  static const std::set<std::string> control = {"if", "else", "for", "while", "do", "switch"};
  std::vector<ConvergedStatement> found;
  int depth = 0;
  std::size_t statement = 0;
  bool listed = false;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.is_ident("return") || t.is_ident("goto")) break;
    if (opens_bracket(t)) ++depth;
    if (closes_bracket(t)) --depth;
    if (depth == 0 && (t.is_punct(";") || t.is_punct("}"))) {
      statement = i + 1;
      listed = false;
      continue;
    }
    if (depth != 0 || listed || !is_simd_group_call(toks, i)) continue;
    std::size_t at = statement;
    while (at < i && toks[at].kind == TokenKind::Directive) ++at;
    listed = true;
    if (!control.count(toks[at].text)) found.push_back({at, i + 1, false});
  }
  return found;
}

}  // namespace

std::vector<ConvergedStatement> converged_simd_statements(const std::vector<Token>& toks,
                                                         const std::set<std::string>& macros) {
  // The statement parser and its helpers decline forms they do not read (a
  // for header without its two `;`, ...): then the body's own scope only.
  try {
    const std::vector<BodyStmt> body = regions::parse_statements(toks, 0, toks.size());
    UniformNames names = body_names(toks, body);
    // A counter's name declared again elsewhere (`j` of two loops) matters to
    // the CPU's frame, not here: its own loop's body is checked for changes
    // to it, a shadowing declaration's included.
    names.repeated.clear();
    names.thread_values = per_thread_attributes();
    names.macros = macros;
    // A lane that skips the barrier hangs the others, so the rules are
    // stricter than the CPU's: a name the body assigns (a parameter moved
    // per thread: `lim -= lane;`) differs between lanes, and no subscript is
    // read (a value another lane may be writing).
    for (std::size_t k = 0; k < toks.size(); ++k)
      if (toks[k].kind == TokenKind::Identifier && !is_member_access(toks, k) && changes_name_at(toks, k, false))
        names.body_locals.insert(toks[k].text);
    names.indexing = false;
    Walker w(toks, names);
    w.list(body);
    return w.found_;
  } catch (const regions::NotRegions&) {
    return body_scope_statements(toks);
  }
}

}  // namespace alloy::msl

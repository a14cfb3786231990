#include "msl/cpu_regions_syntax.h"

#include <set>

#include "msl/builtins.h"
#include "msl/cpu_uniform_loops.h"
#include "msl/token_rules.h"

namespace alloy::msl::regions {

std::string line_of(const Token& t) { return "source line " + std::to_string(t.line); }

bool is_barrier_name(const std::string& n) { return n == "threadgroup_barrier" || n == "simdgroup_barrier"; }

// An awaitable synchronising call at toks[i], or a simdgroup matrix
// product (msl/builtins.h): both exchange values between lanes.
bool is_sync_call(const std::vector<Token>& toks, std::size_t i) {
  const Token& t = toks[i];
  return t.kind == TokenKind::Identifier && !is_member_access(toks, i) &&
         (is_awaitable_sync_function(t.text) || is_region_matrix_product(t.text)) && i + 1 < toks.size() &&
         toks[i + 1].is_punct("(");
}

bool has_sync(const std::vector<Token>& toks, std::size_t b, std::size_t e) {
  for (std::size_t i = b; i < e; ++i)
    if (is_sync_call(toks, i)) return true;
  return false;
}

// ---- statements -------------------------------------------------------------

namespace {

using Kind = BodyStmt::Kind;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& toks) : t_(toks) {}

  std::vector<BodyStmt> list(std::size_t b, std::size_t e) {
    std::vector<BodyStmt> out;
    std::size_t i = b;
    while (i < e) out.push_back(stmt(i, e));
    return out;
  }

 private:
  // The bracket closing t_[open]. Between a block's statements a directive
  // (`#pragma clang loop unroll_count(2)`) is a statement of its own; inside
  // parentheses or brackets it is refused.
  std::size_t match(std::size_t open, std::size_t e) const {
    int depth = 0;
    const bool block = t_[open].is_punct("{");
    for (std::size_t k = open; k < e; ++k) {
      if (t_[k].kind == TokenKind::Directive && !block)
        throw NotRegions{"a preprocessor line inside a statement (" + line_of(t_[k]) + ")"};
      if (opens_bracket(t_[k])) ++depth;
      if (closes_bracket(t_[k]) && --depth == 0) return k;
    }
    throw NotRegions{"an unclosed bracket"};
  }

  void expect(std::size_t i, std::size_t e, const char* punct) const {
    if (i >= e || !t_[i].is_punct(punct)) throw NotRegions{std::string("an unexpected form where `") + punct + "` was due"};
  }

  BodyStmt stmt(std::size_t& i, std::size_t e) {
    // Attributes before a statement (`[[unroll]] for ...`) belong to it.
    const std::size_t first = i;
    while (i < e && t_[i].is_punct("[[")) i = match(i, e) + 1;
    if (i >= e) throw NotRegions{"an attribute without a statement"};
    BodyStmt s = statement(i, e);
    s.begin = first;
    return s;
  }

  BodyStmt statement(std::size_t& i, std::size_t e) {
    BodyStmt s;
    s.begin = i;
    const Token& t = t_[i];
    if (t.kind == TokenKind::Directive) {
      s.kind = Kind::Directive;
      i = s.end = i + 1;
      return s;
    }
    if (t.is_punct("{")) {
      s.kind = Kind::Block;
      std::size_t c = match(i, e);
      s.kids = list(i + 1, c);
      i = s.end = c + 1;
      return s;
    }
    if (t.is_ident("if") || t.is_ident("for") || t.is_ident("while") || t.is_ident("switch")) {
      s.kind = t.is("if") ? Kind::If : t.is("for") ? Kind::For : t.is("while") ? Kind::While : Kind::Switch;
      if (s.kind == Kind::If && i + 1 < e && t_[i + 1].is_ident("constexpr")) ++i;  // (its `(` follows)
      expect(i + 1, e, "(");
      s.open = i + 1;
      s.close = match(i + 1, e);
      i = s.close + 1;
      if (i >= e) throw NotRegions{"a statement without a body"};
      s.kids.push_back(stmt(i, e));
      if (s.kind == Kind::If && i < e && t_[i].is_ident("else")) {
        ++i;
        if (i >= e) throw NotRegions{"an else without a body"};
        s.kids.push_back(stmt(i, e));
      }
      s.end = i;
      return s;
    }
    if (t.is_ident("do")) {
      s.kind = Kind::Do;
      ++i;
      s.kids.push_back(stmt(i, e));
      if (i >= e || !t_[i].is_ident("while")) throw NotRegions{"a do without its while"};
      expect(i + 1, e, "(");
      s.open = i + 1;
      s.close = match(i + 1, e);
      expect(s.close + 1, e, ";");
      i = s.end = s.close + 2;
      return s;
    }
    // A simple statement: to the `;` outside brackets.
    std::size_t k = i;
    while (k < e && !t_[k].is_punct(";")) {
      if (t_[k].kind == TokenKind::Directive) throw NotRegions{"a preprocessor line inside a statement (" + line_of(t_[k]) + ")"};
      static const std::set<std::string> control = {"if", "else", "for", "while", "do", "switch", "case", "default"};
      if (t_[k].kind == TokenKind::Identifier && control.count(t_[k].text))
        throw NotRegions{"a statement of a form regions do not parse (" + line_of(t_[k]) + ")"};
      k = opens_bracket(t_[k]) ? match(k, e) + 1 : k + 1;
    }
    if (k >= e) throw NotRegions{"a statement without its `;`"};
    s.kind = Kind::Simple;
    i = s.end = k + 1;
    return s;
  }

  const std::vector<Token>& t_;
};

}  // namespace

std::vector<BodyStmt> parse_statements(const std::vector<Token>& toks, std::size_t b, std::size_t e) {
  return Parser(toks).list(b, e);
}

// ---- declarations -----------------------------------------------------------


static const std::set<std::string>& statement_keywords() {
  static const std::set<std::string> k = {"return", "if", "else", "for", "while", "do", "switch", "case", "default",
                                          "break", "continue", "goto", "co_return", "co_await", "sizeof", "new",
                                          "delete", "throw", "using", "typedef", "namespace", "template",
                                          "static_assert", "const_cast", "static_cast", "reinterpret_cast"};
  return k;
}

// The declaration in tokens [b, e) (a statement without its `;`, or a for
// loop's init clause), if it is one.
namespace {
// Past a declarator's array dimensions (`[4][N]`) from token p, before e.
std::size_t past_dims(const std::vector<Token>& t, std::size_t p, std::size_t e) {
  while (p < e && t[p].is_punct("[")) {
    int depth = 0;
    for (; p < e; ++p) {
      if (t[p].is_punct("[")) ++depth;
      if (t[p].is_punct("]") && --depth == 0) break;
    }
    ++p;
  }
  return p < e ? p : e;
}
}  // namespace

std::optional<Declaration> declaration(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  if (b >= e || t[b].kind != TokenKind::Identifier || statement_keywords().count(t[b].text)) return std::nullopt;
  std::size_t p = b;
  while (p < e) {
    const Token& x = t[p];
    if (x.is_punct("<") && p > b && t[p - 1].kind == TokenKind::Identifier) {
      std::size_t c = closing_angle(t, p);
      if (c == 0 || c >= e) return std::nullopt;
      p = c + 1;
      continue;
    }
    if (x.is_punct("=") || x.is_punct("[") || x.is_punct("(") || x.is_punct("{") || x.is_punct(",")) break;
    if (x.kind == TokenKind::Punct && !(x.is("*") || x.is("&") || x.is("::") || x.is(">"))) return std::nullopt;
    if (x.kind != TokenKind::Punct && x.kind != TokenKind::Identifier) return std::nullopt;
    ++p;
  }
  const std::size_t name = p - 1;
  if (name <= b || t[name].kind != TokenKind::Identifier || statement_keywords().count(t[name].text)) return std::nullopt;
  Declaration d;
  d.type_begin = b;
  d.name = name;
  for (std::size_t k = b; k < name; ++k) {
    // Threadgroup storage (not a pointer to it, which each thread has).
    d.threadgroup = d.threadgroup || (t[k].is_ident("threadgroup") && declares_threadgroup_storage(t, k));
    d.constant = d.constant || t[k].is_ident("constexpr");
    d.uses_auto = d.uses_auto || t[k].is_ident("auto");
    d.is_static = d.is_static || t[k].is_ident("static");
  }
  const std::size_t k = past_dims(t, p, e);
  d.array = k > p;
  d.after = k;
  if (k < e) {
    if (t[k].is_punct("=")) d.init = '=';
    else if (t[k].is_punct("(")) d.init = '(';
    else if (t[k].is_punct("{")) d.init = '{';
  }
  int depth = 0;
  for (std::size_t j = p; j < e; ++j) {
    if (opens_bracket(t[j])) ++depth;
    if (closes_bracket(t[j])) --depth;
    if (depth == 0 && t[j].is_punct(",")) d.multiple = true;
  }
  return d;
}

std::vector<Declarator> declarators(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  std::vector<Declarator> out;
  const std::optional<Declaration> first = declaration(t, b, e);
  if (!first) return out;
  Declarator d{*first, 0, false};
  for (std::size_t k = first->type_begin; k < first->name; ++k)
    d.pointer = d.pointer || t[k].is_punct("*") || t[k].is_punct("&");
  out.push_back(d);
  while (d.decl.multiple) {
    // Past this declarator's initialiser, to the `,` at depth 0.
    std::size_t k = d.decl.after;
    int depth = 0;
    for (; k < e; ++k) {
      if (opens_bracket(t[k])) ++depth;
      if (closes_bracket(t[k])) --depth;
      if (depth == 0 && t[k].is_punct(",")) break;
    }
    if (k >= e) break;
    Declarator next{d.decl, k, false};
    std::size_t p = k + 1;
    while (p < e && (t[p].is_punct("*") || t[p].is_punct("&") || t[p].is_ident("const"))) {
      next.pointer = true;
      ++p;
    }
    if (p >= e || t[p].kind != TokenKind::Identifier) break;
    next.decl.name = p++;
    const std::size_t after = past_dims(t, p, e);
    next.decl.array = after > p;
    next.decl.after = p = after;
    next.decl.init = 0;
    if (p < e && t[p].is_punct("=")) next.decl.init = '=';
    else if (p < e && t[p].is_punct("(")) next.decl.init = '(';
    else if (p < e && t[p].is_punct("{")) next.decl.init = '{';
    out.push_back(next);
    d = next;
    // The last declarator: no `,` at depth 0 after it.
    bool more = false;
    depth = 0;
    for (std::size_t j = p; j < e; ++j) {
      if (opens_bracket(t[j])) ++depth;
      if (closes_bracket(t[j])) --depth;
      if (depth == 0 && t[j].is_punct(",")) more = true;
    }
    if (!more) break;
  }
  return out;
}

bool type_alias(const std::vector<Token>& t, const BodyStmt& s) {
  return s.kind == Kind::Simple && s.end > s.begin + 2 &&
         (t[s.begin].is_ident("typedef") || (t[s.begin].is_ident("using") && t[s.begin + 2].is_punct("=")));
}

bool group_declaration(const std::vector<Token>& t, const BodyStmt& s) {
  if (s.kind != Kind::Simple || has_sync(t, s.begin, s.end)) return false;
  if (type_alias(t, s)) return true;
  const std::optional<Declaration> d = declaration(t, s.begin, s.end - 1);
  return d && (d->threadgroup || d->constant);
}

// A for loop's header clauses: [open+1, s1), [s1+1, s2), [s2+1, close).
void for_clauses(const std::vector<Token>& t, const BodyStmt& s, std::size_t& s1, std::size_t& s2) {
  s1 = s2 = 0;
  int depth = 0;
  for (std::size_t k = s.open + 1; k < s.close; ++k) {
    if (opens_bracket(t[k])) ++depth;
    if (closes_bracket(t[k])) --depth;
    if (depth == 0 && t[k].is_punct(";")) (s1 ? s2 : s1) = k;
  }
  if (!s1 || !s2) throw NotRegions{"a for loop header of another form"};
}


const std::vector<BodyStmt>& loop_body(const BodyStmt& s, std::vector<BodyStmt>& one) {
  const BodyStmt& b = s.kids[0];
  if (b.kind == Kind::Block) return b.kids;
  one.assign(1, b);
  return one;
}

// A `break` or `continue` of this loop itself (not of one nested in it).
bool jumps_out(const std::vector<Token>& t, const BodyStmt& s) {
  if (s.kind == Kind::For || s.kind == Kind::While || s.kind == Kind::Do || s.kind == Kind::Switch) return false;
  if (s.kind == Kind::Simple)
    for (std::size_t k = s.begin; k < s.end; ++k)
      if (t[k].is_ident("break") || t[k].is_ident("continue")) return true;
  for (const BodyStmt& c : s.kids)
    if (jumps_out(t, c)) return true;
  return false;
}

bool is_barrier_statement(const std::vector<Token>& t, const BodyStmt& s) {
  return s.kind == Kind::Simple && is_sync_call(t, s.begin) && is_barrier_name(t[s.begin].text) &&
         s.end >= s.begin + 4 && t[s.end - 2].is_punct(")") && t[s.end - 1].is_punct(";");
}

// The SIMD-group calls of a statement: (first token of the name, qualifier
// included; closing paren) pairs.
std::vector<std::pair<std::size_t, std::size_t>> simd_calls(const std::vector<Token>& t, const BodyStmt& s) {
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  for (std::size_t k = s.begin; k < s.end; ++k) {
    if (!is_sync_call(t, k)) continue;
    const std::size_t c = matching_paren(t, k + 1);  // inside the statement: the parser matched its brackets
    // The call starts at its qualifier, if any (`metal::simd_max(...)`,
    // `::metal::simd_sum(...)`): the rewrite wraps the whole name.
    std::size_t first = k;
    if (first >= s.begin + 2 && t[first - 1].is_punct("::") && t[first - 2].is_ident("metal")) {
      first -= 2;
      if (first > s.begin && t[first - 1].is_punct("::")) --first;
    }
    calls.emplace_back(first, c);
    k = c;  // a call in the arguments is nested: refused below
  }
  return calls;
}

namespace {
bool is_assignment_op(const Token& x) {
  static const std::set<std::string> ops = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  return x.kind == TokenKind::Punct && ops.count(x.text);
}
// The name statement s assigns, where assigning it is all s does outside
// its SIMD-group calls' arguments; "" otherwise.
std::string only_assigned_name(const std::vector<Token>& t, const BodyStmt& s,
                               const std::vector<std::pair<std::size_t, std::size_t>>& calls) {
  const std::size_t end = s.end - 1;  // the `;`
  if (end <= s.begin || !t[end].is_punct(";")) return "";
  std::size_t assign = 0;
  int depth = 0;
  std::size_t next_call = 0;
  for (std::size_t k = s.begin; k < end; ++k) {
    if (next_call < calls.size() && k == calls[next_call].first) {
      k = calls[next_call++].second;  // (its arguments are the region's own to evaluate)
      continue;
    }
    const Token& x = t[k];
    if (x.kind == TokenKind::Identifier || x.kind == TokenKind::Number) continue;
    if (x.kind != TokenKind::Punct) return "";
    if (x.is_punct("(")) {
      // Grouping only: a `(` after a name or a closing bracket is a call.
      if (k > s.begin && (t[k - 1].kind == TokenKind::Identifier || t[k - 1].is_punct(")") ||
                          t[k - 1].is_punct("]") || t[k - 1].is_punct(">")))
        return "";
      ++depth;
      continue;
    }
    if (x.is_punct(")")) {
      --depth;
      continue;
    }
    if (is_assignment_op(x)) {
      if (assign || depth != 0) return "";
      assign = k;
      continue;
    }
    static const std::set<std::string> values = {"+",  "-",  "*", "/",  "%",  "<<", ">>", "<", ">", "<=", ">=",
                                                 "==", "!=", "&", "|",  "^",  "~",  "!",  "?", ":", "&&", "||", "::"};
    if (!values.count(x.text)) return "";  // `[`, `.`, `->`, `++`, `--`, `,`, braces...
  }
  if (!assign || assign == s.begin || t[assign - 1].kind != TokenKind::Identifier) return "";
  if (assign == s.begin + 1) return t[s.begin].text;  // `a = ...;`, `a += ...;`
  // `T a = ...;`: a declaration of one name, no array, no pointer or reference.
  if (!t[assign].is_punct("=")) return "";
  const auto d = declaration(t, s.begin, end);
  if (!d || d->multiple || d->array || d->name != assign - 1) return "";
  for (std::size_t k = d->type_begin; k < d->name; ++k)
    if (t[k].kind == TokenKind::Punct && !t[k].is_punct("::") && !t[k].is_punct("<") && !t[k].is_punct(">") &&
        !t[k].is_punct(","))
      return "";
  return t[d->name].text;
}
}  // namespace

SimdBatchBody simd_batch_body(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  SimdBatchBody body;
  for (std::size_t k = b; k + 1 < e; ++k) {
    if (t[k].is_punct("&") && t[k + 1].kind == TokenKind::Identifier) body.address_taken.insert(t[k + 1].text);
    // `T& r = ...` or `T&& r = ...`
    if (k > b && k + 2 < e && (t[k].is_punct("&") || t[k].is_punct("&&")) &&
        (t[k - 1].kind == TokenKind::Identifier || t[k - 1].is_punct(">")) &&
        t[k + 1].kind == TokenKind::Identifier &&
        (t[k + 2].is_punct("=") || t[k + 2].is_punct("(") || t[k + 2].is_punct("{")))
      body.declares_reference = true;
  }
  return body;
}

std::size_t simd_batch_length(const std::vector<Token>& t, const std::vector<BodyStmt>& stmts, std::size_t i,
                              const SimdBatchBody& body) {
  auto simd_statement = [&](const BodyStmt& s) {
    return s.kind == BodyStmt::Kind::Simple && !is_barrier_statement(t, s) && !simd_calls(t, s).empty();
  };
  if (i >= stmts.size() || !simd_statement(stmts[i]) || body.declares_reference) return 1;
  std::set<std::string> assigned;  // by the statements taken so far
  std::size_t calls = 0, n = 0;
  for (std::size_t j = i; j < stmts.size() && simd_statement(stmts[j]); ++j) {
    const auto these = simd_calls(t, stmts[j]);
    if (calls + these.size() > kCallsPerStatement) break;
    bool reads_assigned = false;
    for (auto [call, close] : these)
      for (std::size_t k = call; k < close; ++k)
        reads_assigned = reads_assigned || (t[k].kind == TokenKind::Identifier && assigned.count(t[k].text));
    if (reads_assigned) break;
    calls += these.size();
    ++n;
    // What a next statement may not read; one that does more than assign a
    // name ends the batch after itself.
    const std::string name = only_assigned_name(t, stmts[j], these);
    if (name.empty() || body.address_taken.count(name)) break;
    assigned.insert(name);
  }
  return n ? n : 1;
}

namespace {
// A preprocessor line's directive: "if" for `#  if X`.
std::string directive_word(const std::string& line) {
  const std::size_t k = line.find_first_not_of(" \t#");
  if (k == std::string::npos || line.find('#') > k) return "";
  return line.substr(k, line.find_first_of(" \t(", k) - k);
}
}  // namespace

int conditional_directive(const std::string& line) {
  const std::string word = directive_word(line);
  if (word == "if" || word == "ifdef" || word == "ifndef") return 1;
  return word == "endif" ? -1 : 0;
}
bool is_conditional_directive(const std::string& line) {
  const std::string word = directive_word(line);
  return conditional_directive(line) != 0 || word == "elif" || word == "else";
}

std::string region_attribute(const std::string& name) {
  // The SIMD width is the runtime's constant: the compiler folds what it
  // computes (`ceildiv(C, threads_per_simdgroup)`) rather than dividing.
  if (name == "threads_per_simdgroup") return "::metal::uint(::alloy_msl::kSimdWidth)";
  return per_thread_attribute(name) ? "::alloy_msl::cpu::region_" + name + "(alloy_g, alloy_tid, alloy_lid)"
                                    : "alloy_g.base." + name;
}

std::vector<std::size_t> eager_and_operators(const std::vector<Token>& t, std::size_t open, std::size_t close,
                                             const std::set<std::string>& opaque) {
  // Tokens an operand may hold: no call, index, division (a zero divisor
  // traps), assignment, or operator binding looser than `&` (`|`, `?:`)
  // that the operator's change would regroup.
  static const std::set<std::string> allowed = {"(", ")", "+", "-", "*", ".", "<", ">", "<=", ">=", "==", "!=", "!"};
  static const std::set<std::string> comparisons = {"<", ">", "<=", ">=", "==", "!="};
  // Whether [b, e) compares at its own level, inside any parentheses that
  // wrap all of it. (An operand that is not a comparison, an int `n && m`,
  // would change meaning as `n & m`.)
  auto compares = [&](std::size_t b, std::size_t e) {
    while (e - b >= 2 && t[b].is_punct("(") && matching_paren(t, b) == e - 1) ++b, --e;
    // A negation of one name or one parenthesised group is a bool too.
    if (e - b >= 2 && t[b].is_punct("!") && (e == b + 2 || (t[b + 1].is_punct("(") && matching_paren(t, b + 1) == e - 1)))
      return true;
    int depth = 0;
    for (std::size_t k = b; k < e; ++k) {
      if (t[k].is_punct("(")) ++depth;
      if (t[k].is_punct(")")) --depth;
      if (depth == 0 && t[k].kind == TokenKind::Punct && comparisons.count(t[k].text)) return true;
    }
    return false;
  };
  std::vector<std::size_t> ands;
  std::size_t operand = open + 1;
  int depth = 0;
  for (std::size_t k = open + 1; k <= close; ++k) {
    const Token& tok = t[k];
    if (k == close || (depth == 0 && tok.is_punct("&&"))) {
      if (k == operand || !compares(operand, k)) return {};
      if (k == close) break;
      ands.push_back(k);
      operand = k + 1;
      continue;
    }
    if (tok.kind == TokenKind::Number) continue;
    if (tok.kind == TokenKind::Identifier) {
      if (t[k + 1].is_punct("(") || t[k + 1].is_punct("[") || opaque.count(tok.text)) return {};
      continue;
    }
    if (tok.kind != TokenKind::Punct || !allowed.count(tok.text)) return {};
    // A `*` not after a value is a dereference, which may fault.
    if (tok.is_punct("*") && !(t[k - 1].kind == TokenKind::Identifier || t[k - 1].kind == TokenKind::Number ||
                               t[k - 1].is_punct(")")))
      return {};
    if (tok.is_punct("(")) ++depth;
    if (tok.is_punct(")")) --depth;
  }
  return ands;
}

}  // namespace alloy::msl::regions

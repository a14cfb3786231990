#include "msl/conditionals.h"

#include <map>
#include <utility>

#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

using Out = std::vector<std::optional<std::string>>;  // nullopt: the token as written

// Whether toks[b, e) is one numeric literal, signed or not: `0`, `-1`, `0.5f`.
bool is_literal_arm(const std::vector<Token>& toks, std::size_t b, std::size_t e) {
  if (e == b + 2 && (toks[b].is_punct("-") || toks[b].is_punct("+"))) ++b;
  return e == b + 1 && toks[b].kind == TokenKind::Number;
}

// The `:` of the conditional whose `?` is at q; 0 when not found.
std::size_t colon_of(const std::vector<Token>& toks, std::size_t q) {
  int depth = 0, nested = 0;
  for (std::size_t k = q + 1; k < toks.size(); ++k) {
    const Token& t = toks[k];
    if (t.kind == TokenKind::Directive) return 0;
    if (opens_bracket(t)) ++depth;
    else if (closes_bracket(t) && --depth < 0) return 0;
    else if (depth == 0 && t.is_punct(";")) return 0;
    else if (depth == 0 && t.is_punct("?")) ++nested;
    else if (depth == 0 && t.is_punct(":") && nested-- == 0) return k;
  }
  return 0;
}

// One past the last token of the third arm starting at `b`; 0 when its end
// cannot be told from tokens (a `>` that may close a template argument list,
// an assignment).
std::size_t third_arm_end(const std::vector<Token>& toks, std::size_t b) {
  int depth = 0, nested = 0, angles = 0;
  for (std::size_t k = b; k < toks.size(); ++k) {
    const Token& t = toks[k];
    if (t.kind == TokenKind::Directive) return k;
    if (opens_bracket(t)) { ++depth; continue; }
    if (closes_bracket(t)) {
      if (--depth < 0) return k;
      continue;
    }
    if (depth > 0) continue;
    if (t.is_punct(";") || t.is_punct(",")) return k;
    if (t.is_punct("?")) ++nested;
    if (t.is_punct(":") && nested-- == 0) return k;
    if (t.is_punct("<")) ++angles;
    if (t.is_punct(">") && angles-- == 0) return 0;
    if (t.is_punct(">>") || is_assignment(t)) return 0;
  }
  return toks.size();
}

// The first token of the condition of the conditional whose `?` is at q:
// back over operators that bind more tightly than `?:` and over bracketed
// groups, to an assignment, `,`, `?`, `:`, `;`, a brace, an unmatched
// opening bracket or a keyword that starts an expression (`return`).
std::size_t condition_start(const std::vector<Token>& toks, std::size_t q) {
  int depth = 0;
  for (std::size_t k = q; k-- > 0;) {
    const Token& t = toks[k];
    if (closes_bracket(t)) {
      ++depth;
      continue;
    }
    if (opens_bracket(t)) {
      if (depth-- == 0) return k + 1;
      continue;
    }
    if (depth > 0) continue;
    if (t.kind == TokenKind::Directive || is_assignment(t) || t.is_punct(",") || t.is_punct("?") ||
        t.is_punct(":") || t.is_punct(";") || t.is_punct("{") || t.is_punct("}") || t.is_ident("return") ||
        t.is_ident("co_return") || t.is_ident("case") || t.is_ident("else") || t.is_ident("do"))
      return k + 1;
  }
  return 0;
}

// A rewritten conditional, by the index of the first token of its
// condition: one past its third arm, and its type as C++ text.
struct Rewritten {
  std::size_t end;
  std::string type;
};

class Conditionals {
 public:
  Conditionals(const std::vector<Token>& toks, Out& out) : toks_(toks), out_(out), before_(out) {}

  // Innermost first: a conditional nested in an arm comes after that arm's
  // `?`, and its stand-in must be known when the arm is copied. (A
  // conditional in another's condition is in no arm: its order is free.)
  void run() {
    for (std::size_t q = toks_.size(); q-- > 0;)
      if (toks_[q].is_punct("?") && !out_[q]) rewrite(q);
  }

 private:
  // The arm toks[b, e) for `decltype`, one line, each conditional in it
  // that this rewrite converted replaced by a stand-in of its type; nullopt where a copy would not be the same expression: a
  // directive, a brace (a lambda's body or an initializer list: each lambda
  // has a type of its own), a `;` or a `co_await` (the CPU threads'
  // rewrites of SIMD-group calls, cpu_threads.h).
  std::optional<std::string> copy(std::size_t b, std::size_t e) const {
    std::string s;
    for (std::size_t k = b; k < e; ++k) {
      if (toks_[k].kind == TokenKind::Directive || toks_[k].is_punct("{")) return std::nullopt;
      if (auto r = rewritten_.find(k); r != rewritten_.end() && r->second.end <= e) {
        s += std::string(k > b ? " " : "") + "::alloy_msl::cond_value<" + r->second.type + ">()";
        k = r->second.end - 1;
        continue;
      }
      std::string t = written(toks_, out_, k);
      for (char& ch : t)
        if (ch == '\n') ch = ' ';
      s += (k > b ? " " : "") + t;
    }
    if (s.find(';') != std::string::npos || s.find("co_await") != std::string::npos) return std::nullopt;
    return s;
  }

  void record(std::size_t q, std::size_t e, std::string type) {
    rewritten_[condition_start(toks_, q)] = {e, std::move(type)};
  }

  // `prefix` before token b and `)` after token e - 1.
  void enclose(std::size_t b, std::size_t e, const std::string& prefix) {
    // (`c?1:x`: a space keeps `:` and `::` apart)
    const std::string gap = toks_[b].begin == toks_[b - 1].end ? " " : "";
    out_[b] = gap + prefix + written(toks_, out_, b);
    out_[e - 1] = written(toks_, out_, e - 1) + ")";
  }

  void rewrite(std::size_t q) {
    const std::size_t c = colon_of(toks_, q);
    if (c == 0 || c == q + 1) return;
    const std::size_t e = third_arm_end(toks_, c + 1);
    if (e <= c + 1) return;
    const bool lit2 = is_literal_arm(toks_, q + 1, c), lit3 = is_literal_arm(toks_, c + 1, e);
    if (lit2 && lit3) return;
    if (!lit2 && !lit3) {
      const auto a = copy(q + 1, c), b = copy(c + 1, e);
      if (!a || !b) return;
      const std::string x = "decltype((" + *a + "))", y = "decltype((" + *b + "))";
      enclose(q + 1, c, "static_cast< ::alloy_msl::cond_t<" + x + ", " + y + ">>(");
      enclose(c + 1, e, "static_cast< ::alloy_msl::cond_t<" + y + ", " + x + ">>(");
      record(q, e, "::alloy_msl::cond_result_t<" + x + ", " + y + ">");
      return;
    }
    const std::size_t lb = lit2 ? q + 1 : c + 1, le = lit2 ? c : e;  // the literal
    const std::size_t ab = lit2 ? c + 1 : q + 1, ae = lit2 ? e : c;  // the other arm
    std::string lit;
    for (std::size_t k = lb; k < le; ++k) lit += written(toks_, before_, k);
    const auto other = copy(ab, ae);
    enclose(ab, ae, "::alloy_msl::cond_arm<decltype(" + lit + ")>(");
    if (!other) return;  // the literal as written: fine unless `a` is a half or bfloat
    const std::string x = "decltype((" + *other + "))";
    enclose(lb, le, "::alloy_msl::cond_lit<" + x + ">(");
    record(q, e, "::alloy_msl::cond_lit_result_t<" + x + ", decltype(" + lit + ")>");
  }

  const std::vector<Token>& toks_;
  Out& out_;
  const Out before_;  // literals as translated, before any conditional was rewritten
  std::map<std::size_t, Rewritten> rewritten_;
};

}  // namespace

void wrap_conditionals(const std::vector<Token>& toks, Out& out) { Conditionals(toks, out).run(); }

}  // namespace alloy::msl

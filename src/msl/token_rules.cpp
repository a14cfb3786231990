#include "msl/token_rules.h"

#include <set>
#include <string>

namespace alloy::msl {

bool is_assignment(const Token& t) {
  static const std::set<std::string> ops = {"=",  "+=", "-=", "*=", "/=",  "%=",
                                            "&=", "|=", "^=", "<<=", ">>="};
  return t.kind == TokenKind::Punct && ops.count(t.text);
}

bool is_member_access(const std::vector<Token>& toks, std::size_t i) {
  return i > 0 && (toks[i - 1].is_punct(".") || toks[i - 1].is_punct("->"));
}

bool at_statement_start(const std::vector<Token>& toks, std::size_t i) {
  std::size_t k = i;
  while (k > 0) {
    const Token& p = toks[k - 1];
    if (p.is_punct("]]")) {  // skip an attribute back to its `[[`
      while (k > 0 && !toks[k - 1].is_punct("[[")) --k;
      if (k > 0) --k;
      continue;
    }
    return p.kind == TokenKind::Directive || p.is_punct(";") || p.is_punct("{") ||
           p.is_punct("}") || p.is_punct(":");
  }
  return true;
}

bool declares_pointer(const std::vector<Token>& toks, std::size_t i) {
  int angles = 0;
  for (std::size_t j = i + 1; j < toks.size(); ++j) {
    const Token& t = toks[j];
    if (t.kind != TokenKind::Punct) continue;
    if (t.is("<")) ++angles;
    if (t.is(">")) --angles;
    if (t.is(">>")) angles -= 2;
    if (angles > 0) continue;
    if (t.is("*") || t.is("&") || t.is("&&")) return true;
    if (t.is(";") || t.is("=") || t.is("[") || t.is("{") || t.is(",") || t.is("(") || t.is(")"))
      return false;
  }
  return false;
}

bool declares_threadgroup_storage(const std::vector<Token>& toks, std::size_t i) {
  return toks[i].is_ident("threadgroup") && at_statement_start(toks, i) &&
         !declares_pointer(toks, i);
}

bool opens_bracket(const Token& t) {
  return t.is_punct("(") || t.is_punct("[") || t.is_punct("{") || t.is_punct("[[");
}
bool closes_bracket(const Token& t) {
  return t.is_punct(")") || t.is_punct("]") || t.is_punct("}") || t.is_punct("]]");
}

std::size_t matching_bracket(const std::vector<Token>& toks, std::size_t open) {
  int depth = 0;
  for (std::size_t k = open; k < toks.size(); ++k) {
    if (opens_bracket(toks[k])) ++depth;
    if (closes_bracket(toks[k]) && --depth == 0) return k;
  }
  return toks.size();
}

std::vector<std::pair<std::size_t, std::size_t>> top_level_parts(const std::vector<Token>& toks, std::size_t b,
                                                                 std::size_t e, bool angles) {
  std::vector<std::pair<std::size_t, std::size_t>> parts;
  if (b >= e) return parts;
  int depth = 0, angle = 0;
  std::size_t start = b;
  for (std::size_t k = b; k < e; ++k) {
    const Token& t = toks[k];
    if (opens_bracket(t)) ++depth;
    if (closes_bracket(t)) --depth;
    if (angles && t.is_punct("<")) ++angle;
    if (angles && t.is_punct(">")) --angle;
    if (angles && t.is_punct(">>")) angle -= 2;
    if (t.is_punct(",") && depth == 0 && angle <= 0) {
      parts.emplace_back(start, k);
      start = k + 1;
    }
  }
  parts.emplace_back(start, e);
  return parts;
}

std::size_t matching_paren(const std::vector<Token>& toks, std::size_t open) {
  int depth = 0;
  for (std::size_t k = open; k < toks.size(); ++k) {
    if (toks[k].is_punct("(")) ++depth;
    if (toks[k].is_punct(")") && --depth == 0) return k;
  }
  return toks.size();
}

std::size_t closing_angle(const std::vector<Token>& toks, std::size_t open) {
  int angles = 0, parens = 0;
  for (std::size_t k = open; k < toks.size(); ++k) {
    const Token& t = toks[k];
    if (t.is_punct("(")) ++parens;
    if (t.is_punct(")")) --parens;
    if (parens > 0) continue;
    if (t.is_punct("<")) ++angles;
    if (t.is_punct(">")) --angles;
    if (t.is_punct(">>")) angles -= 2;
    if (angles <= 0) return angles == 0 ? k : 0;
    if (t.is_punct(";") || t.is_punct("{")) return 0;
  }
  return 0;
}

}  // namespace alloy::msl

#include "msl/cpu_uniform_loops.h"

#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

// Calls a uniform clause may make: functions of their arguments alone
// (Metal's math and integer functions, MLX's ceildiv) and casts.
bool pure_call(const std::string& name) {
  static const std::set<std::string> pure = {
      "min",   "max",    "clamp",  "abs",   "ceildiv", "select", "popcount", "clz",   "ctz",  "uint",
      "int",   "ushort", "short",  "uchar", "char",    "ulong",  "long",     "float", "half", "bool",
      "size_t"};
  return pure.count(name) > 0;
}

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
        if (is_member_access(t, k)) continue;          // `v.x`: the value's own uniformity decides
        if (k > b && t[k - 1].is_punct("::")) continue;  // a qualified name's tail
        if (x.text == counter || x.is("true") || x.is("false")) continue;
        if (k + 1 < e && t[k + 1].is_punct("(")) {
          if (!pure_call(x.text)) return false;
          continue;
        }
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
    // Assigned, incremented or its address taken (`a & c` refused too: conservative).
    if ((k + 1 < t.size() && assigns(t[k + 1])) ||
        (k > 0 && (t[k - 1].is_punct("++") || t[k - 1].is_punct("--") || t[k - 1].is_punct("&"))))
      return false;
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

void macros_naming_anything(std::string_view text, const std::vector<Token>& tokens, std::set<std::string>& out) {
  for (const Token& d : tokens) {
    TextRange body;
    if (d.kind != TokenKind::Directive || !define_body(text, d, body)) continue;
    // The macro's name: the identifier after `define`.
    LexOptions in_directive;
    in_directive.directives = false;
    const std::vector<Token> line = lex(text.substr(d.begin + 1, d.end - d.begin - 1), in_directive);
    if (line.size() < 2 || !line[0].is_ident("define") || line[1].kind != TokenKind::Identifier) continue;
    for (const Token& m : lex(text.substr(body.begin, body.end - body.begin), in_directive))
      if (m.kind == TokenKind::Identifier) {
        out.insert(line[1].text);
        break;
      }
  }
}

}  // namespace alloy::msl

#include "msl/vector_casts.h"

#include "msl/builtins.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

using Out = std::vector<std::optional<std::string>>;  // nullopt: the token as written

// Whether the declaration whose first declarator ends at `k` (its `;` or
// `=`) has no other declarator.
bool single_declarator(const std::vector<Token>& toks, std::size_t k) {
  int depth = 0;
  for (; k < toks.size(); ++k) {
    if (opens_bracket(toks[k])) ++depth;
    if (closes_bracket(toks[k])) --depth;
    if (depth < 0) return false;
    if (depth == 0 && toks[k].is_punct(",")) return false;
    if (depth == 0 && toks[k].is_punct(";")) return true;
  }
  return false;
}

// For the type toks[b, e) = `[const] device|constant [const] V *` with V a
// vector type, the pointee as it is written out (`const float4`); nullopt
// for any other type.
std::optional<std::string> vector_pointee(const std::vector<Token>& toks, const Out& out, std::size_t b,
                                                 std::size_t e) {
  if (e < b + 3 || !toks[e - 1].is_punct("*")) return std::nullopt;
  bool memory = false, vector = false;
  std::string text;
  for (std::size_t k = b; k + 1 < e; ++k) {
    const Token& t = toks[k];
    if (t.is_ident("device") || t.is_ident("constant")) memory = true;
    else if (t.kind == TokenKind::Identifier && is_vector_type_name(t.text)) {
      if (vector) return std::nullopt;
      vector = true;
    } else if (!(t.is_ident("const") || t.is_ident("volatile") || t.is_ident("metal") || t.is_punct("::"))) {
      return std::nullopt;
    }
    const std::string as_written = written(toks, out, k);
    if (as_written.empty()) continue;
    if (!text.empty() && !t.is_punct("::") && !toks[k - 1].is_punct("::")) text += " ";
    text += as_written;
  }
  if (!memory || !vector) return std::nullopt;
  return text;
}

// Whether toks[b, e) is a pointer type into device or constant memory.
bool memory_pointer_type(const std::vector<Token>& toks, std::size_t b, std::size_t e) {
  if (e <= b || !toks[e - 1].is_punct("*")) return false;
  for (std::size_t k = b; k < e; ++k)
    if (toks[k].is_ident("device") || toks[k].is_ident("constant")) return true;
  return false;
}

// One past the unary expression a C-style cast at `k` applies to: prefix
// operators, then a name, a literal or a parenthesised expression, then
// subscripts, calls, member accesses and `++`/`--`. 0 when it is not one
// of these (another cast, a template-id).
std::size_t unary_operand_end(const std::vector<Token>& toks, std::size_t k) {
  auto prefix = [](const Token& t) {
    return t.is_punct("&") || t.is_punct("*") || t.is_punct("-") || t.is_punct("+") || t.is_punct("!") ||
           t.is_punct("~") || t.is_punct("++") || t.is_punct("--");
  };
  while (k < toks.size() && prefix(toks[k])) ++k;
  if (k >= toks.size()) return 0;
  if (toks[k].is_punct("(")) {
    const std::size_t close = matching_paren(toks, k);
    if (close >= toks.size()) return 0;
    k = close + 1;
    // `(T*)(U*)x`: the group was a cast itself.
    if (k < toks.size() && (toks[k].kind == TokenKind::Identifier || toks[k].kind == TokenKind::Number))
      return 0;
  } else if (toks[k].kind == TokenKind::Identifier) {
    ++k;
    while (k + 1 < toks.size() && toks[k].is_punct("::") && toks[k + 1].kind == TokenKind::Identifier) k += 2;
    if (k < toks.size() && toks[k].is_punct("<")) return 0;
  } else if (toks[k].kind == TokenKind::Number) {
    ++k;
  } else {
    return 0;
  }
  while (k < toks.size()) {
    const Token& t = toks[k];
    if (t.is_punct("[") || t.is_punct("(")) {
      const std::size_t close = matching_bracket(toks, k);
      if (close >= toks.size()) return 0;
      k = close + 1;
    } else if ((t.is_punct(".") || t.is_punct("->")) && k + 1 < toks.size() &&
               toks[k + 1].kind == TokenKind::Identifier) {
      k += 2;
    } else if (t.is_punct("++") || t.is_punct("--")) {
      ++k;
    } else {
      break;
    }
  }
  return k;
}

// A variable declared as a vector pointer into device or constant memory,
// `const device float4* q = ...;` or `device half4* q;` (one declarator; a
// local or a struct member), is `::alloy_msl::vector_cast_ptr<const float4>
// q`: whatever it is given later (a cast, pointer arithmetic on a scalar
// buffer's address), accesses through it work at any address the elements
// may have. Parameters keep plain pointers: their buffers come aligned.
void vector_pointer_declarations(const std::vector<Token>& toks, Out& out) {
  auto type_word = [](const Token& t) {
    return t.is_ident("const") || t.is_ident("volatile") || t.is_ident("device") || t.is_ident("constant") ||
           t.is_ident("metal") || t.is_punct("::") || (t.kind == TokenKind::Identifier && is_vector_type_name(t.text));
  };
  for (std::size_t b = 0; b < toks.size(); ++b) {
    if (!type_word(toks[b]) || toks[b].is_punct("::") || !at_statement_start(toks, b)) continue;
    std::size_t star = b;
    while (star < toks.size() && type_word(toks[star])) ++star;
    if (star + 2 >= toks.size() || !toks[star].is_punct("*") || toks[star + 1].kind != TokenKind::Identifier ||
        !(toks[star + 2].is_punct(";") || toks[star + 2].is_punct("=")))
      continue;
    if (!single_declarator(toks, star + 2)) continue;
    const std::optional<std::string> pointee = vector_pointee(toks, out, b, star + 1);
    if (!pointee) continue;
    out[b] = "::alloy_msl::vector_cast_ptr<" + *pointee + ">";
    for (std::size_t k = b + 1; k <= star; ++k) out[k] = "";
    b = star;
  }
}

}  // namespace

// Casts to a pointer to a vector in device or constant memory,
// `(device const float4*)(row + d)` and `reinterpret_cast<device half4*>(p)`,
// become `::alloy_msl::vector_cast<const float4>(row + d)`: accesses through
// it work at any address the elements may have, as on Apple's GPUs, where
// CUDA's vector loads need the vector's alignment (metal_vector_cast.h).
// `reinterpret_cast` to another pointer into device or constant memory
// becomes `::alloy_msl::pointer_cast`, which also takes such a vector pointer.
void rewrite_vector_casts(const std::vector<Token>& toks, Out& out) {
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.is_punct("(")) {
      if (i > 0 && (toks[i - 1].kind == TokenKind::Identifier || toks[i - 1].is_punct(")") ||
                    toks[i - 1].is_punct("]")))
        continue;  // a call, a declarator's parameters, sizeof(...)
      const std::size_t close = matching_paren(toks, i);
      if (close >= toks.size()) continue;
      const std::optional<std::string> pointee = vector_pointee(toks, out, i + 1, close);
      if (!pointee) continue;
      const std::size_t end = unary_operand_end(toks, close + 1);
      if (end == 0) continue;
      out[i] = "::alloy_msl::vector_cast<" + *pointee + ">(";
      for (std::size_t k = i + 1; k <= close; ++k) out[k] = "";
      out[end - 1] = written(toks, out, end - 1) + ")";
    } else if ((t.is_ident("reinterpret_cast") || t.is_ident("static_cast")) && i + 1 < toks.size() &&
               toks[i + 1].is_punct("<")) {
      const std::size_t close = closing_angle(toks, i + 1);
      if (close == 0 || close + 1 >= toks.size() || !toks[close + 1].is_punct("(")) continue;
      const std::optional<std::string> pointee = vector_pointee(toks, out, i + 2, close);
      if (!pointee) {
        // A scalar pointer, `reinterpret_cast<const device int8_t*>(p4)`:
        // its operand may be a vector pointer variable, a class here.
        if (t.is_ident("reinterpret_cast") && memory_pointer_type(toks, i + 2, close))
          out[i] = "::alloy_msl::pointer_cast";
        continue;
      }
      out[i] = "::alloy_msl::vector_cast";
      out[i + 1] = "<" + *pointee;
      for (std::size_t k = i + 2; k < close; ++k) out[k] = "";
    }
  }
  vector_pointer_declarations(toks, out);
}

}  // namespace alloy::msl

#include "msl/private_adds.h"

#include <algorithm>

namespace alloy::msl {
namespace {

bool is_add_call(const Token& t) {
  return t.kind == TokenKind::Identifier &&
         (t.text == "atomic_fetch_add_explicit" || t.text == "atomic_fetch_sub_explicit");
}

// The index of the bracket closing the one opened at `open`, or toks.size().
std::size_t closing(const std::vector<Token>& toks, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < toks.size(); ++i) {
    if (toks[i].kind != TokenKind::Punct) continue;
    const std::string& s = toks[i].text;
    if (s == "(" || s == "[" || s == "{") ++depth;
    if (s == ")" || s == "]" || s == "}") {
      if (--depth == 0) return i;
    }
  }
  return toks.size();
}

// Token `at` names an output element in `call(&name[...], ...)` where `call`
// (at - 3) is an add whose result is discarded: a statement of its own (after
// `;`, `{`, `}`, `else`, a condition's `)` or a `(void)` cast) ending at the `;`
// after the call's `)`.
bool is_discarded_add_to(const std::vector<Token>& toks, std::size_t at) {
  if (at < 3 || !toks[at - 1].is_punct("&") || !toks[at - 2].is_punct("(") || !is_add_call(toks[at - 3])) return false;
  if (at + 1 >= toks.size() || !toks[at + 1].is_punct("[")) return false;
  std::size_t close = closing(toks, at + 1);
  if (close + 1 >= toks.size() || !toks[close + 1].is_punct(",")) return false;
  std::size_t end = closing(toks, at - 2);
  if (end + 1 >= toks.size() || !toks[end + 1].is_punct(";")) return false;
  if (at == 3) return true;
  const Token& before = toks[at - 4];
  return before.is_punct(";") || before.is_punct("{") || before.is_punct("}") || before.is_punct(")") ||
         before.is_ident("else") || before.kind == TokenKind::Directive;
}

bool names(const LexedText& text, const std::string& name) {
  return std::any_of(text.code.begin(), text.code.end(), [&](const Token& t) { return t.is_ident(name); });
}

}  // namespace

std::vector<int> add_only_outputs(const KernelSpec& spec, const LexedKernel& lexed) {
  std::vector<int> found;
  if (!spec.atomic_outputs || spec.bounds_check) return found;
  const std::vector<Token>& body = lexed.source.code;  // with the macros' bodies in place
  for (std::size_t j = 0; j < spec.outputs.size(); ++j) {
    const std::string& name = spec.outputs[j].name;
    // The header's macros could use the name in ways the body does not show.
    bool add_only = !names(lexed.header, name) &&
                    std::none_of(lexed.includes.begin(), lexed.includes.end(),
                                 [&](const IncludedFile& f) { return names(f.lexed, name); });
    bool used = false;
    for (std::size_t i = 0; i < body.size() && add_only; ++i) {
      if (!body[i].is_ident(name)) continue;
      used = true;
      add_only = is_discarded_add_to(body, i);
    }
    if (used && add_only) found.push_back(static_cast<int>(j));
  }
  return found;
}

void rewrite_private_adds(const std::vector<std::string>& names, const std::vector<Token>& toks,
                          std::vector<std::optional<std::string>>& out) {
  for (std::size_t i = 3; i < toks.size(); ++i) {
    if (toks[i].kind != TokenKind::Identifier || std::find(names.begin(), names.end(), toks[i].text) == names.end())
      continue;
    if (!is_discarded_add_to(toks, i) || out[i - 3] || out[i - 2]) continue;
    const bool sub = toks[i - 3].text == "atomic_fetch_sub_explicit";
    out[i - 3] = sub ? "::alloy_msl::cpu::fetch_sub_private" : "::alloy_msl::cpu::fetch_add_private";
    out[i - 2] = "(alloy_plain_adds, ";
  }
}

}  // namespace alloy::msl

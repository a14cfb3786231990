// Questions about a token in its context, shared by analysis and rewriting.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl {

// `a.name` or `p->name`.
bool is_member_access(const std::vector<Token>& toks, std::size_t i);

// Whether token `i` begins a statement or declaration: the token before it
// (attributes `[[...]]` skipped) is none, a directive, `;`, `{`, `}` or `:`.
bool at_statement_start(const std::vector<Token>& toks, std::size_t i);

// Whether the declaration starting at `i` (after its `threadgroup`) declares
// a pointer or reference, as `threadgroup float* p = buf;` does.
bool declares_pointer(const std::vector<Token>& toks, std::size_t i);

// `threadgroup` at `i` declares threadgroup storage (not a pointer to it, not
// a type in a parameter or cast).
bool declares_threadgroup_storage(const std::vector<Token>& toks, std::size_t i);

// `=` or a compound assignment (`+=`, `<<=`, ...).
bool is_assignment(const Token& t);

// `(`, `[`, `{`, `[[` / their closers.
bool opens_bracket(const Token& t);
bool closes_bracket(const Token& t);

// The index of the bracket closing the one opened at `open` (any of
// opens_bracket's, nested ones counted); toks.size() when none does.
std::size_t matching_bracket(const std::vector<Token>& toks, std::size_t open);

// Tokens [b, e) split at their top-level commas (outside brackets and, with
// `angles`, outside `<...>`): each part's [begin, end), empty parts kept;
// none for an empty range.
std::vector<std::pair<std::size_t, std::size_t>> top_level_parts(const std::vector<Token>& toks, std::size_t b,
                                                                 std::size_t e, bool angles);

// The index of the `)` closing the `(` at `open`; toks.size() when none does.
std::size_t matching_paren(const std::vector<Token>& toks, std::size_t open);

// The index of the `>` closing the `<` at `open` (parentheses skipped); 0
// when there is none before a `;` or `{`.
std::size_t closing_angle(const std::vector<Token>& toks, std::size_t open);

// Token `i` as a rewrite has written it so far: out[i], or the token's own
// text where the rewrite left it (nullopt).
inline std::string written(const std::vector<Token>& toks, const std::vector<std::optional<std::string>>& out,
                           std::size_t i) {
  return out[i] ? *out[i] : toks[i].text;
}

}  // namespace alloy::msl

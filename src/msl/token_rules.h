// Questions about a token in its context, shared by analysis and rewriting.
#pragma once

#include <cstddef>
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

}  // namespace alloy::msl

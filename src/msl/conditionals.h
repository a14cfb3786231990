// Conditionals (`c ? a : b`) rewritten to the type Metal gives them.
//
// Metal converts its scalar types to one another implicitly, half and bfloat
// included, and types a conditional whose arms are scalars of two types by
// its arithmetic rules (half with int is half, half with float is float).
// The runtime's half (CUDA) and bfloat (both targets) convert implicitly to
// and from every scalar type too (`int i = h;`), so C++ finds `c ? h : 0`
// and `c ? h : f` ambiguous. The rewrite converts the arms (runtime
// metal_base.h, alloy_msl::cond_*):
//  - one literal arm: `c ? a : 0` -> `c ? ::alloy_msl::cond_arm<decltype(0)>(
//    a) : ::alloy_msl::cond_lit<decltype((a'))>(0)` (and `c ? 0 : a` alike):
//    both arms in the common type where `a` is a scalar; the literal stays a
//    null pointer constant where `a` is a pointer;
//  - no literal arm: `c ? a : b` -> `c ? static_cast< ::alloy_msl::cond_t<
//    decltype((a')), decltype((b'))>>(a) : static_cast<...<decltype((b')),
//    decltype((a'))>>(b)`: each arm in the common type where both are
//    scalars of two types, else as it is (its value category kept, void
//    arms too);
//  - two literal arms: as written (C++'s rules are Metal's there).
// a' and b' are copies of the arms for `decltype`, in which each conditional
// the arm holds is a stand-in of its type (`::alloy_msl::cond_value<T>()`,
// condition included), so that nested conditionals cost copies linear in
// their depth, not exponential. Left as written: a conditional whose third arm's
// end the tokens do not tell (a `>` that may close a template argument list,
// an assignment), and one whose arms cannot be copied (a directive; a brace:
// a lambda or an initializer list; a `;` or `co_await` of the CPU threads'
// rewrites). With a half or bfloat arm and another scalar type there, the
// C++ compiler reports the ambiguity at the user's line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl {

// Rewrites the conditionals of `toks` in `out` (a rewrite's text per token,
// nullopt where the token is written as it is), after the other rewrites of
// the same tokens.
void wrap_conditionals(const std::vector<Token>& toks, std::vector<std::optional<std::string>>& out);

}  // namespace alloy::msl

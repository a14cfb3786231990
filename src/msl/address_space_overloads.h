// Functions overloaded only on address spaces: `ld(const device float*)`
// beside `ld(const threadgroup float*)`, or MLX's `_NoMask::operator bool()
// const device` beside `... const threadgroup`. Alloy's C++ drops address
// spaces from types (docs/design/msl.md), so such overloads become one
// function defined twice.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "msl/lexer.h"

namespace alloy::msl {

// The token ranges [first, last] of `tokens` (of `text`) that repeat an
// earlier definition of the same function in the same scope once address
// spaces are dropped, with the same body: they are to be left out. A
// repeat whose body differs is a CompileError at its name. Definitions
// inside `#if` blocks are not compared (the preprocessor keeps one branch).
std::vector<std::pair<std::size_t, std::size_t>> address_space_repeats(const LexedText& text,
                                                                      const std::vector<Token>& tokens);

}  // namespace alloy::msl

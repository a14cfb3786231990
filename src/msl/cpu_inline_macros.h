// A function-like macro of the kernel's header whose body synchronises keeps
// the CPU's regions (cpu_regions.h) from taking the kernel, as a
// synchronising helper function does (cpu_inline_helpers.h): ZMLX's kernels
// reduce over the group with
//
//   #define KK_SIMD_REDUCE_SUM(buf, val, tid, TG)  (continued over lines:)
//       do { float _sr = simd_sum(val); ... threadgroup_barrier(...); ... } while(0)
//
// and ran on fibers (its rmsnorm 16x slower than as regions). For the CPU
// target such a macro is expanded in the body at each of its calls, as the
// preprocessor would (each parameter replaced by its argument's text), but
// on the call's own line, so that later lines keep their numbers; a body
// `do { ... } while (0)` becomes the block `{ ... }` (a region cannot end
// under `do`: regions do not take a barrier there). Its definition
// becomes blank lines of the header (as does one the body does not call).
//
// What it takes (anything else keeps the kernel as it was):
// - the macro: function-like, in the header, defined once and never
//   undefined, its parameters named (no `...`), its body without `#` or `##`
//   and, for the `do ... while (0)` form, without `break` or `continue`;
//   named nowhere else in the header (its functions or other macros) nor by
//   a macro of the body;
// - each call: a statement of its own, `NAME(args);`, after `;`, `{` or `}`
//   (not a braceless branch), with one argument per parameter (split at the
//   commas outside parentheses, as the preprocessor does) and no such macro
//   in its arguments.
#pragma once

#include <optional>
#include <string>

#include "alloy/msl/translate.h"
#include "msl/cpu_inline_helpers.h"
#include "msl/lexer.h"

namespace alloy::msl {

// nullopt where the header has no synchronising function-like macro, or one
// of a form this does not take; then `why_not` says which ("" for none).
// The texts it returns keep every line of the kernel's at its number.
std::optional<InlinedHelpers> inline_sync_macros(const KernelSpec& spec, const LexedKernel& lexed,
                                                 std::string* why_not = nullptr);

}  // namespace alloy::msl

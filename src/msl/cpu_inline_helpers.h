// A function of the kernel's header that synchronises (a barrier or a
// SIMD-group call: mlx-lm's norm kernels reduce in `block_sum_once`, which
// calls simd_sum, waits at a barrier and calls simd_sum again) keeps the
// CPU's regions (cpu_regions.h) from taking the kernel: a region cannot end
// inside a call, so the kernel ran on fibers. For the CPU target such a
// helper is written out in the body at each of its calls instead, and the
// body is planned again:
//
//   float r = rsqrt(block_sum_once<TG>(s, buf[0], lane, sg) / D);
//
// becomes, on the call's own line (so that every later line keeps its
// number, and a fault in the helper names the line of its call),
//
//   float alloy_inline_1; { float alloy_inline_1_v = (s); ...the body, its
//   parameters renamed, TG as (TG)...; alloy_inline_1 = (v); }
//   float r = rsqrt(alloy_inline_1 / D);
//
// and the helper's definition becomes blank lines of the header (as does
// one the body does not call).
//
// What it takes (anything else keeps the kernel as it was):
// - the helper the body calls: a function at the header's scope (`template <...>`,
//   `inline`, `static` and `METAL_FUNC` allowed), whose parameters are
//   values or pointers (no references, arrays or defaults), whose body has
//   no preprocessor lines, no `threadgroup` and no other synchronising
//   helper, and returns only by its last statement (`return e;`) or, when
//   void, not at all; a template's every parameter given at each call;
// - each call: in a statement of the body that declares or assigns or
//   returns (not a loop's or an `if`'s header or a braceless branch), with
//   no `?`, `&&`, `||` or top-level `,` that could leave it unevaluated,
//   not inside another such call's arguments, with no `<` or `>` in its
//   arguments (a template argument's commas are not told from the list's);
// - names: what the helper names from its own scope (a header constant)
//   the body does not declare again, nor is it a parameter of the kernel;
//   no identifier of the texts begins with `alloy_inline_`; the helper is
//   called nowhere else (the header, a macro); no header the kernel
//   includes synchronises.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "alloy/msl/translate.h"
#include "msl/lexer.h"

namespace alloy::msl {

struct InlinedHelpers {
  std::string source, header;  // the kernel's texts with the helpers written out
  std::string note;            // "block_sum_once is written out at its 2 calls in the body (...)"
};

// nullopt where the header has no synchronising helper, or one of a form
// this does not take; then `why_not` says which form ("" for no helper).
std::optional<InlinedHelpers> inline_sync_helpers(const KernelSpec& spec, const LexedKernel& lexed,
                                                  std::string* why_not = nullptr);

}  // namespace alloy::msl

// Atomic outputs a metal_kernel only adds to, for the CPU target.
//
// On the CPU an atomic float add is a compare-and-swap loop, and a locked
// instruction also stops the core from overlapping the cache misses around
// it: a scatter of atomic adds (the usual backward kernel) runs at memory
// latency. When every use of an atomic output in the body is a
// `atomic_fetch_add_explicit` / `atomic_fetch_sub_explicit` on one of its
// elements whose result is discarded, nothing in the kernel can observe the
// order of those adds, so each CPU worker may add into a copy of its own with
// plain adds, the copies summed into the output after the launch
// (jit/cpu_kernel.cpp). The translation keeps the atomic form beside the
// plain one and the launch chooses with `alloy_plain_adds` (Launch::plain_adds).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "alloy/msl/translate.h"
#include "msl/lexer.h"

namespace alloy::msl {

// Indices (into spec.outputs) of the atomic outputs the source only adds to
// (its macros' bodies included) and the header never names. Empty unless
// the spec has atomic outputs and no bounds check.
std::vector<int> add_only_outputs(const KernelSpec& spec, const LexedKernel& lexed);

// Rewrites each add to one of `names` in `toks` to
// `::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, ...)` (or _sub_).
void rewrite_private_adds(const std::vector<std::string>& names, const std::vector<Token>& toks,
                          std::vector<std::optional<std::string>>& out);

}  // namespace alloy::msl

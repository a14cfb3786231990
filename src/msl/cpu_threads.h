// How the CPU target runs the threads of a kernel that synchronises them.
// Fibers (a stack per thread, switched at each barrier and SIMD-group call)
// run anything. Where every synchronising call is a barrier or a simd_/quad_
// function written in a kernel's own body, the translation instead makes
// each kernel a C++20 coroutine, each such call a `co_await` and each
// `return` a `co_return`: the compiler splits the kernel into regions at
// those calls and keeps what lives across them in the thread's frame, and
// the same scheduler runs the regions as loops over the group's threads,
// with no stack switches (runtime/metal_cpu.h, jit/cpu_fibers.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alloy/msl/translate.h"
#include "msl/cpu_regions.h"
#include "msl/features.h"
#include "msl/lexer.h"

namespace alloy::msl {

struct CpuThreadsPlan {
  bool coroutines = false;
  // Simdgroup matrices: regions may take the kernel, coroutines may not
  // (their operations are no awaiters); fibers otherwise.
  bool regions_only = false;
  // Why a synchronising kernel runs on fibers ("" when it does not, or
  // when it runs on coroutines; for a regions_only kernel, set by
  // plan_threads once regions were tried).
  std::string fibers_because;
  // Byte ranges of the source holding the kernel bodies to rewrite: a
  // metal_kernel's whole source; each kernel function's `{...}` of a program.
  std::vector<std::pair<std::size_t, std::size_t>> bodies;
  bool whole_program = false;
  // Set where the body is split into regions instead (msl/cpu_regions.h).
  std::optional<RegionsPlan> regions;
  std::string regions_why_not;
  // Atomic outputs the body only adds to (msl/private_adds.h): their adds
  // take the kernel's `alloy_plain_adds` argument.
  std::vector<std::string> private_adds;
};

// A barrier, SIMD-group call or simdgroup matrix type at toks[i].
bool is_sync_use(const std::vector<Token>& toks, std::size_t i);

// Decided on the tokens the translation already has.
CpuThreadsPlan plan_cpu_threads(const KernelSpec& spec, const LexedKernel& lexed, const Analysis& analysis,
                                const RuntimeFeatures& features);

// The rewrite of one text for coroutine threads: each awaitable call in a
// body becomes `(co_await call(...))`, each `return` there `co_return`; in a
// program, each `kernel void` returns `::alloy_msl::cpu::thread_task` and
// each kernel body ends in `co_return;`. `out[i]`: token i's replacement.
void await_sync_calls(const CpuThreadsPlan& plan, const std::vector<Token>& toks,
                      std::vector<std::optional<std::string>>& out);

}  // namespace alloy::msl

// Which optional parts of the runtime headers a kernel needs, decided on its
// tokens, so the compilers parse only those: most of a first NVRTC compile is
// the parsing of the runtime (src/msl/runtime/metal_features.h lists the
// parts). A name that could reach a part includes it; when in doubt (token
// pasting, an #include of another header), every part is included.
#pragma once

#include <string>

#include "alloy/msl/translate.h"
#include "msl/lexer.h"

namespace alloy::msl {

struct RuntimeFeatures {
  bool half_ops = false;
  bool math = false;
  bool math_extra = false;
  bool fast_math = false;
  bool simd = false;
  bool atomics = false;
  bool matrix = false;
  bool matrices = false;  // matrix<T, C, R> and floatCxR (metal_matrix.h)
  bool mlx_utils = false;
  bool tensor = false;  // Metal 4 tensors, mpp::tensor_ops (decided on names even when in doubt)
  // CUDA: each SIMD group records which of its lanes exist (SIMD-group
  // functions, simdgroup_barrier and tensors read it); a kernel without
  // them skips that store and warp barrier at entry.
  bool lane_state = false;
  // simdgroup_matrix's per-lane elements are reached (thread_elements(), or
  // code this scan cannot see): the CUDA target then keeps Apple's
  // element-to-lane layout; otherwise it may use the tensor cores' own.
  bool matrix_elements = false;
  // CPU target: the kernel's threads run as coroutines (msl/cpu_threads.h).
  bool cpu_coroutines = false;
  // CPU target: the kernel is split into regions (msl/cpu_regions.h).
  bool cpu_regions = false;
};

RuntimeFeatures runtime_features(const KernelSpec& spec, const Analysis& analysis, const LexedKernel& lexed);

// Whether `name` is a function of the runtime's math headers (metal_math.h,
// metal_math_extra.h): a builtin, not a function of the kernel's own.
bool is_math_function_name(std::string_view name);

// The `#define ALLOY_MSL_SELECT 1` / `#define ALLOY_MSL_USE_<PART> 1` lines that
// go before the runtime header.
std::string feature_defines(const RuntimeFeatures& f);

}  // namespace alloy::msl

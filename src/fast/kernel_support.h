// What metal_kernel, cuda_kernel and metal_library share in the fast layer:
// the process-wide variant cache, the CUDA translation check of CPU runs, the
// launch limits and the timeout rule.
#pragma once

#include <optional>
#include <string>

#include "alloy/msl/translate.h"
#include "fast/kernel_cache.h"

namespace alloy::fast {

// Metal's (and CUDA's) limit on the threads of one threadgroup.
inline constexpr unsigned kMaxThreadsPerThreadgroup = 1024;

// Variants by the whole definition and the per-call key: a kernel object
// rebuilt on every call still translates and compiles once per process.
KernelVariantCache& variant_cache();

// With ALLOY_CHECK_CUDA=1 (the test suite sets it), a kernel run on the CPU
// is also translated for CUDA and compiled by NVRTC for sm_90, so machines
// without a GPU still catch CUDA translation errors of every kernel they run.
void check_cuda_translation(const msl::KernelSpec& spec);

// Fills a new variant from its spec: for CUDA, the launch plan an earlier
// process stored (no translation needed), else the translation for
// `target`. Front-end errors surface here, at the call.
void translate_variant(KernelVariant& v, msl::Target target);

// The seconds a launch may run: `requested`, else $ALLOY_KERNEL_TIMEOUT on
// the CPU; 0 for no limit. GPU launches take no timeout= yet (an error
// naming `label`, as does a non-positive value).
double launch_timeout(const std::optional<double>& requested, bool gpu, const std::string& label);

}  // namespace alloy::fast

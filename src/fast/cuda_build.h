// A kernel variant's CUDA translation compiled with NVRTC: shared by the GPU
// backend (for the device's own architecture) and by the CPU path's CUDA
// check (sm_90, ALLOY_CHECK_CUDA=1), so both take the same fallback for
// threadgroup memory over CUDA's 48 KB static limit.
#pragma once

#include <string>

#include "alloy/msl/translate.h"
#include "jit/cache.h"

namespace alloy::fast {

struct CudaBuild {
  jit::Cache::Bytes cubin;
  std::string entry;                 // the kernel's symbol in the cubin
  unsigned dynamic_threadgroup = 0;  // bytes of threadgroup arrays in dynamic shared memory
};

// Compiles `translated` (the CUDA translation of `spec`). A Metal body
// whose threadgroup arrays exceed CUDA's 48 KB of static shared memory is
// translated again with them in dynamic shared memory (KernelSpec::
// threadgroup_storage), sized by what ptxas counted. Throws
// std::runtime_error("<label> failed to compile for CUDA (<arch>): ...")
// with the compiler's messages mapped to the user's lines.
CudaBuild build_for_cuda(const msl::KernelSpec& spec, const msl::TranslatedKernel& translated,
                         const std::string& arch, const std::string& label);

}  // namespace alloy::fast

// What launching a kernel variant on CUDA needs from its translation, kept
// on disk beside the cubin and keyed by the variant's spec: a fresh process
// whose kernels were built before loads them without translating (the
// translation was a fifth of a disk-cache load).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloy/msl/translate.h"
#include "jit/cache.h"

namespace alloy::fast {

struct CudaLaunchPlan {
  std::vector<msl::GlueParam> params;  // kind and index; the names stay in the source
  int threadgroups_per_block = 1;      // msl::cuda_threadgroups_per_block
  std::string entry;                   // the kernel's symbol in the cubin
  unsigned dynamic_threadgroup = 0;    // bytes of threadgroup arrays in dynamic shared memory
  unsigned buffer_alignment = 0;       // msl::Analysis::assumed_buffer_alignment
  jit::Cache::Bytes cubin;
};

// The key of a spec's plan for `arch`: the spec, the front end and runtime
// headers that translate it (front_end_digest), and the compiler that
// builds it. The format's version is part of it.
std::string cuda_plan_key(const msl::KernelSpec& spec, const std::string& arch);

std::string encode_plan(const CudaLaunchPlan& plan);
// The plan in `bytes`, or nothing when they are not a plan of this format.
std::optional<CudaLaunchPlan> decode_plan(const std::string& bytes);

}  // namespace alloy::fast

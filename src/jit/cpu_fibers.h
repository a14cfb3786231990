// Fibers for CPU kernels that synchronise threads: the services JIT-compiled
// kernels reach through alloy_msl::cpu::Launch::fibers.
#pragma once

#include "msl/runtime/cpu_launch.h"

namespace alloy::jit {

// The process-wide table of fiber services (run_group, barrier, SIMD exchange).
// Each OS thread keeps its own pool of fiber stacks, reused across threadgroups.
// Stack size: $ALLOY_CPU_FIBER_STACK_KB (default 256 KiB, one guard page below).
const alloy_msl::cpu::FiberApi* cpu_fiber_api();

}  // namespace alloy::jit

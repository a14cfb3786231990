// metal_library kernels launched on raw buffers: what the host API's command
// encoder (src/metal/) needs of a library kernel.
#pragma once

#include <vector>

#include "alloy/fast.h"
#include "alloy/msl/program.h"
#include "fast/prepared_launch.h"

namespace alloy::fast {

// The program's description of the kernel: its parameters, roles and indices.
const msl::ProgramKernel& program_kernel(const LibraryKernel& k);

// A launch of `k` whose buffers are bound by index, not arrays: element types
// as the program declares them (a struct's as bytes), `threadgroup_bytes`
// per [[threadgroup(i)]] parameter in parameter order. Checks the geometry
// and finds or translates the variant, as a launch from Python does.
PreparedLaunch prepare_encoded_launch(const LibraryKernel& k, const std::vector<unsigned>& threadgroup_bytes,
                                      const Dims3& grid, const Dims3& threadgroup, Dispatch dispatch, bool gpu);

}  // namespace alloy::fast

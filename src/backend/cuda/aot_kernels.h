// Op kernels compiled ahead of time. The build compiles a set of op kernel
// modules (every op on every dtype it accepts, in the forms the launches
// pick) for several GPU architectures into an archive installed beside
// liballoy (alloy_kernels.aot). At run time kernel() looks a module's
// generated source up there first, so built-in ops need neither NVRTC nor
// the CUDA headers, and cost no compile on first use; a module the archive
// lacks is compiled by NVRTC as before.
//
// Environment:
//   ALLOY_AOT_KERNELS=<file>  the archive to use (default: beside liballoy)
//   ALLOY_AOT=0               ignore the archive (always NVRTC)
//   ALLOY_AOT=require         a module missing from the archive is an error
//                             naming it (deployments without NVRTC, tests)
//   ALLOY_AOT_LOG=<file>      appends the key of every module compiled at run
//                             time because the archive lacked it
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/kernel_sources.h"
#include "jit/aot_archive.h"
#include "jit/nvrtc.h"

namespace alloy::cuda {

// The modules the build compiles: for each, the key kernel() uses and the
// exact source the launch generates.
std::vector<CatalogEntry> aot_kernel_set();

// What besides the source decides an op module's code: the embedded kernel
// headers and the compile options (not the architecture, not where the CUDA
// headers live).
std::string aot_fingerprint(const jit::NvrtcOptions& opts);

// The archive's image of `source` for the architecture `opts.arch`
// ("sm_90"), or nullopt (archive absent, disabled, or lacking it; logged
// when ALLOY_AOT_LOG is set). Throws std::runtime_error naming `key` when
// ALLOY_AOT=require and there is none.
std::optional<jit::AotImage> aot_image(const std::string& key, const std::string& source,
                                       const jit::NvrtcOptions& opts);

// The archive this process uses and its size, or why none is used.
std::string aot_status();

}  // namespace alloy::cuda

// NVRTC behind the content-addressed cache: the cubin for a translation unit
// is compiled once per machine (disk) and once per process (memory).
#pragma once

#include <memory>
#include <string>

#include "jit/cache.h"
#include "jit/nvrtc.h"

namespace alloy::jit {

// The cache key: source, NVRTC version and options, runtime headers, Alloy.
std::string cuda_cache_key(const std::string& source, const NvrtcOptions& options);

// The cubin for `source`, from `cache` (default Cache::global()) or compiled.
// Throws CompileError (the NVRTC log in log()) when NVRTC rejects it.
Cache::Bytes compile_cuda(const std::string& source, const std::string& file_name, const NvrtcOptions& options,
                          Cache* cache = nullptr);

}  // namespace alloy::jit

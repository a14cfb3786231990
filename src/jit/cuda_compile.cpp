#include "jit/cuda_compile.h"

#include "jit/embedded_headers.h"
#include "jit/digest.h"

namespace alloy::jit {

std::string cuda_cache_key(const std::string& source, const NvrtcOptions& options) {
  KeyBuilder key;
  key.add("kind", "alloy-cuda-cubin-v1")
      .add("alloy_version", ALLOY_VERSION)
      .add("nvrtc", nvrtc_identity())
      .add("runtime_headers", embedded_headers_digest())
      .add("source", source);
  for (const auto& o : nvrtc_options(options)) key.add("option", o);
  return key.hex();
}

Cache::Bytes compile_cuda(const std::string& source, const std::string& file_name, const NvrtcOptions& options,
                          Cache* cache) {
  if (!cache) cache = &Cache::global();
  return cache->get_or_build(cuda_cache_key(source, options), [&](std::vector<Cache::SideFile>& side) {
    side.push_back({".cu", source});
    return nvrtc_compile(source, file_name, options).cubin;
  });
}

}  // namespace alloy::jit

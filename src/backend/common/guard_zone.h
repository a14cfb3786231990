// Guard zones around large buffers. MSL kernels written for Apple GPUs often
// read outside an input before masking the value: the seed's grid_sample
// loads all four corners of a sample, then zeroes those outside the image,
// and a sample 10% outside the image reads 5% of an image height beyond the
// buffer. Such reads do not fault on Apple GPUs; here they would, where the
// neighbouring pages are unmapped. Large allocations therefore get mapped
// slack on both sides of an eighth of their size (at least 64 KiB). On the
// host the slack is never touched, so it costs address space, not memory; on
// the GPU it is real memory (a quarter more per large buffer). Small buffers
// sit inside larger mapped regions already.
#pragma once

#include <cstddef>

namespace alloy {

inline size_t guard_zone_bytes(size_t size) {
  constexpr size_t kMin = size_t(64) << 10, kPage = 4096;
  if (size < kMin) return 0;
  size_t g = (size / 8 + kPage - 1) / kPage * kPage;
  return g < kMin ? kMin : g;
}

}  // namespace alloy

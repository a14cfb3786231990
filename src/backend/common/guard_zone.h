// Guard zones around large buffers. MSL kernels written for Apple GPUs often
// read a little outside an input before masking the value (the seed's
// grid_sample loads all four corners, then zeroes those outside the image).
// Such reads do not fault on Apple GPUs; here they would, for buffers whose
// neighbouring pages are unmapped. Large allocations therefore get mapped
// slack on both sides: an eighth of their size (at least a row of any image
// with 8 or more rows), between 64 KiB and 4 MiB. Small buffers sit inside
// larger mapped regions already.
#pragma once

#include <cstddef>

namespace alloy {

inline size_t guard_zone_bytes(size_t size) {
  constexpr size_t kMin = size_t(64) << 10, kMax = size_t(4) << 20, kPage = 4096;
  if (size < kMin) return 0;
  size_t g = (size / 8 + kPage - 1) / kPage * kPage;
  return g < kMin ? kMin : (g > kMax ? kMax : g);
}

}  // namespace alloy

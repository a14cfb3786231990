// RandomBits: the counter-based threefry-2x32 stream of primitives/random.h,
// word for word, so a key gives the same bits on both devices.
#pragma once

#include "kernel_common.cuh"

namespace alloy {

__device__ __forceinline__ void threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, uint32_t& o0,
                                             uint32_t& o1) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  const uint32_t rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
#pragma unroll
  for (uint32_t i = 0; i < 5; ++i) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = __funnelshift_l(x1, x1, rot[i % 2][r]);
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + i + 1;
  }
  o0 = x0;
  o1 = x1;
}

// words[j], words[H + odd + j] = threefry(key, (j, H + odd + j)) for j < H;
// words[H] = threefry(key, (H, 0)).first when the word count is odd.
__device__ __forceinline__ void random_bits(uint32_t* words, const uint32_t* key, int64_t key_stride, uint64_t H,
                                            uint64_t odd) {
  const uint32_t k0 = key[0], k1 = key[key_stride];
  for (int64_t j = global_thread(); j < int64_t(H + odd); j += grid_threads()) {
    uint32_t lo, hi;
    if (uint64_t(j) < H) {
      threefry2x32(k0, k1, uint32_t(j), uint32_t(H + odd + j), lo, hi);
      words[j] = lo;
      words[H + odd + j] = hi;
    } else {
      threefry2x32(k0, k1, uint32_t(H), 0u, lo, hi);
      words[H] = lo;
    }
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_random_bits()                                                                    \
  extern "C" __global__ void random_bits(uint32_t* words, const uint32_t* key, int64_t key_stride,   \
                                         uint64_t H, uint64_t odd) {                                 \
    alloy::random_bits(words, key, key_stride, H, odd);                                              \
  }

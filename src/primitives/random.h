// Random bits: the one random primitive; distributions are ops on top of it.
#pragma once

#include <tuple>

#include <cstdint>
#include <utility>

#include "alloy/primitive.h"

namespace alloy {

// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC'11), the hash MLX's random module uses.
//   ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
//   x = (c0 + ks0, c1 + ks1)
//   for i in 0..4:
//     for r in R[i % 2]  (R[0] = 13,15,26,6;  R[1] = 17,29,16,24):
//       x0 += x1; x1 = rotl32(x1, r); x1 ^= x0
//     x0 += ks[(i + 1) % 3]; x1 += ks[(i + 2) % 3] + i + 1
// All arithmetic is mod 2^32. Plain C++ so a CUDA kernel can include it.
inline std::pair<uint32_t, uint32_t> threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1) {
  constexpr uint32_t rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
  for (uint32_t i = 0; i < 5; ++i) {
    for (uint32_t r : rotations[i % 2]) {
      x0 += x1;
      x1 = (x1 << r) | (x1 >> (32 - r));
      x1 ^= x0;
    }
    x0 += ks[(i + 1) % 3];
    x1 += ks[(i + 2) % 3] + i + 1;
  }
  return {x0, x1};
}

// Input: a uint32 key of shape (2,). Output: `size * width` bytes, taken from
// W = ceil(bytes / 4) 32-bit words w[0..W) (little-endian, the tail of the
// last word dropped), produced so (MLX's layout, so streams match):
//   H = W / 2 (floor); odd = W % 2
//   for j in 0..H-1:  (w[j], w[H + odd + j]) = threefry2x32(key, (j, H + odd + j))
//   if odd:           w[H] = threefry2x32(key, (H, 0)).first
class RandomBits : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(width_); }
  RandomBits(Stream s, int width) : Primitive(s), width_(width) {}
  const char* name() const override { return "RandomBits"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;

 private:
  int width_;
};

}  // namespace alloy

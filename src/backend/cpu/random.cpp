// CPU evaluation of RandomBits (the layout is documented in primitives/random.h).
#include <cstring>
#include <vector>

#include "backend/cpu/strided.h"
#include "primitives/random.h"

namespace alloy {

void RandomBits::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& key = inputs[0];
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  const uint32_t* k = key.data<uint32_t>();
  const uint32_t k0 = k[0], k1 = k[key.strides()[0]];
  const size_t bytes = out.nbytes();
  const size_t W = (bytes + 3) / 4, H = W / 2, odd = W % 2;
  std::vector<uint32_t> words(W);
  for (size_t j = 0; j < H; ++j) {
    auto [lo, hi] = threefry2x32(k0, k1, static_cast<uint32_t>(j), static_cast<uint32_t>(H + odd + j));
    words[j] = lo;
    words[H + odd + j] = hi;
  }
  if (odd) words[H] = threefry2x32(k0, k1, static_cast<uint32_t>(H), 0).first;
  if (bytes) std::memcpy(out.raw_data(), words.data(), bytes);  // an empty output has no memory
}

}  // namespace alloy

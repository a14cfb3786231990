// Bit packing shared by the quantization ops. MLX's packed layout is one
// little-endian bit stream: element i of a row occupies bits
// [i * bits, (i + 1) * bits) of the row's uint32 words (for 3, 5 and 6 bits
// an element may straddle two words).
#pragma once

#include "alloy/array.h"
#include "alloy/ops.h"

namespace alloy::quant {

// (..., K) uint32 codes below 2^bits -> (..., K * bits / 32) uint32 words.
// K * bits must be a multiple of 32 (of 32 * bits when bits is not a power of two).
array pack_bits(const array& codes, int bits, SD s);
// The inverse: (..., W) uint32 words -> (..., W * 32 / bits) uint32 codes.
array unpack_bits(const array& words, int bits, SD s);

}  // namespace alloy::quant

// Small float formats of the MX quantization modes, encoded and decoded with
// existing ops (bit views, comparisons, table lookups), so both devices run
// them. Encoders take float32 and return uint32 codes.
#pragma once

#include "alloy/array.h"
#include "alloy/ops.h"

namespace alloy::quant {

// OCP e4m3: round to nearest even, saturating at 448; NaN becomes 448 too, as
// MLX's converter does.
array fp8_e4m3_encode(const array& x, SD s);
// fp4 e2m1 (0, 0.5, 1, 1.5, 2, 3, 4, 6): ties round toward zero and -0
// becomes +0, matching MLX's quantizer bit for bit.
array fp4_e2m1_encode(const array& x, SD s);
// Codes (any unsigned integer type) -> float32 values.
array fp8_e4m3_decode(const array& codes, SD s);
array fp4_e2m1_decode(const array& codes, SD s);
// ue8m0: 2^(e - 127); 255 is NaN.
array e8m0_decode(const array& codes, SD s);
// The smallest power of two >= x (x > 0 float32) as its ue8m0 code; 127
// (scale 1) where x is 0.
array e8m0_encode_ceil(const array& x, SD s);

}  // namespace alloy::quant

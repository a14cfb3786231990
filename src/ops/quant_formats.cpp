// Encoders work on the float32 bit pattern; decoders are lookups in tables
// built here once (256 entries at most), which is exact and needs no branch.
#include "quant_formats.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloy/ops_math.h"
#include "alloy/ops_quant.h"

namespace alloy::quant {
namespace {

array u32(uint32_t v) { return array(v, uint32); }
array f32(float v) { return array(v, float32); }

array lookup(const std::vector<float>& table, const array& codes, SD s) {
  array t(table, {static_cast<ShapeElem>(table.size())}, float32);
  return take(t, astype(codes, uint32, s), 0, s);
}

float fp8_value(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  if ((code & 127) == 127) return std::numeric_limits<float>::quiet_NaN();
  const float mag = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.0f + m / 8.0f, e - 7);
  return (code & 128) ? -mag : mag;
}

}  // namespace

array fp8_e4m3_encode(const array& x, SD s) {
  array sign = right_shift(view(x, uint32, s), u32(31), s);
  array a = abs(x, s);
  // Normal range: keep 3 mantissa bits of the float32 pattern, rounding to
  // nearest even in integer arithmetic (a carry bumps the exponent, which is
  // the right answer), then rebias the exponent from 127 to 7.
  array bits = view(a, uint32, s);
  array odd = bitwise_and(right_shift(bits, u32(20), s), u32(1), s);
  array rounded = right_shift(add(add(bits, u32(0x7FFFF), s), odd, s), u32(20), s);
  // Values below 2^-6 are clamped before rebiasing; that branch is not used.
  array normal = subtract(maximum(rounded, u32(121u << 3), s), u32(120u << 3), s);
  // Subnormals are multiples of 2^-9; round() is half-to-even.
  array sub = astype(round(multiply(a, f32(512.0f), s), 0, s), uint32, s);
  array code = where(less(a, f32(0.015625f), s), sub, normal, s);
  // Saturate (448 is code 126); NaN compares false everywhere and lands there too.
  code = where(less_equal(a, f32(448.0f), s), minimum(code, u32(126), s), u32(126), s);
  return bitwise_or(code, left_shift(sign, u32(7), s), s);
}

array fp4_e2m1_encode(const array& x, SD s) {
  // The code counts the midpoints strictly below |x|: ties go toward zero.
  array mids({0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}, float32);
  array a = expand_dims(abs(x, s), -1, s);
  array mag = sum(astype(greater(a, mids, s), uint32, s), {-1}, false, s);
  array neg = logical_and(less(x, f32(0.0f), s), greater(mag, u32(0), s), s);
  return bitwise_or(mag, left_shift(astype(neg, uint32, s), u32(3), s), s);
}

array fp8_e4m3_decode(const array& codes, SD s) {
  static const std::vector<float> table = [] {
    std::vector<float> t(256);
    for (int c = 0; c < 256; ++c) t[c] = fp8_value(c);
    return t;
  }();
  return lookup(table, codes, s);
}

array fp4_e2m1_decode(const array& codes, SD s) {
  static const std::vector<float> table = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                           -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  return lookup(table, codes, s);
}

array e8m0_decode(const array& codes, SD s) {
  static const std::vector<float> table = [] {
    std::vector<float> t(256);
    for (int e = 0; e < 255; ++e) t[e] = std::ldexp(1.0f, e - 127);
    t[255] = std::numeric_limits<float>::quiet_NaN();
    return t;
  }();
  return lookup(table, codes, s);
}

array e8m0_encode_ceil(const array& x, SD s) {
  array bits = view(x, uint32, s);
  array e = bitwise_and(right_shift(bits, u32(23), s), u32(255), s);
  array inexact = astype(not_equal(bitwise_and(bits, u32(0x7FFFFF), s), u32(0), s), uint32, s);
  return where(equal(x, f32(0.0f), s), u32(127), add(e, inexact, s), s);
}

}  // namespace alloy::quant

namespace alloy {

array to_fp8(const array& x, SD s) {
  if (!is_floating(x.dtype())) {
    throw std::invalid_argument(std::string("[to_fp8] Only real floating types are supported but x.dtype() == ") +
                                dtype_name(x.dtype()) + ".");
  }
  return astype(quant::fp8_e4m3_encode(astype(x, float32, s), s), uint8, s);
}

array from_fp8(const array& x, Dtype dtype, SD s) {
  if (x.dtype() != uint8) {
    throw std::invalid_argument(std::string("[from_fp8] Input must have type uint8 but x.dtype() == ") +
                                dtype_name(x.dtype()) + ".");
  }
  if (!is_floating(dtype)) {
    throw std::invalid_argument(std::string("[from_fp8] Only real floating types are supported but dtype == ") +
                                dtype_name(dtype) + ".");
  }
  return astype(quant::fp8_e4m3_decode(x, s), dtype, s);
}

}  // namespace alloy

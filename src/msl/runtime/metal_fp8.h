// Metal's 8-bit floating-point formats (metal_tensor, OS 27): the element
// types of quantized tensors, shared by both targets. One byte of storage;
// arithmetic converts to float.
//
//   metal_fp8_e4m3_format  OCP OFP8 E4M3: bias 7, no infinities, NaN is
//                          S.1111.111, largest 448, smallest subnormal 2^-9.
//   metal_fp8_e5m2_format  OCP OFP8 E5M2: bias 15, IEEE-like inf and NaN,
//                          largest 57344.
//   metal_fp8_ue8m0_format OCP MX scale: 2^(e - 127) for e in 0..254, 0xFF NaN.
//
// Converting a float into a format rounds to nearest even and saturates to
// the largest finite value (NVIDIA's satfinite; e5m2 infinities saturate
// too); NaN stays NaN. A scale from a float keeps the power of two at or
// below its magnitude (0 and subnormals below 2^-127 give 2^-127).
// Conversions are written on the bit patterns, so both targets agree bit for
// bit with each other and with the host's to_fp8/from_fp8.
#pragma once

namespace metal {

namespace detail_fp8 {
// 2^e as a float, for e in -149..127 (subnormal patterns below -126).
ALLOY_FUNC constexpr float pow2(int e) {
  return e >= -126 ? __builtin_bit_cast(float, uint32_t(e + 127) << 23)
                   : __builtin_bit_cast(float, uint32_t(1) << (e + 149));
}
// Round a non-negative float below 2^23 to the nearest integer, ties to even.
ALLOY_FUNC constexpr uint32_t round_even(float t) {
  uint32_t i = uint32_t(t);
  const float frac = t - float(i);
  if (frac > 0.5f || (frac == 0.5f && (i & 1u))) ++i;
  return i;
}
// A float with M mantissa bits, exponent bias B and largest finite code
// `max_code` (magnitude bits): round-to-nearest-even, saturating.
template <int M, int B>
ALLOY_FUNC constexpr uint8_t encode(float f, uint32_t max_code, uint32_t nan_code) {
  const uint32_t u = __builtin_bit_cast(uint32_t, f);
  const uint32_t sign = (u >> 31) << 7;
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return uint8_t(sign | nan_code);
  const float a = __builtin_bit_cast(float, mag);
  uint32_t code;
  if (a < pow2(1 - B)) {
    // Subnormal: a multiple of 2^(1 - B - M); the scaling is exact.
    code = round_even(a * pow2(B - 1 + M));
  } else {
    constexpr int drop = 23 - M;
    const uint32_t odd = (mag >> drop) & 1u;
    const uint32_t rounded = (mag + ((1u << (drop - 1)) - 1u) + odd) >> drop;
    code = rounded - (uint32_t(127 - B) << M);  // rebias; a carry into the exponent is right
    if (mag >= 0x7f800000u || code > max_code) code = max_code;
  }
  return uint8_t(sign | (code > max_code ? max_code : code));
}

// An OCP OFP8 format with M mantissa bits and exponent bias B. E4M3 has no
// infinities (its only NaN is S.1111.111); E5M2 keeps IEEE's top exponent.
template <int M, int B, bool HasInf> struct ofp8 {
  static constexpr uint32_t top_exponent = (1u << (7 - M)) - 1u, mantissa_mask = (1u << M) - 1u;
  // Largest finite magnitude code: below the top exponent with infinities,
  // else the top exponent with all mantissa bits but the last.
  static constexpr uint32_t max_code = HasInf ? (top_exponent << M) - 1u : 0x7eu;
  uint8_t bits;

  ofp8() = default;
  template <class U, class = decltype(static_cast<float>(U()))>
  ALLOY_FUNC constexpr ofp8(U v) : bits(detail_fp8::encode<M, B>(static_cast<float>(v), max_code, 0x7fu)) {}
  ALLOY_FUNC constexpr operator float() const {
    const uint32_t e = (bits >> M) & top_exponent, m = bits & mantissa_mask;
    float mag;
    if (HasInf ? e == top_exponent : (bits & 0x7fu) == 0x7fu)
      mag = __builtin_bit_cast(float, HasInf && m == 0 ? 0x7f800000u : 0x7fc00000u);
    else if (e == 0)
      mag = float(m) * detail_fp8::pow2(1 - B - M);
    else
      mag = float((1u << M) + m) * detail_fp8::pow2(int(e) - B - M);
    return (bits & 0x80u) ? -mag : mag;
  }
  ALLOY_FUNC static constexpr ofp8 from_bits(uint8_t b) {
    ofp8 r{};
    r.bits = b;
    return r;
  }
};
}  // namespace detail_fp8

typedef detail_fp8::ofp8<3, 7, false> metal_fp8_e4m3_format;
typedef detail_fp8::ofp8<2, 15, true> metal_fp8_e5m2_format;

struct metal_fp8_ue8m0_format {
  uint8_t bits;

  metal_fp8_ue8m0_format() = default;
  template <class U, class = decltype(static_cast<float>(U()))>
  ALLOY_FUNC constexpr metal_fp8_ue8m0_format(U v) : bits(from_float(static_cast<float>(v))) {}
  // On the bits: 2^(e - 127) is the exponent field e, except e = 0, the
  // subnormal 2^-127 (cheap enough for matmul2d's per-slab scale decoding).
  ALLOY_FUNC constexpr operator float() const {
    const uint32_t e = bits;
    return __builtin_bit_cast(float, e == 0xffu ? 0x7fc00000u : e == 0 ? 0x00400000u : e << 23);
  }
  ALLOY_FUNC static constexpr metal_fp8_ue8m0_format from_bits(uint8_t b) {
    metal_fp8_ue8m0_format r{};
    r.bits = b;
    return r;
  }
  ALLOY_FUNC static constexpr uint8_t from_float(float f) {
    const uint32_t mag = __builtin_bit_cast(uint32_t, f) & 0x7fffffffu;
    if (mag >= 0x7f800000u) return 0xffu;
    const uint32_t e = mag >> 23;
    return uint8_t(e == 0 ? 0u : e);
  }
};

namespace detail_fp8 {
template <class T> inline constexpr bool is_format_v = false;
template <int M, int B, bool I> inline constexpr bool is_format_v<ofp8<M, B, I>> = true;
}  // namespace detail_fp8

}  // namespace metal

// Metal's 4-bit floating-point format (metal_tensor, OS 27), shared by both
// targets:
//
//   metal_fp4_e2m1_format  OCP MX FP4 E2M1: bias 1, one mantissa bit, no
//                          infinities or NaN; 0, 0.5, 1, 1.5, 2, 3, 4, 6.
//
// A value of the type holds its code in the low four bits of a byte (as_type
// from a uchar takes the byte's low nibble). In memory, and so in a tensor,
// two codes share a byte: the element at offset 2j is byte j's low nibble,
// 2j + 1 its high nibble (OCP MX, NVIDIA's __nv_fp4x2 and MLX's
// mx.quantize(mode="mxfp4") pack the same way). Apple does not document the
// packing of MTLTensor's metalFloat4e2m1 elements; this is the one every
// producer of such data on Linux uses.
//
// Converting a float rounds to nearest even and saturates to +-6 (NVIDIA's
// cvt.rn.satfinite.e2m1x2, ml_dtypes' float4_e2m1fn); NaN, which the format
// cannot hold, becomes +6 as the saturating conversions do for infinities'
// magnitude; -0 keeps its sign.
#pragma once

#include "metal_fp8.h"

namespace metal {

namespace detail_fp4 {
template <class Element> struct nibble_ref;
template <class T> inline constexpr bool is_ref_v = false;
template <class E> inline constexpr bool is_ref_v<nibble_ref<E>> = true;
}  // namespace detail_fp4

struct metal_fp4_e2m1_format {
  uint8_t bits;  // the code in bits 0-3

  metal_fp4_e2m1_format() = default;
  // From any number (not from a packed element: that converts itself,
  // without the round trip through float).
  template <class U, class = enable_if_t<!detail_fp4::is_ref_v<U>>, class = decltype(static_cast<float>(U()))>
  ALLOY_FUNC constexpr metal_fp4_e2m1_format(U v) : bits(from_float(static_cast<float>(v))) {}
  ALLOY_FUNC constexpr operator float() const {
    const uint32_t e = (bits >> 1) & 3u, m = bits & 1u;
    const float mag = e == 0 ? 0.5f * float(m) : float(2u + m) * detail_fp8::pow2(int(e) - 2);
    return (bits & 8u) ? -mag : mag;
  }
  ALLOY_FUNC static constexpr metal_fp4_e2m1_format from_bits(uint8_t b) {
    metal_fp4_e2m1_format r{};
    r.bits = uint8_t(b & 0xfu);
    return r;
  }
  ALLOY_FUNC static constexpr uint8_t from_float(float f) {
    const uint32_t u = __builtin_bit_cast(uint32_t, f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 7u;  // NaN: +6
    // The 8-bit encoder's rounding with one mantissa bit and bias 1, its
    // sign moved from bit 7 to bit 3.
    const uint8_t c = detail_fp8::encode<1, 1>(f, 7u, 7u);
    return uint8_t(((c >> 4) & 8u) | (c & 7u));
  }
};

namespace detail_fp4 {
template <class T> inline constexpr bool is_packed_v = false;
template <> inline constexpr bool is_packed_v<metal_fp4_e2m1_format> = true;

// Element `o` of packed FP4 storage starting at `base`: a reference to half a
// byte. Storing is a read-modify-write of the byte; the nibble is cleared and
// set with atomic operations so two threads storing the two halves of one
// byte do not undo each other's write.
template <class Element> struct nibble_ref {
  Element* base;
  long o;

  ALLOY_FUNC unsigned char* byte() const {
    return reinterpret_cast<unsigned char*>(const_cast<metal_fp4_e2m1_format*>(base)) + (o >> 1);
  }
  ALLOY_FUNC int shift() const { return int(o & 1) * 4; }
  ALLOY_FUNC metal_fp4_e2m1_format value() const {
    return metal_fp4_e2m1_format::from_bits(uint8_t(*byte() >> shift()));
  }
  ALLOY_FUNC operator metal_fp4_e2m1_format() const { return value(); }
  // (Two user conversions do not chain: float(t[i, j]) needs its own.)
  ALLOY_FUNC operator float() const { return float(value()); }
  ALLOY_FUNC const nibble_ref& operator=(const metal_fp4_e2m1_format& v) const {
    static_assert(!is_same_v<Element, const metal_fp4_e2m1_format>, "tensor: the tensor's elements are const");
    unsigned char* b = byte();
#if defined(__CUDACC__)
    // 32-bit atomics on the aligned word that holds the byte.
    const unsigned long addr = reinterpret_cast<unsigned long>(b);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~3ul);
    const int at = int(addr & 3ul) * 8 + shift();
    atomicAnd(word, ~(0xfu << at));
    atomicOr(word, unsigned(v.bits & 0xfu) << at);
#else
    __atomic_fetch_and(b, static_cast<unsigned char>(~(0xfu << shift())), __ATOMIC_RELAXED);
    __atomic_fetch_or(b, static_cast<unsigned char>((v.bits & 0xfu) << shift()), __ATOMIC_RELAXED);
#endif
    return *this;
  }
  ALLOY_FUNC const nibble_ref& operator=(const nibble_ref& other) const {
    return *this = other.value();
  }
  template <class U, class = decltype(static_cast<float>(U()))>
  ALLOY_FUNC const nibble_ref& operator=(const U& v) const {
    return *this = metal_fp4_e2m1_format(v);
  }
};
}  // namespace detail_fp4

}  // namespace metal

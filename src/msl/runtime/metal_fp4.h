// Metal's 4-bit tensor element formats (metal_tensor), shared by both
// targets:
//
//   metal_fp4_e2m1_format  OCP MX FP4 E2M1 (OS 27): bias 1, one mantissa bit,
//                          no infinities or NaN; 0, 0.5, 1, 1.5, 2, 3, 4, 6.
//   int4b_format           a 4-bit two's-complement integer, -8..7 (MPP's
//                          quantized right operands, __HAVE_INT4B_FORMAT_TYPE__)
//   uint4b_format          a 4-bit unsigned integer, 0..15
//   int2b_format           a 2-bit two's-complement integer, -2..1
//                          (__HAVE_INT2B_FORMAT_TYPE__, Metal 4.1)
//   uint2b_format          a 2-bit unsigned integer, 0..3
//
// A value of each type holds its code in the low bits of a byte (as_type
// from a uchar takes them). In memory, and so in a tensor, a byte holds two
// 4-bit codes or four 2-bit ones, the lowest bits first: the element at
// offset 2j is byte j's low nibble, 2j + 1 its high nibble (OCP MX, NVIDIA's
// __nv_fp4x2 and MLX's mx.quantize(mode="mxfp4") and affine quantization
// pack the same way); 2-bit element 4j + i is bits 2i..2i+1 of byte j, as
// MLX's 2-bit affine quantization packs. Apple does not document the
// packing of MTLTensor's sub-byte elements; this is the one every producer
// of such data on Linux uses.
//
// Converting a float to FP4 rounds to nearest even and saturates to +-6
// (NVIDIA's cvt.rn.satfinite.e2m1x2, ml_dtypes' float4_e2m1fn); NaN, which
// the format cannot hold, becomes +6 as the saturating conversions do for
// infinities' magnitude; -0 keeps its sign. Converting a number to an
// integer format rounds to nearest even and saturates to its range (NaN: 0);
// Apple does not say, and a saturating conversion never wraps a weight's sign.
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
// A number rounded to nearest even and saturated to [lo, hi], as a code of
// `bits` bits; NaN: 0.
template <int lo, int hi, int bits, class U> ALLOY_FUNC constexpr uint8_t saturated_code(U v) {
  constexpr int mask = (1 << bits) - 1;
  if constexpr (is_integral_v<U>) {
    const long long x = static_cast<long long>(v);
    return uint8_t((x < lo ? lo : x > hi ? hi : int(x)) & mask);
  } else {
    const float f = static_cast<float>(v);
    if (!(f == f)) return 0u;
    if (f <= float(lo)) return uint8_t(lo & mask);
    if (f >= float(hi)) return uint8_t(hi & mask);
#if defined(__CUDACC__)
    const float r = ::rintf(f);  // to nearest even
#else
    const float r = __builtin_rintf(f);  // the default rounding mode: to nearest even
#endif
    return uint8_t(int(r) & mask);
  }
}
}  // namespace detail_fp4

// A packed integer format of Bits bits: Signed, two's complement; else
// unsigned.
template <bool Signed, int Bits> struct packed_integer_format {
  static constexpr int lo = Signed ? -(1 << (Bits - 1)) : 0, hi = Signed ? (1 << (Bits - 1)) - 1 : (1 << Bits) - 1;
  uint8_t bits;  // the code in bits 0..Bits-1

  packed_integer_format() = default;
  template <class U, class = enable_if_t<!detail_fp4::is_ref_v<U>>, class = decltype(static_cast<float>(U()))>
  ALLOY_FUNC constexpr packed_integer_format(U v) : bits(detail_fp4::saturated_code<lo, hi, Bits>(v)) {}
  // (as_type from a uchar keeps the bits above the code, which the value ignores.)
  ALLOY_FUNC constexpr int value() const {
    const int code = int(bits & ((1u << Bits) - 1u));
    return Signed && code > hi ? code - (1 << Bits) : code;
  }
  ALLOY_FUNC constexpr operator float() const { return float(value()); }
  ALLOY_FUNC explicit constexpr operator int() const { return value(); }
  ALLOY_FUNC static constexpr packed_integer_format from_bits(uint8_t b) {
    packed_integer_format r{};
    r.bits = uint8_t(b & ((1u << Bits) - 1u));
    return r;
  }
};
typedef packed_integer_format<true, 4> int4b_format;
typedef packed_integer_format<false, 4> uint4b_format;
typedef packed_integer_format<true, 2> int2b_format;
typedef packed_integer_format<false, 2> uint2b_format;

namespace detail_fp4 {
template <class T> inline constexpr bool is_packed_v = false;
template <> inline constexpr bool is_packed_v<metal_fp4_e2m1_format> = true;
template <bool S, int B> inline constexpr bool is_packed_v<packed_integer_format<S, B>> = true;
template <class T> inline constexpr bool is_packed_integer_v = false;
template <bool S, int B> inline constexpr bool is_packed_integer_v<packed_integer_format<S, B>> = true;
// Bits of one code of a packed format (a byte holds 8 / code_bits_v codes).
template <class T> inline constexpr int code_bits_v = 4;
template <bool S> inline constexpr int code_bits_v<packed_integer_format<S, 2>> = 2;

// Element `o` of packed storage starting at `base`: a reference to half a
// byte (a quarter for 2-bit codes). Storing is a read-modify-write of the
// byte; the code's bits are cleared and set with atomic operations so threads
// storing the other codes of one byte do not undo each other's writes.
template <class Element> struct nibble_ref {
  typedef remove_cv_t<Element> V;
  static constexpr int B = code_bits_v<V>, per_byte = 8 / B;
  static constexpr unsigned mask = (1u << B) - 1u;
  Element* base;
  long o;

  ALLOY_FUNC unsigned char* byte() const {
    return reinterpret_cast<unsigned char*>(const_cast<V*>(base)) + o / per_byte;
  }
  ALLOY_FUNC int shift() const { return int(o % per_byte) * B; }
  ALLOY_FUNC V value() const { return V::from_bits(uint8_t(*byte() >> shift())); }
  ALLOY_FUNC operator V() const { return value(); }
  // (Two user conversions do not chain: float(t[i, j]) needs its own.)
  ALLOY_FUNC operator float() const { return float(value()); }
  ALLOY_FUNC const nibble_ref& operator=(const V& v) const {
    static_assert(!is_same_v<Element, const V>, "tensor: the tensor's elements are const");
    unsigned char* b = byte();
#if defined(__CUDACC__)
    // 32-bit atomics on the aligned word that holds the byte.
    const unsigned long addr = reinterpret_cast<unsigned long>(b);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~3ul);
    const int at = int(addr & 3ul) * 8 + shift();
    atomicAnd(word, ~(mask << at));
    atomicOr(word, unsigned(v.bits & mask) << at);
#else
    __atomic_fetch_and(b, static_cast<unsigned char>(~(mask << shift())), __ATOMIC_RELAXED);
    __atomic_fetch_or(b, static_cast<unsigned char>((v.bits & mask) << shift()), __ATOMIC_RELAXED);
#endif
    return *this;
  }
  ALLOY_FUNC const nibble_ref& operator=(const nibble_ref& other) const {
    return *this = other.value();
  }
  template <class U, class = decltype(static_cast<float>(U()))>
  ALLOY_FUNC const nibble_ref& operator=(const U& v) const {
    return *this = V(v);
  }
};
}  // namespace detail_fp4

}  // namespace metal

// bfloat16: storage type with arithmetic through float (round-to-nearest-even).
#pragma once

#include <cstdint>
#include <cstring>

namespace alloy {

struct bfloat16_t {
  uint16_t bits = 0;

  bfloat16_t() = default;
  static constexpr bfloat16_t from_bits(uint16_t b) {
    bfloat16_t r;
    r.bits = b;
    return r;
  }
  bfloat16_t(float f) { bits = round_from_float(f); }
  bfloat16_t(double d) : bfloat16_t(static_cast<float>(d)) {}
  template <typename I, typename = decltype(static_cast<float>(I{}))>
  bfloat16_t(I v) : bfloat16_t(static_cast<float>(v)) {}

  operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }

  static uint16_t round_from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
      return uint16_t((u >> 16) | 0x40);  // quiet NaN, keep the sign
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

#define ALLOY_BF16_BINOP(op)                                                   \
  inline bfloat16_t operator op(bfloat16_t a, bfloat16_t b) {                  \
    return bfloat16_t(float(a) op float(b));                                   \
  }                                                                            \
  inline bfloat16_t& operator op##=(bfloat16_t& a, bfloat16_t b) {             \
    return a = a op b;                                                         \
  }
ALLOY_BF16_BINOP(+)
ALLOY_BF16_BINOP(-)
ALLOY_BF16_BINOP(*)
ALLOY_BF16_BINOP(/)
#undef ALLOY_BF16_BINOP

#define ALLOY_BF16_CMP(op) \
  inline bool operator op(bfloat16_t a, bfloat16_t b) { return float(a) op float(b); }
ALLOY_BF16_CMP(==)
ALLOY_BF16_CMP(!=)
ALLOY_BF16_CMP(<)
ALLOY_BF16_CMP(<=)
ALLOY_BF16_CMP(>)
ALLOY_BF16_CMP(>=)
#undef ALLOY_BF16_CMP

inline bfloat16_t operator-(bfloat16_t a) {
  return bfloat16_t::from_bits(uint16_t(a.bits ^ 0x8000u));
}

}  // namespace alloy

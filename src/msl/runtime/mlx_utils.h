// Shared by both targets: the utilities MLX prepends to every metal_kernel
// (its kernels/utils.h), which user kernels call: elem_to_loc and its
// variants, ceildiv, Limits<T>, complex64_t, WorkPerThread, ConditionalType,
// cast_to, MLX_MTL_PRAGMA_UNROLL. Global scope, as in MLX. Written from MLX's
// documented behaviour (index type template defaulting to int64_t).
#pragma once

#include "metal_vector.h"

// ---- Limits<T>: max/min are the infinities for floating types.
template <class T> struct Limits {
  static constexpr T max = metal::numeric_limits<T>::max();
  static constexpr T min = metal::numeric_limits<T>::min();
  static constexpr T finite_max = metal::numeric_limits<T>::max();
  static constexpr T finite_min = metal::numeric_limits<T>::min();
};
#define ALLOY_FLOAT_LIMITS(T)                                                 \
  template <> struct Limits<T> {                                              \
    static constexpr T max = metal::numeric_limits<T>::infinity();            \
    static constexpr T min = T(-float(metal::numeric_limits<T>::infinity())); \
    static constexpr T finite_max = metal::numeric_limits<T>::max();          \
    static constexpr T finite_min = metal::numeric_limits<T>::lowest();       \
  };
ALLOY_FLOAT_LIMITS(float)
ALLOY_FLOAT_LIMITS(metal::half)
ALLOY_FLOAT_LIMITS(metal::bfloat)
#undef ALLOY_FLOAT_LIMITS
template <> struct Limits<bool> {
  static constexpr bool max = true;
  static constexpr bool min = false;
};

// ---- indexing: the memory offset of element `elem` of a strided array
template <class IdxT = int64_t>
ALLOY_FUNC IdxT elem_to_loc(IdxT elem, const int* shape, const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += (elem % shape[i]) * IdxT(strides[i]);
    elem /= shape[i];
  }
  return loc;
}
// uint overloads: the offset type is int64_t unless named.
template <class IdxT = int64_t>
ALLOY_FUNC IdxT elem_to_loc(metal::uint elem, const int* shape, const int64_t* strides, int ndim) {
  return elem_to_loc<IdxT>(IdxT(elem), shape, strides, ndim);
}
template <class IdxT = int64_t>
ALLOY_FUNC IdxT elem_to_loc(metal::uint2 elem, const int* shape, const int64_t* strides, int ndim) {
  IdxT loc = IdxT(elem.x) * IdxT(strides[ndim - 1]);
  if (ndim > 1) loc += IdxT(elem.y) * IdxT(strides[ndim - 2]);
  return loc;
}
template <class IdxT = int64_t>
ALLOY_FUNC IdxT elem_to_loc(metal::uint3 elem, const int* shape, const int64_t* strides, int ndim) {
  IdxT loc = IdxT(elem.x) * IdxT(strides[ndim - 1]) + IdxT(elem.y) * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += IdxT(elem.z % shape[d]) * IdxT(strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
template <class IdxT = int64_t> ALLOY_FUNC IdxT elem_to_loc_1(metal::uint elem, const int64_t& stride) {
  return IdxT(elem) * IdxT(stride);
}
template <class IdxT = int64_t> ALLOY_FUNC IdxT elem_to_loc_2(metal::uint2 elem, const int64_t strides[2]) {
  return IdxT(elem.x) * IdxT(strides[1]) + IdxT(elem.y) * IdxT(strides[0]);
}
template <class IdxT = int64_t> ALLOY_FUNC IdxT elem_to_loc_3(metal::uint3 elem, const int64_t strides[3]) {
  return IdxT(elem.x) * IdxT(strides[2]) + IdxT(elem.y) * IdxT(strides[1]) + IdxT(elem.z) * IdxT(strides[0]);
}
// Offsets of one element in two / three arrays sharing a shape.
template <class IdxT = int64_t>
ALLOY_FUNC metal::vec<IdxT, 2> elem_to_loc_2_nd(metal::uint3 elem, const int* shape, const int64_t* a_strides,
                                                const int64_t* b_strides, int ndim) {
  metal::vec<IdxT, 2> loc(IdxT(elem.x) * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2]),
                          IdxT(elem.x) * IdxT(b_strides[ndim - 1]) + IdxT(elem.y) * IdxT(b_strides[ndim - 2]));
  for (int d = ndim - 3; d >= 0; --d) {
    IdxT l = IdxT(elem.z % shape[d]);
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
template <class IdxT = int64_t>
ALLOY_FUNC metal::vec<IdxT, 3> elem_to_loc_3_nd(metal::uint3 elem, const int* shape, const int64_t* a_strides,
                                                const int64_t* b_strides, const int64_t* c_strides, int ndim) {
  metal::vec<IdxT, 3> loc(IdxT(elem.x) * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2]),
                          IdxT(elem.x) * IdxT(b_strides[ndim - 1]) + IdxT(elem.y) * IdxT(b_strides[ndim - 2]),
                          IdxT(elem.x) * IdxT(c_strides[ndim - 1]) + IdxT(elem.y) * IdxT(c_strides[ndim - 2]));
  for (int d = ndim - 3; d >= 0; --d) {
    IdxT l = IdxT(elem.z % shape[d]);
    loc.x += l * IdxT(a_strides[d]);
    loc.y += l * IdxT(b_strides[d]);
    loc.z += l * IdxT(c_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}

// ---- complex64_t: two floats, as MLX's complex.h (which utils.h includes)
struct complex64_t {
  float real;
  float imag;
  complex64_t() = default;
  ALLOY_FUNC constexpr complex64_t(float r, float i) : real(r), imag(i) {}
  template <class T, class = decltype(static_cast<float>(T()))>
  ALLOY_FUNC constexpr complex64_t(T r) : real(static_cast<float>(r)), imag(0) {}
};
ALLOY_FUNC constexpr complex64_t operator+(complex64_t a, complex64_t b) { return {a.real + b.real, a.imag + b.imag}; }
ALLOY_FUNC constexpr complex64_t operator-(complex64_t a, complex64_t b) { return {a.real - b.real, a.imag - b.imag}; }
ALLOY_FUNC constexpr complex64_t operator-(complex64_t a) { return {-a.real, -a.imag}; }
ALLOY_FUNC constexpr complex64_t operator*(complex64_t a, complex64_t b) {
  return {a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real};
}
ALLOY_FUNC constexpr complex64_t operator/(complex64_t a, complex64_t b) {
  float d = b.real * b.real + b.imag * b.imag;
  return {(a.real * b.real + a.imag * b.imag) / d, (a.imag * b.real - a.real * b.imag) / d};
}
ALLOY_FUNC constexpr complex64_t& operator+=(complex64_t& a, complex64_t b) { return a = a + b; }
ALLOY_FUNC constexpr complex64_t& operator-=(complex64_t& a, complex64_t b) { return a = a - b; }
ALLOY_FUNC constexpr complex64_t& operator*=(complex64_t& a, complex64_t b) { return a = a * b; }
ALLOY_FUNC constexpr bool operator==(complex64_t a, complex64_t b) { return a.real == b.real && a.imag == b.imag; }
ALLOY_FUNC constexpr bool operator!=(complex64_t a, complex64_t b) { return !(a == b); }

// defines.h: program-scope constants (read-only; `constant` under Metal).
#ifndef MTL_CONST
#define MTL_CONST const
#endif

// ---- calculation
template <class T, class U> ALLOY_FUNC T ceildiv(T n, U m) { return (n + m - 1) / m; }

// ---- types: the elements a thread of MLX's elementwise kernels takes (8
// bytes' worth), a type chosen by a condition, and MLX's casts (to bool:
// nonzero, either part of a complex number).
template <class U> struct WorkPerThread {
  static_assert(sizeof(U) <= 8, "WorkPerThread: an element of at most 8 bytes");
  static constexpr int n = 8 / sizeof(U);
};
template <bool Condition, class T, class U> struct ConditionalType { using type = U; };
template <class T, class U> struct ConditionalType<true, T, U> { using type = T; };
template <class U, class T> ALLOY_FUNC U cast_to(T v) { return static_cast<U>(v); }
template <> ALLOY_FUNC bool cast_to<bool, complex64_t>(complex64_t v) { return v.real != 0 || v.imag != 0; }

// `MLX_MTL_PRAGMA_UNROLL` before a loop: clang's full unroll under Metal;
// CUDA's unroll hint here, and none for the host compiler (its own choice).
#if defined(__CUDACC__)
#define MLX_MTL_PRAGMA_UNROLL _Pragma("unroll")
#else
#define MLX_MTL_PRAGMA_UNROLL
#endif

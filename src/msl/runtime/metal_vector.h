// Shared by both targets: MSL vector types vec<T,N> (N = 2..4) as unions with
// xyzw / rgba members and Metal's sizes (3-vectors padded like 4-vectors), the
// packed_ forms, swizzles (as the translator spells them), and operators.
// Operators are hidden friends taking vec by value, so a scalar operand
// converts to the vector by broadcast (Metal's vector-scalar rule) and vectors
// of different element types never mix implicitly.
#pragma once

#include "metal_base.h"

namespace metal {

template <class T, int N> struct vec;
template <class V> struct packed;

namespace detail {
// Anonymous structs in unions: a GNU extension both g++ and NVRTC accept.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
// 8 and 16 components: Metal's `vec<T, N>` is clang's ext_vector_type, which
// takes them (MLX's NAX kernels and mtplx's GEMVs use vec<T, 8>), though no
// `float8` names exist. Indexed, with xyzw / rgba for the first four.
template <class T, int N> struct vec_storage {
  union {
    struct { T x, y, z, w; };
    struct { T r, g, b, a; };
    T v_[N];
  };
  ALLOY_FUNC constexpr T& at(int i) { return v_[i]; }
  ALLOY_FUNC constexpr const T& at(int i) const { return v_[i]; }
};
template <class T> struct vec_storage<T, 2> {
  union {
    struct { T x, y; };
    struct { T r, g; };
    T v_[2];  // kept for code that indexes the storage; the runtime uses at()
  };
  // Element i through the xyzw members (never an array view: a single union
  // member in hot code lets the compiler keep vectors in registers).
  ALLOY_FUNC constexpr T& at(int i) {
    switch (i) {
      case 0: return x;
      default: return y;
    }
  }
  ALLOY_FUNC constexpr const T& at(int i) const {
    switch (i) {
      case 0: return x;
      default: return y;
    }
  }
};
template <class T> struct vec_storage<T, 3> {
  union {
    struct { T x, y, z; };
    struct { T r, g, b; };
    T v_[3];  // kept for code that indexes the storage; the runtime uses at()
  };
  // Element i through the xyzw members (never an array view: a single union
  // member in hot code lets the compiler keep vectors in registers).
  ALLOY_FUNC constexpr T& at(int i) {
    switch (i) {
      case 0: return x;
      case 1: return y;
      default: return z;
    }
  }
  ALLOY_FUNC constexpr const T& at(int i) const {
    switch (i) {
      case 0: return x;
      case 1: return y;
      default: return z;
    }
  }
};
template <class T> struct vec_storage<T, 4> {
  union {
    struct { T x, y, z, w; };
    struct { T r, g, b, a; };
    T v_[4];  // kept for code that indexes the storage; the runtime uses at()
  };
  // Element i through the xyzw members (never an array view: a single union
  // member in hot code lets the compiler keep vectors in registers).
  ALLOY_FUNC constexpr T& at(int i) {
    switch (i) {
      case 0: return x;
      case 1: return y;
      case 2: return z;
      default: return w;
    }
  }
  ALLOY_FUNC constexpr const T& at(int i) const {
    switch (i) {
      case 0: return x;
      case 1: return y;
      case 2: return z;
      default: return w;
    }
  }
};
#pragma GCC diagnostic pop

// Number of components an argument contributes to a vector constructor.
template <class A> inline constexpr int ncomp = is_arithmetic_v<A> ? 1 : 0;
template <class U, int M> inline constexpr int ncomp<vec<U, M>> = M;
template <class U, int M> inline constexpr int ncomp<packed<vec<U, M>>> = M;

template <int... I> ALLOY_FUNC constexpr bool distinct() {
  int idx[] = {I...};
  for (int a = 0; a < int(sizeof...(I)); ++a)
    for (int b = a + 1; b < int(sizeof...(I)); ++b)
      if (idx[a] == idx[b]) return false;
  return true;
}
}  // namespace detail

template <class S, int... I> struct swizzle_ref_proxy;

// The compound assignments of a proxy for a vector (a swizzle target, a
// vector behind a cast), each X(op) one of them.
#define ALLOY_FOR_COMPOUND_OPS(X) X(+) X(-) X(*) X(/) X(%) X(&) X(|) X(^) X(<<) X(>>)

template <class T, int N>
struct alignas(sizeof(T) * (N == 3 ? 4 : N)) vec : detail::vec_storage<T, N> {
  static_assert((N >= 2 && N <= 4) || N == 8 || N == 16, "vector width must be 2, 3, 4, 8 or 16");
  typedef T value_type;
  using detail::vec_storage<T, N>::at;
  using detail::vec_storage<T, N>::v_;

  vec() = default;
  // Broadcast: Metal converts a scalar to a vector implicitly.
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>
  ALLOY_FUNC constexpr vec(U s) {
    for (int i = 0; i < N; ++i) at(i) = T(s);
  }
  // Components from scalars and smaller vectors: float4(v.xy, 1, 2).
  template <class A0, class A1, class... A,
            enable_if_t<((detail::ncomp<A0> + detail::ncomp<A1>) + ... + detail::ncomp<A>) == N &&
                            detail::ncomp<A0> != 0 && detail::ncomp<A1> != 0 && ((detail::ncomp<A> != 0) && ...),
                        int> = 0>
  ALLOY_FUNC constexpr vec(const A0& a0, const A1& a1, const A&... a) {
    int i = 0;
    put(i, a0);
    put(i, a1);
    (put(i, a), ...);
  }
  // Conversion between element types is explicit, as in Metal.
  template <class U, enable_if_t<!is_same_v<U, T>, int> = 0>
  ALLOY_FUNC constexpr explicit vec(const vec<U, N>& o) {
    for (int i = 0; i < N; ++i) at(i) = T(o.at(i));
  }

  ALLOY_FUNC constexpr T& operator[](int i) { return at(i); }
  ALLOY_FUNC constexpr const T& operator[](int i) const { return at(i); }

  template <int... I> ALLOY_FUNC constexpr vec<T, sizeof...(I)> swizzle() const {
    static_assert(((I >= 0 && I < N) && ...), "swizzle component out of range for this vector");
    return vec<T, sizeof...(I)>(at(I)...);
  }
  template <int... I> ALLOY_FUNC constexpr swizzle_ref_proxy<vec, I...> swizzle_ref() {
    static_assert(((I >= 0 && I < N) && ...), "swizzle component out of range for this vector");
    static_assert(detail::distinct<I...>(), "a swizzle on the left of an assignment repeats a component");
    return swizzle_ref_proxy<vec, I...>{*this};
  }

// Both operands by value: a vector read from memory (`a[i] + b[i]` with
// half4 buffers) is then copied whole, one wide load, where a reference's
// elements were loaded one by one (NVRTC did not merge them).
#define ALLOY_VEC_BINOP(op)                                                     \
  friend ALLOY_FUNC constexpr vec operator op(vec a, const vec b) {             \
    for (int i = 0; i < N; ++i) a.at(i) = T(a.at(i) op b.at(i));                \
    return a;                                                                   \
  }                                                                             \
  ALLOY_FUNC constexpr vec& operator op##=(const vec& b) {                      \
    for (int i = 0; i < N; ++i) at(i) = T(at(i) op b.at(i));                    \
    return *this;                                                               \
  }
  ALLOY_VEC_BINOP(+)
  ALLOY_VEC_BINOP(-)
  ALLOY_VEC_BINOP(*)
  ALLOY_VEC_BINOP(/)
  ALLOY_VEC_BINOP(%)
  ALLOY_VEC_BINOP(&)
  ALLOY_VEC_BINOP(|)
  ALLOY_VEC_BINOP(^)
  ALLOY_VEC_BINOP(<<)
  ALLOY_VEC_BINOP(>>)
#undef ALLOY_VEC_BINOP
#define ALLOY_VEC_CMP(op)                                                       \
  friend ALLOY_FUNC constexpr vec<bool, N> operator op(const vec a, const vec b) { \
    vec<bool, N> r;                                                             \
    for (int i = 0; i < N; ++i) r.at(i) = a.at(i) op b.at(i);                   \
    return r;                                                                   \
  }
  ALLOY_VEC_CMP(==)
  ALLOY_VEC_CMP(!=)
  ALLOY_VEC_CMP(<)
  ALLOY_VEC_CMP(<=)
  ALLOY_VEC_CMP(>)
  ALLOY_VEC_CMP(>=)
  ALLOY_VEC_CMP(&&)
  ALLOY_VEC_CMP(||)
#undef ALLOY_VEC_CMP
  friend ALLOY_FUNC constexpr vec operator-(vec a) {
    for (int i = 0; i < N; ++i) a.at(i) = T(-a.at(i));
    return a;
  }
  friend ALLOY_FUNC constexpr vec operator+(const vec& a) { return a; }
  friend ALLOY_FUNC constexpr vec operator~(vec a) {
    for (int i = 0; i < N; ++i) a.at(i) = T(~a.at(i));
    return a;
  }
  friend ALLOY_FUNC constexpr vec<bool, N> operator!(const vec& a) {
    vec<bool, N> r;
    for (int i = 0; i < N; ++i) r.at(i) = !a.at(i);
    return r;
  }
  ALLOY_FUNC constexpr vec& operator++() { return *this += vec(1); }
  ALLOY_FUNC constexpr vec& operator--() { return *this -= vec(1); }
  ALLOY_FUNC constexpr vec operator++(int) { vec o = *this; *this += vec(1); return o; }
  ALLOY_FUNC constexpr vec operator--(int) { vec o = *this; *this -= vec(1); return o; }

 private:
  template <class A> ALLOY_FUNC constexpr void put(int& i, const A& a) {
    if constexpr (detail::ncomp<A> == 1) {
      at(i++) = T(a);
    } else {
      for (int j = 0; j < detail::ncomp<A>; ++j) at(i++) = T(a[j]);
    }
  }
};

// The target of a swizzle on the left of an assignment: v.xz = ..., v.yx += ...
// (S: a vec or a packed vector). The source comes by value: in `v.wzyx = v`
// it is the vector being written.
template <class S, int... I> struct swizzle_ref_proxy {
  typedef vec<typename S::value_type, sizeof...(I)> value_type;
  S& v;
  ALLOY_FUNC constexpr operator value_type() const { return v.template swizzle<I...>(); }
  ALLOY_FUNC constexpr swizzle_ref_proxy& operator=(const value_type o) {
    int k = 0;
    ((v.at(I) = o.at(k++)), ...);
    return *this;
  }
  ALLOY_FUNC constexpr swizzle_ref_proxy& operator=(const swizzle_ref_proxy& o) { return *this = value_type(o); }
#define ALLOY_SWZ_OP(op) \
  ALLOY_FUNC constexpr swizzle_ref_proxy& operator op##=(const value_type& o) { return *this = value_type(*this) op o; }
  ALLOY_FOR_COMPOUND_OPS(ALLOY_SWZ_OP)
#undef ALLOY_SWZ_OP
};

// packed_T3 etc.: no padding, element alignment (the storage without vec's
// alignas), with the same xyzw / rgba members. Converts to and from vec;
// arithmetic goes through vec (found by ADL through the template argument).
template <class T, int N> struct packed<vec<T, N>> : detail::vec_storage<T, N> {
  typedef T value_type;
  using detail::vec_storage<T, N>::at;
  packed() = default;
  template <class A0, class... A, enable_if_t<!(sizeof...(A) == 0 && is_same_v<A0, packed>), int> = 0>
  ALLOY_FUNC constexpr packed(const A0& a0, const A&... a) : packed(vec<T, N>(a0, a...)) {}
  ALLOY_FUNC constexpr packed(const vec<T, N>& o) {
    for (int i = 0; i < N; ++i) at(i) = o.at(i);
  }
  ALLOY_FUNC constexpr operator vec<T, N>() const {
    vec<T, N> r;
    for (int i = 0; i < N; ++i) r.at(i) = at(i);
    return r;
  }
  ALLOY_FUNC constexpr T& operator[](int i) { return at(i); }
  ALLOY_FUNC constexpr const T& operator[](int i) const { return at(i); }
  template <int... I> ALLOY_FUNC constexpr vec<T, sizeof...(I)> swizzle() const {
    static_assert(((I >= 0 && I < N) && ...), "swizzle component out of range for this vector");
    return vec<T, sizeof...(I)>(at(I)...);
  }
  template <int... I> ALLOY_FUNC constexpr swizzle_ref_proxy<packed, I...> swizzle_ref() {
    static_assert(((I >= 0 && I < N) && ...), "swizzle component out of range for this vector");
    static_assert(detail::distinct<I...>(), "a swizzle on the left of an assignment repeats a component");
    return swizzle_ref_proxy<packed, I...>{*this};
  }
};

#define ALLOY_VEC_NAMES(T, name)           \
  typedef vec<T, 2> name##2;               \
  typedef vec<T, 3> name##3;               \
  typedef vec<T, 4> name##4;               \
  typedef packed<vec<T, 2>> packed_##name##2; \
  typedef packed<vec<T, 3>> packed_##name##3; \
  typedef packed<vec<T, 4>> packed_##name##4;
ALLOY_VEC_NAMES(bool, bool)
ALLOY_VEC_NAMES(char, char)
ALLOY_VEC_NAMES(uchar, uchar)
ALLOY_VEC_NAMES(short, short)
ALLOY_VEC_NAMES(ushort, ushort)
ALLOY_VEC_NAMES(int, int)
ALLOY_VEC_NAMES(uint, uint)
ALLOY_VEC_NAMES(long, long)
ALLOY_VEC_NAMES(ulong, ulong)
ALLOY_VEC_NAMES(half, half)
ALLOY_VEC_NAMES(bfloat, bfloat)
ALLOY_VEC_NAMES(float, float)
#undef ALLOY_VEC_NAMES
static_assert(sizeof(packed_float3) == 12 && alignof(packed_float3) == alignof(float),
              "packed vectors have no padding and their element's alignment");

}  // namespace metal

namespace alloy_msl {
// The indices of a swizzle as a type: a struct whose field is named like
// one is given an overload per such field (msl/rewrite.cpp).
template <int...> struct swizzle_tag {};
}  // namespace alloy_msl

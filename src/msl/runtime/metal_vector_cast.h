// Shared by both targets: a device pointer to a vector that the kernel made
// by a cast, `*((device const float4*)(row + d))` (natten-mlx) or
// `reinterpret_cast<device half4*>(p)[i]`. Apple's GPUs load and store such a
// vector at any address its elements may have; CUDA's vector instructions
// need the vector's own alignment (16 bytes for float4) and fault otherwise,
// and the host compiler may assume it too. The translator writes these casts
// as `::alloy_msl::vector_cast<const float4>(row + d)`: reads and writes
// through the result check the address and take the wide access when it is
// aligned, else one element (or, below an element's alignment, one byte) at a
// time. The result converts to a plain pointer, so code that keeps it in a
// declared `device float4*` still compiles; accesses through that pointer
// are plain ones again (README, known limits).
#pragma once

#include "metal_vector.h"

namespace alloy_msl {

namespace detail {
// A vector's width (its element type is its value_type): N, which
// sizeof cannot give for 3-vectors.
template <class V> struct vector_width;
template <class T, int N> struct vector_width<metal::vec<T, N>> {
  static constexpr int value = N;
};

// Below an element's alignment: bytes on the GPU; on the CPU one unaligned
// load or store, which the host compiler makes of the memcpy.
ALLOY_FUNC void copy_bytes(void* to, const void* from, unsigned long n) {
#if defined(__CUDACC__)
  for (unsigned long k = 0; k < n; ++k) static_cast<unsigned char*>(to)[k] = static_cast<const unsigned char*>(from)[k];
#else
  __builtin_memcpy(to, from, n);
#endif
}

template <class V> ALLOY_FUNC metal::remove_cv_t<V> load_any_aligned(const V* p) {
  typedef metal::remove_cv_t<V> Vec;
  typedef typename Vec::value_type T;
  constexpr int N = vector_width<Vec>::value;
  Vec v;
#if defined(__CUDACC__)
  const unsigned long a = reinterpret_cast<unsigned long>(p);
  if (a % alignof(Vec) == 0) return *reinterpret_cast<const Vec*>(p);
  if (a % alignof(T) == 0) {
    for (int i = 0; i < N; ++i) v[i] = reinterpret_cast<const T*>(p)[i];
    return v;
  }
#endif
  copy_bytes(&v, p, sizeof(T) * N);
  return v;
}

template <class V> ALLOY_FUNC void store_any_aligned(V* p, const V& v) {
  typedef typename V::value_type T;
  constexpr int N = vector_width<V>::value;
#if defined(__CUDACC__)
  const unsigned long a = reinterpret_cast<unsigned long>(p);
  if (a % alignof(V) == 0) {
    *p = v;
    return;
  }
  if (a % alignof(T) == 0) {
    for (int i = 0; i < N; ++i) reinterpret_cast<T*>(p)[i] = v[i];
    return;
  }
#endif
  copy_bytes(p, &v, sizeof(T) * N);
}
}  // namespace detail

// A writable vector's components as references (`p[i].x += 1`), at its
// elements' addresses: like operator[], they need the element's alignment.
template <class T, int N> struct component_refs;
template <class T> struct component_refs<T, 2> {
  T &x, &y, &r, &g;
  ALLOY_FUNC explicit component_refs(T* e) : x(e[0]), y(e[1]), r(e[0]), g(e[1]) {}
};
template <class T> struct component_refs<T, 3> {
  T &x, &y, &z, &r, &g, &b;
  ALLOY_FUNC explicit component_refs(T* e) : x(e[0]), y(e[1]), z(e[2]), r(e[0]), g(e[1]), b(e[2]) {}
};
template <class T> struct component_refs<T, 4> {
  T &x, &y, &z, &w, &r, &g, &b, &a;
  ALLOY_FUNC explicit component_refs(T* e)
      : x(e[0]), y(e[1]), z(e[2]), w(e[3]), r(e[0]), g(e[1]), b(e[2]), a(e[3]) {}
};

template <class V, int... I> struct vector_cast_swizzle_ref;

// What `*p` and `p[i]` give for a writable vector: reads convert, writes
// assign (compound assignments read, then write).
template <class V>
struct vector_cast_ref : component_refs<typename V::value_type, detail::vector_width<V>::value> {
  V* p;
  ALLOY_FUNC explicit vector_cast_ref(V* q)
      : component_refs<typename V::value_type, detail::vector_width<V>::value>(
            reinterpret_cast<typename V::value_type*>(q)),
        p(q) {}
  ALLOY_FUNC operator V() const { return detail::load_any_aligned(p); }
  ALLOY_FUNC V operator+() const { return V(*this); }
  ALLOY_FUNC const vector_cast_ref& operator=(const V& v) const {
    detail::store_any_aligned(p, v);
    return *this;
  }
  ALLOY_FUNC const vector_cast_ref& operator=(const vector_cast_ref& o) const { return *this = V(o); }
  ALLOY_FUNC typename V::value_type& operator[](int i) const {
    return reinterpret_cast<typename V::value_type*>(p)[i];
  }
  template <int... I> ALLOY_FUNC auto swizzle() const { return V(*this).template swizzle<I...>(); }
  template <int... I> ALLOY_FUNC vector_cast_swizzle_ref<V, I...> swizzle_ref() const {
    static_assert(metal::detail::distinct<I...>(), "a swizzle on the left of an assignment repeats a component");
    return {*this};
  }
#define ALLOY_VECTOR_CAST_OP(op) \
  ALLOY_FUNC const vector_cast_ref& operator op##=(const V& o) const { return *this = V(*this) op o; }
  ALLOY_FOR_COMPOUND_OPS(ALLOY_VECTOR_CAST_OP)
#undef ALLOY_VECTOR_CAST_OP
};

// `p[i].zw = ...`: the whole vector is read, the components replaced, and
// the vector written back (each access as vector_cast_ref's).
template <class V, int... I> struct vector_cast_swizzle_ref {
  typedef metal::vec<typename V::value_type, sizeof...(I)> value_type;
  vector_cast_ref<V> ref;
  ALLOY_FUNC operator value_type() const { return V(ref).template swizzle<I...>(); }
  ALLOY_FUNC const vector_cast_swizzle_ref& operator=(const value_type o) const {
    V v = V(ref);
    v.template swizzle_ref<I...>() = o;
    ref = v;
    return *this;
  }
  ALLOY_FUNC const vector_cast_swizzle_ref& operator=(const vector_cast_swizzle_ref& o) const {
    return *this = value_type(o);
  }
#define ALLOY_VECTOR_CAST_OP(op) \
  ALLOY_FUNC const vector_cast_swizzle_ref& operator op##=(const value_type& o) const { \
    return *this = value_type(*this) op o;                                              \
  }
  ALLOY_FOR_COMPOUND_OPS(ALLOY_VECTOR_CAST_OP)
#undef ALLOY_VECTOR_CAST_OP
};

// Reads of a read-only vector are values: templates (`dot(*p, q)`) deduce
// the vector type from them as they would from the plain pointer's element.
template <class V> struct vector_cast_access {
  typedef vector_cast_ref<V> type;
  ALLOY_FUNC static type at(V* p) { return type(p); }
};
template <class V> struct vector_cast_access<const V> {
  typedef V type;
  ALLOY_FUNC static type at(const V* p) { return detail::load_any_aligned(p); }
};

// Offsets are templates on the integer type, so that they beat the built-in
// pointer arithmetic the conversion to V* would also offer (`p + i` with a
// `uint i` is otherwise ambiguous).
template <class V> struct vector_cast_ptr {
  V* p;
  vector_cast_ptr() = default;
  ALLOY_FUNC vector_cast_ptr(V* q) : p(q) {}
  // `const device float4* q = (device float4*)x;`
  template <class U> ALLOY_FUNC vector_cast_ptr(vector_cast_ptr<U> o) : p(o.p) {}
  ALLOY_FUNC operator V*() const { return p; }
  // Back to a scalar (or another) pointer, `((const device int8_t*)p4)[i]`
  // as Metal reinterprets any pointer within its address space: explicit,
  // so C-style casts and static_cast take it and nothing converts silently.
  template <class U> ALLOY_FUNC explicit operator U*() const { return (U*)(p); }
  ALLOY_FUNC typename vector_cast_access<V>::type operator*() const { return vector_cast_access<V>::at(p); }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  ALLOY_FUNC typename vector_cast_access<V>::type operator[](I i) const { return vector_cast_access<V>::at(p + i); }
  ALLOY_FUNC V* operator->() const { return p; }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  ALLOY_FUNC vector_cast_ptr operator+(I n) const { return {p + n}; }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  ALLOY_FUNC vector_cast_ptr operator-(I n) const { return {p - n}; }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  friend ALLOY_FUNC vector_cast_ptr operator+(I n, vector_cast_ptr q) { return {q.p + n}; }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  ALLOY_FUNC vector_cast_ptr& operator+=(I n) { p += n; return *this; }
  template <class I, metal::enable_if_t<metal::is_integral_v<I>, int> = 0>
  ALLOY_FUNC vector_cast_ptr& operator-=(I n) { p -= n; return *this; }
  ALLOY_FUNC vector_cast_ptr& operator++() { ++p; return *this; }
  ALLOY_FUNC vector_cast_ptr& operator--() { --p; return *this; }
  ALLOY_FUNC vector_cast_ptr operator++(int) { return {p++}; }
  ALLOY_FUNC vector_cast_ptr operator--(int) { return {p--}; }
};

// `(device const float4*)(x)` -> `vector_cast<const float4>(x)`; `x` is any
// pointer (or address) the Metal cast took.
template <class V, class P> ALLOY_FUNC vector_cast_ptr<V> vector_cast(P* x) {
  return vector_cast_ptr<V>((V*)(x));
}
template <class V, class P> ALLOY_FUNC vector_cast_ptr<V> vector_cast(vector_cast_ptr<P> x) {
  return vector_cast_ptr<V>((V*)(x.p));
}

// `reinterpret_cast<const device int8_t*>(x)` -> `pointer_cast<const int8_t*>(x)`:
// `x` is a pointer or an address, or a vector pointer variable, which
// reinterpret_cast cannot take (a class here).
template <class T, class P> ALLOY_FUNC T pointer_cast(P x) { return reinterpret_cast<T>(x); }
template <class T, class V> ALLOY_FUNC T pointer_cast(vector_cast_ptr<V> x) { return reinterpret_cast<T>(x.p); }

}  // namespace alloy_msl

// CUDA target: Metal's atomics. atomic<T> has T's layout, so a plain buffer
// cast to `atomic<T>*` (the translator's cast for atomic_outputs, or a user's
// `(device atomic_float*)out`) works. Operations map to CUDA's atomics where
// one exists (int/uint/ulong, float add/exchange, half and bfloat add via
// PTX) and to compare-and-swap loops otherwise (float min/max, 8/16-bit
// types). All are relaxed, as Metal's; a stronger order adds fences.
// Fetch operations return the old value; compare_exchange writes the
// observed value to *expected when it fails.
#pragma once

namespace metal {

template <class T> struct atomic {
  T value_;  // the only member: atomic<T> and T share their layout
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<half> atomic_half;
typedef atomic<bfloat> atomic_bfloat;
typedef atomic<long> atomic_long;
typedef atomic<ulong> atomic_ulong;

}  // namespace metal

namespace alloy_msl {
namespace cuda {
namespace atomic_detail {

template <int Size> struct word;
template <> struct word<1> { typedef unsigned char type; };
template <> struct word<2> { typedef unsigned short type; };
template <> struct word<4> { typedef unsigned type; };
template <> struct word<8> { typedef unsigned long long type; };

template <class T> ALLOY_FUNC T* raw(const volatile metal::atomic<T>* a) {
  return const_cast<T*>(&a->value_);
}

ALLOY_FUNC void fence_before(metal::memory_order o) {
  if (o != metal::memory_order_relaxed && o != metal::memory_order_acquire) __threadfence();
}
ALLOY_FUNC void fence_after(metal::memory_order o) {
  if (o != metal::memory_order_relaxed && o != metal::memory_order_release) __threadfence();
}

// Compare-and-swap of an object of 1, 2, 4 or 8 bytes; returns the value seen.
// 1-byte objects go through their aligned 32-bit word.
template <class T> ALLOY_FUNC T cas(T* p, T expected, T desired) {
  typedef typename word<sizeof(T)>::type W;
  W e = __builtin_bit_cast(W, expected), d = __builtin_bit_cast(W, desired);
  if constexpr (sizeof(T) == 1) {
    unsigned* wp = reinterpret_cast<unsigned*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(3));
    unsigned shift = unsigned(reinterpret_cast<uintptr_t>(p) & 3u) * 8u;
    unsigned old = *reinterpret_cast<volatile unsigned*>(wp);
    for (;;) {
      W cur = W(old >> shift);
      if (cur != e) return __builtin_bit_cast(T, cur);
      unsigned repl = (old & ~(0xffu << shift)) | (unsigned(d) << shift);
      unsigned seen = atomicCAS(wp, old, repl);
      if (seen == old) return expected;
      old = seen;
    }
  } else {
    return __builtin_bit_cast(T, W(atomicCAS(reinterpret_cast<W*>(p), e, d)));
  }
}

// Applies `f` atomically through a CAS loop; returns the old value.
template <class T, class F> ALLOY_FUNC T cas_loop(T* p, F f) {
  typedef typename word<sizeof(T)>::type W;
  T old = __builtin_bit_cast(T, *reinterpret_cast<volatile W*>(p));
  for (;;) {
    T seen = cas(p, old, T(f(old)));
    if (__builtin_bit_cast(W, seen) == __builtin_bit_cast(W, old)) return old;
    old = seen;
  }
}

template <class T> inline constexpr bool native_int = (metal::is_integral_v<T> && (sizeof(T) == 4 || sizeof(T) == 8));
template <class T> using native_t =
    metal::conditional_t<sizeof(T) == 8, metal::conditional_t<metal::is_signed_v<T>, long long, unsigned long long>,
                         metal::conditional_t<metal::is_signed_v<T>, int, unsigned>>;

template <class T> ALLOY_FUNC T fetch_add(T* p, T v) {
  if constexpr (native_int<T> && !(sizeof(T) == 8 && metal::is_signed_v<T>)) {
    return T(atomicAdd(reinterpret_cast<native_t<T>*>(p), native_t<T>(v)));
  } else if constexpr (native_int<T>) {  // signed 64-bit: two's complement add
    return T(atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)(v)));
  } else if constexpr (metal::is_same_v<T, float>) {
    return atomicAdd(p, v);
  } else if constexpr (metal::is_same_v<T, metal::half>) {
    unsigned short old;
    asm volatile("atom.add.noftz.f16 %0, [%1], %2;" : "=h"(old) : "l"(p), "h"(v.bits) : "memory");
    return metal::half::from_bits(old);
  } else if constexpr (metal::is_same_v<T, metal::bfloat>) {
    unsigned short old;
    asm volatile("atom.add.noftz.bf16 %0, [%1], %2;" : "=h"(old) : "l"(p), "h"(v.bits) : "memory");
    return metal::bfloat::from_bits(old);
  } else {
    return cas_loop(p, [&](T x) { return x + v; });
  }
}
template <class T> ALLOY_FUNC T fetch_sub(T* p, T v) {
  if constexpr (native_int<T>) {
    return fetch_add(p, T(T(0) - v));  // wraps as the integer subtraction does
  } else {
    return fetch_add(p, T(-v));
  }
}
template <class T> ALLOY_FUNC T fetch_min(T* p, T v) {
  if constexpr (native_int<T>) {
    return T(atomicMin(reinterpret_cast<native_t<T>*>(p), native_t<T>(v)));
  } else {
    return cas_loop(p, [&](T x) { return metal::min(x, v); });
  }
}
template <class T> ALLOY_FUNC T fetch_max(T* p, T v) {
  if constexpr (native_int<T>) {
    return T(atomicMax(reinterpret_cast<native_t<T>*>(p), native_t<T>(v)));
  } else {
    return cas_loop(p, [&](T x) { return metal::max(x, v); });
  }
}
#define ALLOY_ATOMIC_BITWISE(name, fn, op)                                                        \
  template <class T> ALLOY_FUNC T name(T* p, T v) {                                              \
    if constexpr (native_int<T>) {                                                               \
      typedef metal::conditional_t<sizeof(T) == 8, unsigned long long, unsigned> U;              \
      return T(fn(reinterpret_cast<U*>(p), U(v)));                                               \
    } else {                                                                                     \
      return cas_loop(p, [&](T x) { return T(x op v); });                                        \
    }                                                                                            \
  }
ALLOY_ATOMIC_BITWISE(fetch_and, atomicAnd, &)
ALLOY_ATOMIC_BITWISE(fetch_or, atomicOr, |)
ALLOY_ATOMIC_BITWISE(fetch_xor, atomicXor, ^)
#undef ALLOY_ATOMIC_BITWISE

template <class T> ALLOY_FUNC T exchange(T* p, T v) {
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    typedef typename word<sizeof(T)>::type W;
    return __builtin_bit_cast(T, W(atomicExch(reinterpret_cast<W*>(p), __builtin_bit_cast(W, v))));
  } else {
    return cas_loop(p, [&](T) { return v; });
  }
}
template <class T> ALLOY_FUNC T load(const T* p) {
  typedef typename word<sizeof(T)>::type W;
  return __builtin_bit_cast(T, *reinterpret_cast<const volatile W*>(p));
}
template <class T> ALLOY_FUNC void store(T* p, T v) {
  typedef typename word<sizeof(T)>::type W;
  *reinterpret_cast<volatile W*>(p) = __builtin_bit_cast(W, v);
}

}  // namespace atomic_detail
}  // namespace cuda
}  // namespace alloy_msl

namespace metal {

#define ALLOY_ATOMIC_FETCH(name)                                                                  \
  template <class T, class U>                                                                     \
  ALLOY_FUNC T atomic_##name##_explicit(volatile atomic<T>* obj, U operand,                       \
                                        memory_order order = memory_order_relaxed) {              \
    namespace d = ::alloy_msl::cuda::atomic_detail;                                               \
    d::fence_before(order);                                                                       \
    T old = d::name(d::raw(obj), T(operand));                                                     \
    d::fence_after(order);                                                                        \
    return old;                                                                                   \
  }
ALLOY_ATOMIC_FETCH(fetch_add)
ALLOY_ATOMIC_FETCH(fetch_sub)
ALLOY_ATOMIC_FETCH(fetch_min)
ALLOY_ATOMIC_FETCH(fetch_max)
ALLOY_ATOMIC_FETCH(fetch_and)
ALLOY_ATOMIC_FETCH(fetch_or)
ALLOY_ATOMIC_FETCH(fetch_xor)
ALLOY_ATOMIC_FETCH(exchange)
#undef ALLOY_ATOMIC_FETCH

template <class T, class U>
ALLOY_FUNC void atomic_store_explicit(volatile atomic<T>* obj, U desired, memory_order order = memory_order_relaxed) {
  namespace d = ::alloy_msl::cuda::atomic_detail;
  d::fence_before(order);
  d::store(d::raw(obj), T(desired));
}
template <class T>
ALLOY_FUNC T atomic_load_explicit(const volatile atomic<T>* obj, memory_order order = memory_order_relaxed) {
  namespace d = ::alloy_msl::cuda::atomic_detail;
  T v = d::load(static_cast<const T*>(d::raw(obj)));
  d::fence_after(order);
  return v;
}
template <class T, class U>
ALLOY_FUNC bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* obj, T* expected, U desired,
                                                      memory_order success = memory_order_relaxed,
                                                      memory_order failure = memory_order_relaxed) {
  namespace d = ::alloy_msl::cuda::atomic_detail;
  typedef typename d::word<sizeof(T)>::type W;
  d::fence_before(success);
  T want = *expected;
  T seen = d::cas(d::raw(obj), want, T(desired));
  bool ok = __builtin_bit_cast(W, seen) == __builtin_bit_cast(W, want);
  d::fence_after(ok ? success : failure);
  if (!ok) *expected = seen;
  return ok;
}
template <class T, class U>
ALLOY_FUNC bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* obj, T* expected, U desired,
                                                        memory_order success = memory_order_relaxed,
                                                        memory_order failure = memory_order_relaxed) {
  return atomic_compare_exchange_weak_explicit(obj, expected, desired, success, failure);
}

// The non-_explicit forms (sequentially consistent in C++; Metal has only
// relaxed, so they are relaxed here too).
template <class T, class U> ALLOY_FUNC void atomic_store(volatile atomic<T>* obj, U v) {
  atomic_store_explicit(obj, v, memory_order_relaxed);
}
template <class T> ALLOY_FUNC T atomic_load(const volatile atomic<T>* obj) {
  return atomic_load_explicit(obj, memory_order_relaxed);
}

}  // namespace metal

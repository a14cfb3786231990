// CUDA target: Metal's SIMD-group and quad-group functions on warp
// intrinsics. A SIMD group is a warp of 32 lanes; a quad is 4 lanes.
//
// Semantics kept from Metal, for the lanes present (cuda_sync.h):
//  - reductions and scans cover exactly the lanes present, also in a
//    partial last SIMD group; exclusive scans give 0 (sum) / 1 (product) in
//    the first lane;
//  - shuffle_up/down do not wrap (a lane whose source is out of range keeps
//    its value), rotates wrap around the lanes present;
//  - any type shuffles (bool, 8/16/64-bit, half, bfloat, vectors), word by word.
// As in CUDA, every present lane of the SIMD group must make the call
// (uniform control flow); Metal's calls from divergent branches, over a
// subset of lanes, are not supported.
#pragma once

namespace alloy_msl {
namespace cuda {
namespace simd_detail {

// Applies `f` to each 32-bit word of `v` (zero-padded) and reassembles.
template <class T, class F> ALLOY_FUNC T per_word(const T& v, F f) {
  constexpr int W = int((sizeof(T) + 3) / 4);
  unsigned w[W];
  w[W - 1] = 0u;
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < W; ++i) w[i] = f(w[i]);
  T r;
  memcpy(&r, w, sizeof(T));
  return r;
}
template <class T> ALLOY_FUNC T shfl(unsigned mask, const T& v, int src, int width = 32) {
  return per_word(v, [&](unsigned x) { return __shfl_sync(mask, x, src, width); });
}
template <class T> ALLOY_FUNC T shfl_up(unsigned mask, const T& v, unsigned d, int width = 32) {
  return per_word(v, [&](unsigned x) { return __shfl_up_sync(mask, x, d, width); });
}
template <class T> ALLOY_FUNC T shfl_down(unsigned mask, const T& v, unsigned d, int width = 32) {
  return per_word(v, [&](unsigned x) { return __shfl_down_sync(mask, x, d, width); });
}
template <class T> ALLOY_FUNC T shfl_xor(unsigned mask, const T& v, int m, int width = 32) {
  return per_word(v, [&](unsigned x) { return __shfl_xor_sync(mask, x, m, width); });
}

// Reduction over each segment of W lanes (32: SIMD group, 4: quad),
// covering the lanes present only. The full-warp test is warp-uniform, so
// both paths run converged.
template <int W, class T, class Op> ALLOY_FUNC T reduce(T v, Op op) {
  const unsigned n = lanes_present();
  const unsigned mask = n >= 32u ? 0xffffffffu : ((1u << n) - 1u);
  if (n == 32u) {
#pragma unroll
    for (int o = W / 2; o > 0; o >>= 1) v = op(v, shfl_xor(mask, v, o, W));
    return v;
  }
  const unsigned lane = lane_id();
  const unsigned seg_lane = lane & (W - 1u);
  const unsigned seg_n = n - (lane & ~(W - 1u));  // lanes present from my segment's start on
#pragma unroll
  for (int o = W / 2; o > 0; o >>= 1) {
    T t = shfl_down(mask, v, unsigned(o), W);
    if (seg_lane + unsigned(o) < seg_n && seg_lane + unsigned(o) < unsigned(W)) v = op(v, t);
  }
  return shfl(mask, v, 0, W);
}

// Inclusive scan over each segment of W lanes (sources are lower lanes,
// always present).
template <int W, class T, class Op> ALLOY_FUNC T inclusive_scan(T v, Op op) {
  const unsigned mask = present_mask();
  const unsigned seg_lane = lane_id() & (W - 1u);
#pragma unroll
  for (int o = 1; o < W; o <<= 1) {
    T t = shfl_up(mask, v, unsigned(o), W);
    if (seg_lane >= unsigned(o)) v = op(t, v);
  }
  return v;
}
template <int W, class T, class Op> ALLOY_FUNC T exclusive_scan(T v, Op op, T identity) {
  T inc = inclusive_scan<W>(v, op);
  T prev = shfl_up(present_mask(), inc, 1u, W);
  return (lane_id() & (W - 1u)) == 0u ? identity : prev;
}

template <class T> inline constexpr bool is_int32 = metal::is_integral_v<T> && sizeof(T) <= 4;

struct Add {
  template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return T(a + b); }
};
struct Mul {
  template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return T(a * b); }
};
struct Min {
  template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return metal::min(a, b); }
};
struct Max {
  template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return metal::max(a, b); }
};
struct And {
  template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return T(a & b); }
};
struct Or {
  template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return T(a | b); }
};
struct Xor {
  template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return T(a ^ b); }
};

// The rotate/shift source lane within a segment of `w` lanes of which `n`
// are present (n <= w).
ALLOY_FUNC unsigned segment_lanes_present(unsigned w) {
  unsigned n = lanes_present(), base = lane_id() & ~(w - 1u);
  unsigned left = n - base;
  return left < w ? left : w;
}

template <int W, class T> ALLOY_FUNC T shuffle_up(const T& v, unsigned delta) {
  return shfl_up(present_mask(), v, delta, W);  // sources are lower lanes: present
}
template <int W, class T> ALLOY_FUNC T shuffle_down(const T& v, unsigned delta) {
  T r = shfl_down(present_mask(), v, delta, W);
  return (lane_id() & (W - 1u)) + delta < segment_lanes_present(W) ? r : v;
}
template <int W, class T> ALLOY_FUNC T shuffle_xor(const T& v, unsigned m) {
  T r = shfl_xor(present_mask(), v, int(m), W);
  return ((lane_id() & (W - 1u)) ^ m) < segment_lanes_present(W) ? r : v;
}
template <int W, class T> ALLOY_FUNC T rotate_down(const T& v, unsigned delta) {
  unsigned n = segment_lanes_present(W), j = lane_id() & (W - 1u);
  unsigned src = (j + delta % n) % n;
  return shfl(present_mask(), v, int(src), W);
}
template <int W, class T> ALLOY_FUNC T rotate_up(const T& v, unsigned delta) {
  unsigned n = segment_lanes_present(W), j = lane_id() & (W - 1u);
  unsigned src = (j + n - delta % n) % n;
  return shfl(present_mask(), v, int(src), W);
}
template <int W, class T> ALLOY_FUNC T fill_up(const T& data, const T& filling, unsigned delta, unsigned modulo) {
  unsigned lane = lane_id() & (W - 1u), j = lane % modulo, base = lane - j;
  bool own = j >= delta;
  unsigned src = own ? lane - delta : base + modulo - delta + j;
  unsigned mask = present_mask();
  T d = shfl(mask, data, int(src), W);
  T f = shfl(mask, filling, int(src), W);
  return own ? d : f;
}
template <int W, class T> ALLOY_FUNC T fill_down(const T& data, const T& filling, unsigned delta, unsigned modulo) {
  unsigned lane = lane_id() & (W - 1u), j = lane % modulo, base = lane - j;
  bool own = j + delta < modulo;
  unsigned src = own ? lane + delta : base + j + delta - modulo;
  unsigned mask = present_mask();
  T d = shfl(mask, data, int(src), W);
  T f = shfl(mask, filling, int(src), W);
  return own ? d : f;
}

}  // namespace simd_detail
}  // namespace cuda
}  // namespace alloy_msl

namespace metal {

// A ballot: bit i for lane i. Metal's simd_vote / quad_vote.
struct simd_vote {
  typedef uint64_t vote_t;
  vote_t v;
  ALLOY_FUNC constexpr explicit simd_vote(vote_t bits = 0) : v(bits) {}
  ALLOY_FUNC constexpr explicit operator vote_t() const { return v; }
  ALLOY_FUNC bool all() const { return v == vote_t(::alloy_msl::cuda::present_mask()); }
  ALLOY_FUNC constexpr bool any() const { return v != 0; }
};
struct quad_vote {
  typedef uint8_t vote_t;
  vote_t v;
  ALLOY_FUNC constexpr explicit quad_vote(vote_t bits = 0) : v(bits) {}
  ALLOY_FUNC constexpr explicit operator vote_t() const { return v; }
  ALLOY_FUNC bool all() const {
    unsigned shift = ::alloy_msl::cuda::lane_id() & ~3u;
    return v == vote_t((::alloy_msl::cuda::present_mask() >> shift) & 0xfu);
  }
  ALLOY_FUNC constexpr bool any() const { return v != 0; }
};

#define ALLOY_SIMD_PREFIX(prefix, W)                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle(T data, uint lane) {                             \
    return ::alloy_msl::cuda::simd_detail::shfl(::alloy_msl::cuda::present_mask(), data, int(lane), W); \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_broadcast(T data, uint lane) { return prefix##_shuffle(data, lane); } \
  template <class T> ALLOY_FUNC T prefix##_broadcast_first(T data) { return prefix##_shuffle(data, 0u); } \
  template <class T> ALLOY_FUNC T prefix##_shuffle_up(T data, uint delta) {                         \
    return ::alloy_msl::cuda::simd_detail::shuffle_up<W>(data, delta);                              \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle_down(T data, uint delta) {                       \
    return ::alloy_msl::cuda::simd_detail::shuffle_down<W>(data, delta);                            \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle_xor(T data, uint mask) {                         \
    return ::alloy_msl::cuda::simd_detail::shuffle_xor<W>(data, mask);                              \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle_rotate_down(T data, uint delta) {                \
    return ::alloy_msl::cuda::simd_detail::rotate_down<W>(data, delta);                             \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle_rotate_up(T data, uint delta) {                  \
    return ::alloy_msl::cuda::simd_detail::rotate_up<W>(data, delta);                               \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle_and_fill_up(T data, T filling, uint delta, uint modulo = W) { \
    return ::alloy_msl::cuda::simd_detail::fill_up<W>(data, filling, delta, modulo);                \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle_and_fill_down(T data, T filling, uint delta, uint modulo = W) { \
    return ::alloy_msl::cuda::simd_detail::fill_down<W>(data, filling, delta, modulo);              \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_product(T data) {                                        \
    return ::alloy_msl::cuda::simd_detail::reduce<W>(data, ::alloy_msl::cuda::simd_detail::Mul{});  \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_prefix_inclusive_sum(T data) {                           \
    return ::alloy_msl::cuda::simd_detail::inclusive_scan<W>(data, ::alloy_msl::cuda::simd_detail::Add{}); \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_prefix_inclusive_product(T data) {                       \
    return ::alloy_msl::cuda::simd_detail::inclusive_scan<W>(data, ::alloy_msl::cuda::simd_detail::Mul{}); \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_prefix_exclusive_sum(T data) {                           \
    return ::alloy_msl::cuda::simd_detail::exclusive_scan<W>(data, ::alloy_msl::cuda::simd_detail::Add{}, T(0)); \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_prefix_exclusive_product(T data) {                       \
    return ::alloy_msl::cuda::simd_detail::exclusive_scan<W>(data, ::alloy_msl::cuda::simd_detail::Mul{}, T(1)); \
  }                                                                                                  \
  ALLOY_FUNC bool prefix##_is_helper_thread() { return false; }

ALLOY_SIMD_PREFIX(simd, 32)
ALLOY_SIMD_PREFIX(quad, 4)
#undef ALLOY_SIMD_PREFIX

// Reductions with a single-instruction path for 32-bit integers over a
// SIMD group (redux.sync takes any member mask).
#define ALLOY_SIMD_REDUCE(name, Op, redux)                                                          \
  template <class T> ALLOY_FUNC T simd_##name(T data) {                                             \
    if constexpr (::alloy_msl::cuda::simd_detail::is_int32<T>) {                                    \
      typedef conditional_t<is_signed_v<T>, int, unsigned> I;                                       \
      return T(redux(::alloy_msl::cuda::present_mask(), I(data)));                                  \
    } else {                                                                                         \
      return ::alloy_msl::cuda::simd_detail::reduce<32>(data, ::alloy_msl::cuda::simd_detail::Op{}); \
    }                                                                                                \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T quad_##name(T data) {                                             \
    return ::alloy_msl::cuda::simd_detail::reduce<4>(data, ::alloy_msl::cuda::simd_detail::Op{});   \
  }
ALLOY_SIMD_REDUCE(sum, Add, __reduce_add_sync)
ALLOY_SIMD_REDUCE(min, Min, __reduce_min_sync)
ALLOY_SIMD_REDUCE(max, Max, __reduce_max_sync)
#undef ALLOY_SIMD_REDUCE
#define ALLOY_SIMD_BITWISE(name, Op, redux)                                                         \
  template <class T> ALLOY_FUNC T simd_##name(T data) {                                             \
    if constexpr (::alloy_msl::cuda::simd_detail::is_int32<T>) {                                    \
      return T(redux(::alloy_msl::cuda::present_mask(), unsigned(data)));                           \
    } else {                                                                                         \
      return ::alloy_msl::cuda::simd_detail::reduce<32>(data, ::alloy_msl::cuda::simd_detail::Op{}); \
    }                                                                                                \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T quad_##name(T data) {                                             \
    return ::alloy_msl::cuda::simd_detail::reduce<4>(data, ::alloy_msl::cuda::simd_detail::Op{});   \
  }
ALLOY_SIMD_BITWISE(and, And, __reduce_and_sync)
ALLOY_SIMD_BITWISE(or, Or, __reduce_or_sync)
ALLOY_SIMD_BITWISE(xor, Xor, __reduce_xor_sync)
#undef ALLOY_SIMD_BITWISE

// ---- votes
ALLOY_FUNC simd_vote simd_ballot(bool expr) {
  return simd_vote(__ballot_sync(::alloy_msl::cuda::present_mask(), expr));
}
ALLOY_FUNC simd_vote simd_active_threads_mask() { return simd_vote(::alloy_msl::cuda::present_mask()); }
ALLOY_FUNC bool simd_all(bool expr) { return __all_sync(::alloy_msl::cuda::present_mask(), expr); }
ALLOY_FUNC bool simd_any(bool expr) { return __any_sync(::alloy_msl::cuda::present_mask(), expr); }
ALLOY_FUNC bool simd_is_first() { return ::alloy_msl::cuda::lane_id() == 0u; }

ALLOY_FUNC quad_vote quad_ballot(bool expr) {
  unsigned bits = __ballot_sync(::alloy_msl::cuda::present_mask(), expr);
  return quad_vote(uint8_t((bits >> (::alloy_msl::cuda::lane_id() & ~3u)) & 0xfu));
}
ALLOY_FUNC quad_vote quad_active_threads_mask() {
  return quad_vote(uint8_t((::alloy_msl::cuda::present_mask() >> (::alloy_msl::cuda::lane_id() & ~3u)) & 0xfu));
}
ALLOY_FUNC bool quad_all(bool expr) {
  quad_vote v = quad_ballot(expr);
  return v.v == uint8_t(quad_active_threads_mask());
}
ALLOY_FUNC bool quad_any(bool expr) { return quad_ballot(expr).v != 0; }
ALLOY_FUNC bool quad_is_first() { return (::alloy_msl::cuda::lane_id() & 3u) == 0u; }

}  // namespace metal

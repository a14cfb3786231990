// CUDA target: Metal's SIMD-group and quad-group functions on warp
// intrinsics. A SIMD group is a warp of 32 lanes; a quad is 4 lanes.
//
// Metal defines these functions over the threads *active* at the call: from
// a branch taken by some lanes, simd_sum sums over those lanes, a scan runs
// over them in lane order, simd_ballot has bits for them only. Here the
// active set is __activemask(), the lanes of the warp executing the call
// together.
//  - Guaranteed (sm_70+, independent thread scheduling): the lanes that
//    execute __activemask() together all get the same mask and then run the
//    *_sync intrinsics with it, which wait for exactly those lanes; so a call
//    from any branch, loop or early-returned warp is well defined: it
//    neither hangs nor reads an inactive lane's register.
//  - Not guaranteed: CUDA does not promise that all lanes that took a branch
//    are converged when they reach the call. The compiler reconverges them
//    at the end of an if/else or loop (in practice, not by contract), so the
//    set is what Metal's is; a warp split further would compute over each
//    part separately (results over fewer lanes, still no hang).
//
// Two paths, chosen by a warp-uniform test (every lane of the set computes it
// from the same mask):
//  - uniform: the active set is every lane present (cuda_sync.h), as in all
//    calls outside branches. Butterfly/segmented code over the present lanes
//    of a whole or partial last warp (the code benchmarks run).
//  - general: any other active set. Scans run over the active lanes of the
//    segment by pointer jumping (Hillis-Steele over their ranks: each step
//    reads the value and the pointer of the active lane 2^k ranks below),
//    reductions take the inclusive scan of the segment's last active lane.
// 32-bit integer simd_ reductions need no test: redux.sync takes any mask.
// Shuffles have one path, as cheap as before: the source lane is computed as
// in Metal and read if it is active.
//
// Semantics, for the active lanes of a SIMD group (W = 32) or quad (W = 4):
//  - reductions and scans cover exactly the active lanes; exclusive scans
//    give 0 (sum) / 1 (product) in the first active lane;
//  - shuffle_up/down do not wrap (a lane whose source is out of range keeps
//    its value); rotates wrap around the lanes present;
//  - a source lane that is inactive (or absent): Metal leaves the result
//    undefined (threads may only read from active threads); the caller gets
//    its own value, as at the edges of shuffle_up/down, and as the CPU
//    target (metal_cpu.h) does, so both targets agree;
//  - broadcast_first and is_first use the first (lowest) active lane;
//  - ballot / active_threads_mask / all / any cover the active lanes;
//  - any type shuffles (bool, 8/16/64-bit, half, bfloat, vectors), word by word.
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

// ---- lane sets

// The lanes of this warp executing this call (see the top of this file):
// every lane present inside a statement the translator found they all run
// together (cuda_sync.h's simd_reconverge), else __activemask().
ALLOY_FUNC unsigned active_mask() { return in_converged_statement() ? present_mask() : __activemask(); }

// Bits of the W-lane segment (SIMD group or quad) that holds `lane`.
template <int W> ALLOY_FUNC unsigned segment_bits(unsigned lane) {
  if constexpr (W == 32) {
    return 0xffffffffu;
  } else {
    return ((1u << W) - 1u) << (lane & ~(W - 1u));
  }
}
// Highest set bit of `bits`, or -1 for none.
ALLOY_FUNC int highest_lane(unsigned bits) { return 31 - __clz(bits); }
// My nearest active lane below me in my segment, or -1.
template <int W> ALLOY_FUNC int active_predecessor(unsigned mask, unsigned lane) {
  return highest_lane(mask & segment_bits<W>(lane) & ((1u << lane) - 1u));
}
// `v` of lane `src` when that lane takes part in the call, else the caller's
// own `v` (Metal: reading an inactive lane is undefined).
template <class T> ALLOY_FUNC T read_lane(unsigned mask, const T& v, unsigned src) {
  const bool active = src < 32u && ((mask >> src) & 1u) != 0u;
  return shfl(mask, v, int(active ? src : lane_id()));
}

// ---- general path: any set of active lanes. The entry points stay out of
// line: the uniform path, which is what most calls run, keeps its registers.

// Inclusive scan over the active lanes of each segment, in lane order.
// `from` is the active lane `step` ranks below me (-1: none); after each
// step my value covers 2 * step ranks and `from` doubles its distance by
// taking the pointer of the lane it points to.
template <int W, class T, class Op> ALLOY_FUNC T scan_active_lanes(unsigned mask, T v, Op op) {
  const unsigned lane = lane_id();
  int from = active_predecessor<W>(mask, lane);
#pragma unroll
  for (int step = 1; step < W; step <<= 1) {
    const int src = from >= 0 ? from : int(lane);
    const T t = shfl(mask, v, src);
    const int next = __shfl_sync(mask, from, src);
    if (from >= 0) {
      v = op(t, v);
      from = next;
    }
  }
  return v;
}
template <int W, class T, class Op> __device__ __noinline__ T general_inclusive_scan(unsigned mask, T v, Op op) {
  return scan_active_lanes<W>(mask, v, op);
}
template <int W, class T, class Op>
__device__ __noinline__ T general_exclusive_scan(unsigned mask, T v, Op op, T identity) {
  const T inc = scan_active_lanes<W>(mask, v, op);
  const int prev = active_predecessor<W>(mask, lane_id());
  const T p = shfl(mask, inc, prev >= 0 ? prev : int(lane_id()));
  return prev >= 0 ? p : identity;
}
// The last active lane of the segment holds the total.
template <int W, class T, class Op> __device__ __noinline__ T general_reduce(unsigned mask, T v, Op op) {
  const T inc = scan_active_lanes<W>(mask, v, op);
  return shfl(mask, inc, highest_lane(mask & segment_bits<W>(lane_id())));
}

// ---- reductions and scans: the uniform path, else the general one

// Reduction over each segment of W lanes. Uniform path: every present lane
// calls; the full-warp test is warp-uniform, so both of its branches run
// converged.
template <int W, class T, class Op> ALLOY_FUNC T reduce(T v, Op op) {
  const unsigned mask = active_mask();
  if (mask != present_mask()) return general_reduce<W>(mask, v, op);
  const unsigned n = lanes_present();
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

// Inclusive scan over each segment of W lanes when every present lane calls
// (sources are lower lanes, always present).
template <int W, class T, class Op> ALLOY_FUNC T uniform_inclusive_scan(unsigned mask, T v, Op op) {
  const unsigned seg_lane = lane_id() & (W - 1u);
#pragma unroll
  for (int o = 1; o < W; o <<= 1) {
    T t = shfl_up(mask, v, unsigned(o), W);
    if (seg_lane >= unsigned(o)) v = op(t, v);
  }
  return v;
}
template <int W, class T, class Op> ALLOY_FUNC T inclusive_scan(T v, Op op) {
  const unsigned mask = active_mask();
  if (mask != present_mask()) return general_inclusive_scan<W>(mask, v, op);
  return uniform_inclusive_scan<W>(mask, v, op);
}
template <int W, class T, class Op> ALLOY_FUNC T exclusive_scan(T v, Op op, T identity) {
  const unsigned mask = active_mask();
  if (mask != present_mask()) return general_exclusive_scan<W>(mask, v, op, identity);
  T inc = uniform_inclusive_scan<W>(mask, v, op);
  T prev = shfl_up(mask, inc, 1u, W);
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

// ---- shuffles: Metal's source lane, read if active (else the caller's value)

// Lanes present in the caller's segment of `w` lanes (1..w): rotations wrap
// around them.
ALLOY_FUNC unsigned segment_lanes_present(unsigned w) {
  unsigned n = lanes_present(), base = lane_id() & ~(w - 1u);
  unsigned left = n - base;
  return left < w ? left : w;
}

template <int W, class T> ALLOY_FUNC T shuffle(const T& v, unsigned src_in_segment) {
  const unsigned base = lane_id() & ~(W - 1u);
  return read_lane(active_mask(), v, base + (src_in_segment & (W - 1u)));
}
template <int W, class T> ALLOY_FUNC T broadcast_first(const T& v) {
  const unsigned mask = active_mask();
  return shfl(mask, v, __ffs(mask & segment_bits<W>(lane_id())) - 1);  // my segment's first active lane
}
template <int W, class T> ALLOY_FUNC T shuffle_up(const T& v, unsigned delta) {
  const unsigned lane = lane_id(), me = lane & (W - 1u);
  return read_lane(active_mask(), v, me >= delta ? lane - delta : lane);
}
template <int W, class T> ALLOY_FUNC T shuffle_down(const T& v, unsigned delta) {
  const unsigned lane = lane_id(), me = lane & (W - 1u);
  return read_lane(active_mask(), v, delta < W - me ? lane + delta : lane);
}
template <int W, class T> ALLOY_FUNC T shuffle_xor(const T& v, unsigned m) {
  return read_lane(active_mask(), v, lane_id() ^ (m & (W - 1u)));
}
template <int W, class T> ALLOY_FUNC T rotate_down(const T& v, unsigned delta) {
  const unsigned n = segment_lanes_present(W), lane = lane_id(), base = lane & ~(W - 1u);
  return read_lane(active_mask(), v, base + (lane - base + delta % n) % n);
}
template <int W, class T> ALLOY_FUNC T rotate_up(const T& v, unsigned delta) {
  const unsigned n = segment_lanes_present(W), lane = lane_id(), base = lane & ~(W - 1u);
  return read_lane(active_mask(), v, base + (lane - base + n - delta % n) % n);
}
// Within groups of `modulo` lanes: `data` from `delta` lanes away inside my
// group, else `filling` from the lane where the shift wraps around.
template <class T>
ALLOY_FUNC T fill_from(unsigned mask, const T& data, const T& filling, bool from_data, unsigned src, unsigned base, unsigned w) {
  const bool active = src - base < w && ((mask >> src) & 1u) != 0u;  // in my segment and active
  const int from = int(active ? src : lane_id());
  T d = shfl(mask, data, from);
  T f = shfl(mask, filling, from);
  return from_data || !active ? d : f;
}
template <int W, class T> ALLOY_FUNC T fill_up(const T& data, const T& filling, unsigned delta, unsigned modulo) {
  const unsigned lane = lane_id(), base = lane & ~(W - 1u), j = (lane - base) % modulo;
  const bool from_data = j >= delta;
  const unsigned src = from_data ? lane - delta : lane + modulo - delta;
  return fill_from(active_mask(), data, filling, from_data, src, base, W);
}
template <int W, class T> ALLOY_FUNC T fill_down(const T& data, const T& filling, unsigned delta, unsigned modulo) {
  const unsigned lane = lane_id(), base = lane & ~(W - 1u), j = (lane - base) % modulo;
  const bool from_data = j + delta < modulo;
  const unsigned src = from_data ? lane + delta : lane + delta - modulo;
  return fill_from(active_mask(), data, filling, from_data, src, base, W);
}

// Whether I am the first (lowest) active lane of my segment.
template <int W> ALLOY_FUNC bool is_first() {
  return int(lane_id()) == __ffs(active_mask() & segment_bits<W>(lane_id())) - 1;
}
// My quad's 4 bits of a warp-wide lane mask.
ALLOY_FUNC unsigned quad_bits(unsigned warp_bits) { return (warp_bits >> (lane_id() & ~3u)) & 0xfu; }

}  // namespace simd_detail
}  // namespace cuda
}  // namespace alloy_msl

namespace metal {

// A ballot: bit i for lane i. Metal's simd_vote / quad_vote. all() tests every
// bit of the SIMD group (quad): absent and inactive lanes' bits are 0, so it is
// false in a partial last SIMD group (MSL 6.9.2), as on the CPU (metal_cpu.h).
struct simd_vote {
  typedef uint64_t vote_t;
  vote_t v;
  ALLOY_FUNC constexpr explicit simd_vote(vote_t bits = 0) : v(bits) {}
  ALLOY_FUNC constexpr explicit operator vote_t() const { return v; }
  ALLOY_FUNC constexpr bool all() const { return v == vote_t(0xffffffffu); }
  ALLOY_FUNC constexpr bool any() const { return v != 0; }
};
struct quad_vote {
  typedef uint8_t vote_t;
  vote_t v;
  ALLOY_FUNC constexpr explicit quad_vote(vote_t bits = 0) : v(bits) {}
  ALLOY_FUNC constexpr explicit operator vote_t() const { return v; }
  ALLOY_FUNC constexpr bool all() const { return v == vote_t(0xfu); }
  ALLOY_FUNC constexpr bool any() const { return v != 0; }
};

#define ALLOY_SIMD_PREFIX(prefix, W)                                                                  \
  template <class T> ALLOY_FUNC T prefix##_shuffle(T data, uint lane) {                             \
    return ::alloy_msl::cuda::simd_detail::shuffle<W>(data, lane);                                   \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T prefix##_broadcast(T data, uint lane) { return prefix##_shuffle(data, lane); } \
  template <class T> ALLOY_FUNC T prefix##_broadcast_first(T data) {                                \
    return ::alloy_msl::cuda::simd_detail::broadcast_first<W>(data);                                 \
  }                                                                                                  \
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
  ALLOY_FUNC bool prefix##_is_first() { return ::alloy_msl::cuda::simd_detail::is_first<W>(); }     \
  ALLOY_FUNC bool prefix##_is_helper_thread() { return false; }

ALLOY_SIMD_PREFIX(simd, 32)
ALLOY_SIMD_PREFIX(quad, 4)
#undef ALLOY_SIMD_PREFIX

// Reductions with a single-instruction path for 32-bit integers over a
// SIMD group (redux.sync takes any member mask: no uniform test needed).
// `I` is the integer type redux works in: signed-ness matters for min/max
// only.
#define ALLOY_SIMD_REDUCE(name, Op, redux, I)                                                      \
  template <class T> ALLOY_FUNC T simd_##name(T data) {                                             \
    if constexpr (::alloy_msl::cuda::simd_detail::is_int32<T>) {                                    \
      return T(redux(::alloy_msl::cuda::simd_detail::active_mask(), static_cast<I>(data)));         \
    } else {                                                                                         \
      return ::alloy_msl::cuda::simd_detail::reduce<32>(data, ::alloy_msl::cuda::simd_detail::Op{}); \
    }                                                                                                \
  }                                                                                                  \
  template <class T> ALLOY_FUNC T quad_##name(T data) {                                             \
    return ::alloy_msl::cuda::simd_detail::reduce<4>(data, ::alloy_msl::cuda::simd_detail::Op{});   \
  }
#define ALLOY_SIMD_SIGNED_AS(T) conditional_t<is_signed_v<T>, int, unsigned>
ALLOY_SIMD_REDUCE(sum, Add, __reduce_add_sync, ALLOY_SIMD_SIGNED_AS(T))
ALLOY_SIMD_REDUCE(min, Min, __reduce_min_sync, ALLOY_SIMD_SIGNED_AS(T))
ALLOY_SIMD_REDUCE(max, Max, __reduce_max_sync, ALLOY_SIMD_SIGNED_AS(T))
ALLOY_SIMD_REDUCE(and, And, __reduce_and_sync, unsigned)
ALLOY_SIMD_REDUCE(or, Or, __reduce_or_sync, unsigned)
ALLOY_SIMD_REDUCE(xor, Xor, __reduce_xor_sync, unsigned)
#undef ALLOY_SIMD_SIGNED_AS
#undef ALLOY_SIMD_REDUCE

// ---- votes, over the active lanes (bits of inactive lanes are 0)
ALLOY_FUNC simd_vote simd_ballot(bool expr) {
  return simd_vote(__ballot_sync(::alloy_msl::cuda::simd_detail::active_mask(), expr));
}
ALLOY_FUNC simd_vote simd_active_threads_mask() { return simd_vote(::alloy_msl::cuda::simd_detail::active_mask()); }
ALLOY_FUNC bool simd_all(bool expr) { return __all_sync(::alloy_msl::cuda::simd_detail::active_mask(), expr); }
ALLOY_FUNC bool simd_any(bool expr) { return __any_sync(::alloy_msl::cuda::simd_detail::active_mask(), expr); }

ALLOY_FUNC quad_vote quad_ballot(bool expr) {
  unsigned bits = __ballot_sync(::alloy_msl::cuda::simd_detail::active_mask(), expr);
  return quad_vote(uint8_t(::alloy_msl::cuda::simd_detail::quad_bits(bits)));
}
ALLOY_FUNC quad_vote quad_active_threads_mask() {
  return quad_vote(uint8_t(::alloy_msl::cuda::simd_detail::quad_bits(::alloy_msl::cuda::simd_detail::active_mask())));
}
// One mask for both the ballot and the comparison.
ALLOY_FUNC bool quad_all(bool expr) {
  const unsigned mask = ::alloy_msl::cuda::simd_detail::active_mask();
  const unsigned bits = __ballot_sync(mask, expr);
  return ::alloy_msl::cuda::simd_detail::quad_bits(bits) == ::alloy_msl::cuda::simd_detail::quad_bits(mask);
}
ALLOY_FUNC bool quad_any(bool expr) { return quad_ballot(expr).v != 0; }

}  // namespace metal

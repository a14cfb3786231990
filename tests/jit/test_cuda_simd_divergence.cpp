// The CUDA runtime's SIMD-group and quad-group functions (cuda_simd.h), run
// on the host: the header is compiled by the host compiler against a model
// of the warp intrinsics, each lane a std::thread, so their logic is checked
// without a GPU, for any set of active lanes.
//
// The model follows the CUDA programming guide and PTX ISA: a *_sync
// intrinsic waits until every lane of its mask makes the same call (a mask
// naming a lane that does not make it is a failure here: a hang or undefined
// behaviour on the GPU); __shfl_* compute the source lane with the `width`
// segment rules of shfl.sync (idx: modulo width; up/down: own value past the
// segment edge; xor: own value past the segment's end); reading a lane
// outside the mask gives a junk value. __activemask() is the set of lanes the
// test runs, all converged (what the compiler gives after an if/else; the
// hardware itself may split a warp further, which this cannot model).
//
// Each case compares every active lane's result with Metal's rule computed
// on the host (the same rules as metal_cpu.h and tests/python/
// test_simd_divergence.py): reductions and scans over the active lanes, a
// shuffle from an inactive or absent lane gives the caller's own value.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

// ---- the model of CUDA's device environment that cuda_sync.h / cuda_simd.h use
// (defined after the standard headers, which spell attributes __noinline__)
#define ALLOY_FUNC inline
#define ALLOY_MSL_USE_LANE_STATE 1  // as the translator defines it for SIMD-group functions
#define __shared__
#define __device__
#define __noinline__ __attribute__((noinline))

namespace metal {
using std::conditional_t;
using std::is_integral_v;
using std::is_signed_v;
typedef unsigned int uint;
template <class T> inline T min(T a, T b) { return b < a ? b : a; }
template <class T> inline T max(T a, T b) { return a < b ? b : a; }
// metal_base.h's memory scopes, which cuda_sync.h's atomic_thread_fence takes
enum class thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };
using thread_scope::thread_scope_device;
}  // namespace metal

namespace warp_model {

constexpr uint32_t kJunk = 0xBAADF00Du;  // what a read from a lane outside the mask returns

struct Warp {
  unsigned active = 0;  // __activemask() of every lane that runs
  std::mutex m;
  std::condition_variable cv;
  std::array<std::vector<uint32_t>, 32> posted;  // each lane's value, per collective call
  std::array<std::vector<uint32_t>, 32> masks;   // and the mask it passed
  bool broken = false;
  std::string failure;

  void fail(const std::string& what) {  // with `m` held
    if (!broken) failure = what;
    broken = true;
    cv.notify_all();
  }
};

thread_local Warp* t_warp = nullptr;
thread_local unsigned t_lane = 0;

std::string hex(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

// Posts `v` for this lane's next collective call over `mask`, waits for every
// lane of `mask` to post for the same call, and returns their values (junk
// for lanes outside the mask).
std::array<uint32_t, 32> collective(unsigned mask, uint32_t v, const char* what) {
  Warp& w = *t_warp;
  std::unique_lock<std::mutex> lk(w.m);
  std::array<uint32_t, 32> vals;
  vals.fill(kJunk);
  if (!((mask >> t_lane) & 1u)) w.fail(std::string(what) + ": lane " + std::to_string(t_lane) + " not in its mask " + hex(mask));
  if (mask & ~w.active) {
    w.fail(std::string(what) + ": mask " + hex(mask) + " names lanes that do not make the call (active " + hex(w.active) +
           "): a hang on the GPU");
  }
  if (w.broken) return vals;
  const size_t k = w.posted[t_lane].size();
  w.posted[t_lane].push_back(v);
  w.masks[t_lane].push_back(mask);
  w.cv.notify_all();
  auto all_posted = [&] {
    if (w.broken) return true;
    for (unsigned l = 0; l < 32; ++l)
      if (((mask >> l) & 1u) && w.posted[l].size() <= k) return false;
    return true;
  };
  if (!w.cv.wait_for(lk, std::chrono::seconds(5), all_posted)) w.fail(std::string(what) + ": deadlock");
  if (w.broken) return vals;
  for (unsigned l = 0; l < 32; ++l) {
    if (!((mask >> l) & 1u)) continue;
    if (w.masks[l][k] != mask) w.fail(std::string(what) + ": lanes pass different masks " + hex(mask) + ", " + hex(w.masks[l][k]));
    vals[l] = w.posted[l][k];
  }
  return vals;
}

template <class V> uint32_t bits(V v) {
  static_assert(sizeof(V) == 4, "32-bit intrinsics only");
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
template <class V> V from_bits(uint32_t b) {
  V v;
  std::memcpy(&v, &b, 4);
  return v;
}
uint32_t lane_value(const std::array<uint32_t, 32>& vals, unsigned mask, unsigned src) {
  return ((mask >> src) & 1u) ? vals[src] : kJunk;
}

}  // namespace warp_model

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
thread_local Dim3 threadIdx;

inline unsigned __activemask() { return warp_model::t_warp->active; }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(unsigned(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { warp_model::collective(mask, 0u, "__syncwarp"); }
// Shared-memory atomics on the SIMD group's record (cuda_sync.h's converged marks).
inline unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
inline unsigned atomicAnd(unsigned* p, unsigned v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
inline void __syncthreads() {}
inline void __threadfence_block() {}
inline void __threadfence() {}

template <class V> V __shfl_sync(unsigned mask, V v, int src, int width = 32) {
  auto vals = warp_model::collective(mask, warp_model::bits(v), "__shfl_sync");
  const unsigned lane = warp_model::t_lane, w = unsigned(width);
  return warp_model::from_bits<V>(warp_model::lane_value(vals, mask, (lane & ~(w - 1u)) | (unsigned(src) & (w - 1u))));
}
template <class V> V __shfl_up_sync(unsigned mask, V v, unsigned delta, int width = 32) {
  auto vals = warp_model::collective(mask, warp_model::bits(v), "__shfl_up_sync");
  const unsigned lane = warp_model::t_lane, w = unsigned(width);
  const unsigned src = (lane & (w - 1u)) >= delta ? lane - delta : lane;
  return warp_model::from_bits<V>(warp_model::lane_value(vals, mask, src));
}
template <class V> V __shfl_down_sync(unsigned mask, V v, unsigned delta, int width = 32) {
  auto vals = warp_model::collective(mask, warp_model::bits(v), "__shfl_down_sync");
  const unsigned lane = warp_model::t_lane, w = unsigned(width);
  const unsigned src = (lane & (w - 1u)) + delta < w ? lane + delta : lane;
  return warp_model::from_bits<V>(warp_model::lane_value(vals, mask, src));
}
template <class V> V __shfl_xor_sync(unsigned mask, V v, int lane_mask, int width = 32) {
  auto vals = warp_model::collective(mask, warp_model::bits(v), "__shfl_xor_sync");
  const unsigned lane = warp_model::t_lane, w = unsigned(width);
  const unsigned j = (lane ^ unsigned(lane_mask)) & 31u, last = (lane & ~(w - 1u)) + w - 1u;
  return warp_model::from_bits<V>(warp_model::lane_value(vals, mask, j <= last ? j : lane));
}
inline unsigned __ballot_sync(unsigned mask, int pred) {
  auto vals = warp_model::collective(mask, pred != 0, "__ballot_sync");
  unsigned r = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (((mask >> l) & 1u) && vals[l]) r |= 1u << l;
  return r;
}
inline int __all_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) == mask; }
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }

// redux.sync: one value over the lanes of the mask.
template <class V, class Op> V redux_model(unsigned mask, V v, Op op, const char* what) {
  auto vals = warp_model::collective(mask, warp_model::bits(v), what);
  bool first = true;
  V r{};
  for (unsigned l = 0; l < 32; ++l) {
    if (!((mask >> l) & 1u)) continue;
    V x = warp_model::from_bits<V>(vals[l]);
    r = first ? x : op(r, x);
    first = false;
  }
  return r;
}
#define ALLOY_MODEL_REDUX(name, expr)                                                                            \
  inline int name(unsigned mask, int v) {                                                                        \
    return redux_model(mask, v, [](int a, int b) { return expr; }, #name);                                      \
  }                                                                                                              \
  inline unsigned name(unsigned mask, unsigned v) {                                                              \
    return redux_model(mask, v, [](unsigned a, unsigned b) { return expr; }, #name);                            \
  }
ALLOY_MODEL_REDUX(__reduce_add_sync, int(unsigned(a) + unsigned(b)))
ALLOY_MODEL_REDUX(__reduce_min_sync, b < a ? b : a)
ALLOY_MODEL_REDUX(__reduce_max_sync, a < b ? b : a)
#undef ALLOY_MODEL_REDUX
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) {
  return redux_model(mask, v, [](unsigned a, unsigned b) { return a & b; }, "__reduce_and_sync");
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) {
  return redux_model(mask, v, [](unsigned a, unsigned b) { return a | b; }, "__reduce_or_sync");
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) {
  return redux_model(mask, v, [](unsigned a, unsigned b) { return a ^ b; }, "__reduce_xor_sync");
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunknown-pragmas"  // #pragma unroll is for NVRTC
#include "msl/runtime/cuda_sync.h"
#include "msl/runtime/cuda_simd.h"
#pragma GCC diagnostic pop

#include "../common/test_seed.h"

namespace {

constexpr unsigned kWarpBase = 64;  // the warp under test is the third of its threadgroup

// One warp's inputs: lanes [0, present) exist, `active` of them make the calls.
template <class T> struct Inputs {
  unsigned present = 32, active = 0;
  std::array<T, 32> x{}, p{}, f{};
  std::array<unsigned, 32> s{};
  std::array<bool, 32> b{};
};

// Metal's rules on the host, for lane `l` of the warp.
template <class T> struct Metal {
  const Inputs<T>& in;
  bool is_active(unsigned l) const { return l < 32 && ((in.active >> l) & 1u); }
  unsigned base(unsigned l, unsigned w) const { return l & ~(w - 1u); }
  unsigned count(unsigned l, unsigned w) const { return std::min(w, in.present - base(l, w)); }
  std::vector<unsigned> act(unsigned l, unsigned w) const {  // active lanes of l's segment
    std::vector<unsigned> r;
    for (unsigned a = base(l, w); a < base(l, w) + count(l, w); ++a)
      if (is_active(a)) r.push_back(a);
    return r;
  }
  template <class F> long double fold(unsigned l, unsigned w, const std::array<T, 32>& v, F op, bool upto,
                                      bool inclusive, long double identity) const {
    long double r = identity;
    for (unsigned a : act(l, w))
      if (!upto || a < l || (inclusive && a == l)) r = op(r, (long double)v[a]);
    return r;
  }
  long double read(unsigned l, unsigned src) const { return (long double)(is_active(src) ? in.x[src] : in.x[l]); }
  long double fill(unsigned l, unsigned w, unsigned d, unsigned mod, bool up) const {
    const unsigned me = l - base(l, w), j = me % mod;
    if (up ? j >= d : j + d < mod) return read(l, up ? l - d : l + d);
    const unsigned src = up ? l + mod - d : l + d - mod;
    return (long double)(src - base(l, w) < w && is_active(src) ? in.f[src] : in.x[l]);
  }
  long double ballot(unsigned l, unsigned w, bool all) const {
    const unsigned shift = w == 32 ? 0u : base(l, w);
    unsigned long long r = 0;
    for (unsigned a : act(l, w))
      if (all || in.b[a]) r |= 1ull << (a - shift);
    return (long double)r;
  }
};

template <class T> struct Case {
  std::string name;
  std::function<long double(const Inputs<T>&, unsigned)> device;  // runs on a lane of the modelled warp
  std::function<long double(const Metal<T>&, unsigned)> metal;    // Metal's result for that lane
};

template <class T> std::vector<Case<T>> cases() {
  using In = const Inputs<T>&;
  using M = const Metal<T>&;
  auto add = [](long double a, long double b) { return a + b; };
  auto mul = [](long double a, long double b) { return a * b; };
  auto mn = [](long double a, long double b) { return b < a ? b : a; };
  auto mx = [](long double a, long double b) { return a < b ? b : a; };
  const long double inf = 1e30L;
  std::vector<Case<T>> c;
#define CASE(name, device_expr, metal_expr) \
  c.push_back({name, []([[maybe_unused]] In in, [[maybe_unused]] unsigned l) { return (long double)(device_expr); }, \
               [=](M m, [[maybe_unused]] unsigned l) { return (long double)(metal_expr); }})
  CASE("simd_sum", metal::simd_sum(in.x[l]), m.fold(l, 32, m.in.x, add, false, false, 0));
  CASE("simd_product", metal::simd_product(in.p[l]), m.fold(l, 32, m.in.p, mul, false, false, 1));
  CASE("simd_min", metal::simd_min(in.x[l]), m.fold(l, 32, m.in.x, mn, false, false, inf));
  CASE("simd_max", metal::simd_max(in.x[l]), m.fold(l, 32, m.in.x, mx, false, false, -inf));
  CASE("simd_prefix_inclusive_sum", metal::simd_prefix_inclusive_sum(in.x[l]), m.fold(l, 32, m.in.x, add, true, true, 0));
  CASE("simd_prefix_exclusive_sum", metal::simd_prefix_exclusive_sum(in.x[l]), m.fold(l, 32, m.in.x, add, true, false, 0));
  CASE("simd_prefix_inclusive_product", metal::simd_prefix_inclusive_product(in.p[l]), m.fold(l, 32, m.in.p, mul, true, true, 1));
  CASE("simd_prefix_exclusive_product", metal::simd_prefix_exclusive_product(in.p[l]), m.fold(l, 32, m.in.p, mul, true, false, 1));
  CASE("quad_sum", metal::quad_sum(in.x[l]), m.fold(l, 4, m.in.x, add, false, false, 0));
  CASE("quad_product", metal::quad_product(in.p[l]), m.fold(l, 4, m.in.p, mul, false, false, 1));
  CASE("quad_min", metal::quad_min(in.x[l]), m.fold(l, 4, m.in.x, mn, false, false, inf));
  CASE("quad_max", metal::quad_max(in.x[l]), m.fold(l, 4, m.in.x, mx, false, false, -inf));
  CASE("quad_prefix_inclusive_sum", metal::quad_prefix_inclusive_sum(in.x[l]), m.fold(l, 4, m.in.x, add, true, true, 0));
  CASE("quad_prefix_exclusive_sum", metal::quad_prefix_exclusive_sum(in.x[l]), m.fold(l, 4, m.in.x, add, true, false, 0));
  CASE("quad_prefix_exclusive_product", metal::quad_prefix_exclusive_product(in.p[l]), m.fold(l, 4, m.in.p, mul, true, false, 1));

  CASE("simd_shuffle(x, s)", metal::simd_shuffle(in.x[l], in.s[l]), m.read(l, m.in.s[l] & 31u));
  CASE("simd_broadcast(x, 5)", metal::simd_broadcast(in.x[l], 5u), m.read(l, 5));
  CASE("simd_broadcast_first", metal::simd_broadcast_first(in.x[l]), m.in.x[m.act(l, 32)[0]]);
  CASE("simd_shuffle_up(x, 3)", metal::simd_shuffle_up(in.x[l], 3u), m.read(l, l >= 3 ? l - 3 : l));
  CASE("simd_shuffle_down(x, 3)", metal::simd_shuffle_down(in.x[l], 3u), m.read(l, l + 3 < 32 ? l + 3 : l));
  CASE("simd_shuffle_down(x, 31)", metal::simd_shuffle_down(in.x[l], 31u), m.read(l, l + 31 < 32 ? l + 31 : l));
  CASE("simd_shuffle_xor(x, 5)", metal::simd_shuffle_xor(in.x[l], 5u), m.read(l, l ^ 5u));
  CASE("simd_shuffle_xor(x, 17)", metal::simd_shuffle_xor(in.x[l], 17u), m.read(l, l ^ 17u));
  CASE("simd_shuffle_rotate_up(x, 7)", metal::simd_shuffle_rotate_up(in.x[l], 7u),
       m.read(l, (l + m.count(l, 32) - 7 % m.count(l, 32)) % m.count(l, 32)));
  CASE("simd_shuffle_rotate_down(x, 37)", metal::simd_shuffle_rotate_down(in.x[l], 37u),
       m.read(l, (l + 37 % m.count(l, 32)) % m.count(l, 32)));
  CASE("simd_shuffle_and_fill_up(x, f, 3)", metal::simd_shuffle_and_fill_up(in.x[l], in.f[l], 3u), m.fill(l, 32, 3, 32, true));
  CASE("simd_shuffle_and_fill_down(x, f, 3)", metal::simd_shuffle_and_fill_down(in.x[l], in.f[l], 3u), m.fill(l, 32, 3, 32, false));
  CASE("simd_shuffle_and_fill_up(x, f, 2, 8)", metal::simd_shuffle_and_fill_up(in.x[l], in.f[l], 2u, 8u), m.fill(l, 32, 2, 8, true));
  CASE("simd_shuffle_and_fill_down(x, f, 2, 8)", metal::simd_shuffle_and_fill_down(in.x[l], in.f[l], 2u, 8u), m.fill(l, 32, 2, 8, false));
  CASE("quad_shuffle(x, s)", metal::quad_shuffle(in.x[l], in.s[l]), m.read(l, m.base(l, 4) + (m.in.s[l] & 3u)));
  CASE("quad_broadcast(x, 2)", metal::quad_broadcast(in.x[l], 2u), m.read(l, m.base(l, 4) + 2));
  CASE("quad_broadcast_first", metal::quad_broadcast_first(in.x[l]), m.in.x[m.act(l, 4)[0]]);
  CASE("quad_shuffle_up(x, 1)", metal::quad_shuffle_up(in.x[l], 1u), m.read(l, l % 4 >= 1 ? l - 1 : l));
  CASE("quad_shuffle_down(x, 2)", metal::quad_shuffle_down(in.x[l], 2u), m.read(l, l % 4 + 2 < 4 ? l + 2 : l));
  CASE("quad_shuffle_xor(x, 3)", metal::quad_shuffle_xor(in.x[l], 3u), m.read(l, l ^ 3u));
  CASE("quad_shuffle_rotate_up(x, 1)", metal::quad_shuffle_rotate_up(in.x[l], 1u),
       m.read(l, m.base(l, 4) + (l % 4 + m.count(l, 4) - 1 % m.count(l, 4)) % m.count(l, 4)));
  CASE("quad_shuffle_rotate_down(x, 3)", metal::quad_shuffle_rotate_down(in.x[l], 3u),
       m.read(l, m.base(l, 4) + (l % 4 + 3 % m.count(l, 4)) % m.count(l, 4)));
  CASE("quad_shuffle_and_fill_up(x, f, 1)", metal::quad_shuffle_and_fill_up(in.x[l], in.f[l], 1u), m.fill(l, 4, 1, 4, true));
  CASE("quad_shuffle_and_fill_down(x, f, 1)", metal::quad_shuffle_and_fill_down(in.x[l], in.f[l], 1u), m.fill(l, 4, 1, 4, false));

  CASE("simd_ballot", (uint64_t)metal::simd_ballot(in.b[l]), m.ballot(l, 32, false));
  CASE("simd_active_threads_mask", (uint64_t)metal::simd_active_threads_mask(), m.ballot(l, 32, true));
  CASE("simd_all", metal::simd_all(in.b[l]), m.ballot(l, 32, false) == m.ballot(l, 32, true));
  CASE("simd_any", metal::simd_any(in.b[l]), m.ballot(l, 32, false) != 0);
  CASE("simd_is_first", metal::simd_is_first(), m.act(l, 32)[0] == l);
  CASE("simd_ballot(b).all()", metal::simd_ballot(in.b[l]).all(), m.ballot(l, 32, false) == 0xffffffffull);  // every lane of 32
  CASE("quad_ballot", (uint8_t)metal::quad_ballot(in.b[l]), m.ballot(l, 4, false));
  CASE("quad_active_threads_mask", (uint8_t)metal::quad_active_threads_mask(), m.ballot(l, 4, true));
  CASE("quad_all", metal::quad_all(in.b[l]), m.ballot(l, 4, false) == m.ballot(l, 4, true));
  CASE("quad_any", metal::quad_any(in.b[l]), m.ballot(l, 4, false) != 0);
  CASE("quad_is_first", metal::quad_is_first(), m.act(l, 4)[0] == l);
  if constexpr (std::is_integral_v<T>) {
    auto band = [](long double a, long double b) { return (long double)((int64_t)a & (int64_t)b); };
    auto bor = [](long double a, long double b) { return (long double)((int64_t)a | (int64_t)b); };
    auto bxor = [](long double a, long double b) { return (long double)((int64_t)a ^ (int64_t)b); };
    CASE("simd_and", metal::simd_and(in.x[l]), m.fold(l, 32, m.in.x, band, false, false, -1));
    CASE("simd_or", metal::simd_or(in.x[l]), m.fold(l, 32, m.in.x, bor, false, false, 0));
    CASE("simd_xor", metal::simd_xor(in.x[l]), m.fold(l, 32, m.in.x, bxor, false, false, 0));
    CASE("quad_and", metal::quad_and(in.x[l]), m.fold(l, 4, m.in.x, band, false, false, -1));
    CASE("quad_xor", metal::quad_xor(in.x[l]), m.fold(l, 4, m.in.x, bxor, false, false, 0));
  }
#undef CASE
  return c;
}

constexpr int kBroken = 1000;  // a warp whose calls hang or disagree: no point running more

// Runs every case on the active lanes of one modelled warp (a thread each)
// and compares with Metal's rule; returns the number of mismatches.
template <class T> int run_warp(const Inputs<T>& in, const std::vector<Case<T>>& cs, const std::string& where) {
  warp_model::Warp warp;
  warp.active = in.active;
  // What thread_ids() records for the warp under test: its lanes present, and
  // the threadgroup's thread count.
  alloy_msl::cuda::simd_group_state[kWarpBase >> 5] = alloy_msl::cuda::SimdGroupState{
      in.present >= 32u ? 0xffffffffu : ((1u << in.present) - 1u), kWarpBase + in.present, 0u};
  std::array<std::vector<long double>, 32> got;
  std::vector<std::thread> lanes;
  for (unsigned l = 0; l < 32; ++l) {
    if (!((in.active >> l) & 1u)) continue;
    lanes.emplace_back([&, l] {
      warp_model::t_warp = &warp;
      warp_model::t_lane = l;
      threadIdx.x = kWarpBase + l;
      for (const auto& c : cs) got[l].push_back(c.device(in, l));
    });
  }
  for (auto& t : lanes) t.join();
  if (warp.broken) {
    ADD_FAILURE() << where << ": " << warp.failure;
    return kBroken;
  }
  Metal<T> m{in};
  int bad = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if (!((in.active >> l) & 1u)) continue;
    for (size_t k = 0; k < cs.size(); ++k) {
      const long double want = cs[k].metal(m, l);
      if (got[l][k] != want && bad++ < 10) {
        ADD_FAILURE() << where << ", lane " << l << ": " << cs[k].name << " = " << (double)got[l][k] << ", Metal: "
                      << (double)want;
      }
    }
  }
  return bad;
}

// Sets of active lanes for a warp of `present` lanes: all of them (the
// uniform path), and subsets (the general path).
std::vector<unsigned> active_sets(unsigned present, std::mt19937& rng) {
  const unsigned all = present == 32 ? ~0u : (1u << present) - 1u;
  std::vector<unsigned> sets = {all, all & ~1u, all & ~(1u << (present - 1)), all & 0x1fffu, all & 0xaaaaaaaau,
                                all & 0x55555555u, all & 0x11111111u, all & 0x0f0f0f0fu, all & 0x80000001u};
  std::uniform_int_distribution<unsigned> lane(0, present - 1);
  sets.push_back(1u << lane(rng));
  for (int i = 0; i < 4; ++i) sets.push_back(all & unsigned(rng()));
  for (int i = 0; i < 2; ++i) sets.push_back(all & unsigned(rng()) & unsigned(rng()) & unsigned(rng()));
  std::vector<unsigned> out;
  for (unsigned s : sets)
    if (s != 0) out.push_back(s);
  return out;
}

using alloy_test::test_seed;

template <class T> void check_type(const char* type_name, T lo, T hi) {
  std::mt19937 rng(test_seed());
  const auto cs = cases<T>();
  std::uniform_int_distribution<int64_t> val{int64_t(lo), int64_t(hi)};
  std::uniform_int_distribution<unsigned> src(0, 63);
  int bad = 0;
  for (unsigned present : {32u, 31u, 14u, 12u, 3u, 1u}) {
    for (unsigned active : active_sets(present, rng)) {
      Inputs<T> in;
      in.present = present;
      in.active = active;
      for (unsigned l = 0; l < 32; ++l) {
        in.x[l] = T(val(rng));  // integer values: sums are exact in any order
        in.f[l] = T(val(rng));
        in.p[l] = T(l % 3 == 0 ? 2 : (std::is_signed_v<T> && (rng() & 1u)) ? -1 : 1);  // exact products, at most 2^11
        in.s[l] = src(rng);
        in.b[l] = (rng() % 4u) != 0u;
      }
      char where[96];
      std::snprintf(where, sizeof where, "%s, %u lanes present, active 0x%08x", type_name, present, active);
      bad += run_warp(in, cs, where);
      if (bad > 20) return;
    }
  }
}

}  // namespace

TEST(CudaSimdModel, FloatOverAnyActiveSet) { check_type<float>("float", -8.0f, 8.0f); }
TEST(CudaSimdModel, IntOverAnyActiveSet) { check_type<int>("int", -1000, 1000); }
TEST(CudaSimdModel, LongTravelsAsTwoWords) { check_type<int64_t>("long", -(int64_t(1) << 40), int64_t(1) << 40); }
TEST(CudaSimdModel, UnsignedOverAnyActiveSet) { check_type<unsigned>("uint", 0u, 1u << 26); }  // sums stay exact

// The model itself: a mask naming a lane that does not make the call is
// reported (on the GPU such a call hangs or is undefined).
TEST(CudaSimdModel, ModelCatchesAMaskNamingAbsentLanes) {
  warp_model::Warp warp;
  warp.active = 0x3u;
  std::vector<std::thread> lanes;
  for (unsigned l = 0; l < 2; ++l) {
    lanes.emplace_back([&, l] {
      warp_model::t_warp = &warp;
      warp_model::t_lane = l;
      __shfl_sync(0xffffffffu, 1u, 0);
    });
  }
  for (auto& t : lanes) t.join();
  EXPECT_TRUE(warp.broken);
  EXPECT_NE(warp.failure.find("names lanes that do not make the call"), std::string::npos) << warp.failure;
}

// The MSL runtime for the CPU target (g++/clang, C++20): everything the
// translator leaves in place, plus alloy_msl::cpu::run, which executes a
// kernel's threads with Metal's dispatchThreads semantics. Threadgroups that
// need no synchronisation run as plain loops; the others run their threads as
// fibers provided by liballoy (Launch::fibers), so barriers and SIMD-group
// functions behave as on a GPU.
#pragma once

#include "metal_features.h"

#include "cpu_launch.h"
#include "metal_math.h"
#include "metal_vector_cast.h"
#if ALLOY_MSL_USE_MATH_EXTRA
#include "metal_math_extra.h"
#endif
#if ALLOY_MSL_USE_MATRICES
#include "metal_matrix.h"
#endif
#include "metal_thread_ids.h"
#if ALLOY_MSL_CPU_COROUTINES
// The translator made each synchronising call of the kernel a `co_await`:
// threads are coroutines (run_coroutines below) instead of fibers.
#include <coroutine>
#include <new>  // the awaiters' results, made in place
#endif
#if (ALLOY_MSL_CPU_COROUTINES && ALLOY_MSL_USE_MATRIX) || \
    ((ALLOY_MSL_CPU_COROUTINES || ALLOY_MSL_CPU_REGIONS) && ALLOY_MSL_USE_TENSOR)
#error "simdgroup matrices (but as regions) and tensor ops synchronise inside the runtime: such kernels run as fibers"
#endif

// Threadgroup memory: one instance per OS thread, shared by the fibers of the
// threadgroup that thread is running (an OS thread runs one group at a time).
// Split into regions, the kernel runs once per group: its own locals are the
// group's (msl/cpu_regions.h admits them at the body's own scope only).
#if ALLOY_MSL_CPU_REGIONS
#define ALLOY_THREADGROUP
#else
#define ALLOY_THREADGROUP static thread_local
#endif
#define ALLOY_PROGRAM_CONSTANT static constexpr
#define METAL_FUNC inline __attribute__((always_inline))
// `#pragma clang loop unroll(...)` in Metal source (msl/rewrite.cpp): left
// to the host compiler's own judgement, as before it was translated.
#define ALLOY_LOOP_UNROLL
#define ALLOY_LOOP_UNROLL_BY(n)
#if ALLOY_MSL_CPU_COROUTINES || ALLOY_MSL_CPU_REGIONS
#define ALLOY_KERNEL_FN inline  // a coroutine is resumed, not inlined; regions run once per group
#else
#define ALLOY_KERNEL_FN inline __attribute__((always_inline))
#endif

namespace alloy_msl {
// The loop poll of the CUDA target (cuda_cancel.h). A CPU launch is stopped
// by interrupting its threads inside the kernel (jit/cpu_interrupt.h), so
// its loops need none.
constexpr bool keep_going() { return true; }
// Lanes that took different paths meet again before a SIMD-group call at
// the kernel's own scope (CUDA target: cuda_sync.h); fibers need nothing.
constexpr void simd_reconverge() {}
constexpr void simd_reconverge_only() {}
constexpr void simd_converged_end() {}
}  // namespace alloy_msl
#define ALLOY_EXPORT __attribute__((visibility("default")))

// The caller's position, as a defaulted last parameter of every synchronising
// function (g++ has no __builtin_COLUMN: sites there are file and line).
#if defined(__has_builtin)
#if __has_builtin(__builtin_COLUMN)
#define ALLOY_BUILTIN_COLUMN() __builtin_COLUMN()
#endif
#endif
#ifndef ALLOY_BUILTIN_COLUMN
#define ALLOY_BUILTIN_COLUMN() 0u
#endif
#define ALLOY_SYNC_SITE \
  ::alloy_msl::cpu::SyncSite site = {__builtin_FILE(), __builtin_LINE(), ALLOY_BUILTIN_COLUMN(), nullptr}

namespace alloy_msl::cpu::detail {
// liballoy's fiber services; set by run<true> before any fiber starts (the same
// table for every launch, so concurrent stores write the same value).
inline const FiberApi* g_fiber_api = nullptr;
ALLOY_FUNC const FiberApi* fiber_api() { return __atomic_load_n(&g_fiber_api, __ATOMIC_RELAXED); }
// Other fibers ran while this one waited: values in memory may have changed.
ALLOY_FUNC void memory_clobber() { __asm__ __volatile__("" ::: "memory"); }

template <class T> struct exchanged {
  SimdView v;
  ALLOY_FUNC T at(unsigned lane) const {
    T r;
    __builtin_memcpy(&r, v.slots + lane * v.slot_stride, sizeof(T));
    return r;
  }
  ALLOY_FUNC bool has(unsigned lane) const { return lane < 32 && ((v.mask >> lane) & 1u); }
  // A result every lane of segment `seg` shares (a reduction): computed by
  // the first of them to ask, read by the others, so a SIMD group costs one
  // pass over its lanes, not one per lane.
  template <class R, class F> ALLOY_FUNC R shared(unsigned seg, F compute) const {
    static_assert(sizeof(R) <= kSimdSlotBytes, "a shared SIMD-group result fits a slot");
    unsigned char* slot = v.results + seg * kSimdSlotBytes;
    if (!((*v.results_ready >> seg) & 1u)) {
      R r = compute();
      __builtin_memcpy(slot, &r, sizeof(R));
      *v.results_ready |= 1u << seg;
    }
    R r;
    __builtin_memcpy(&r, slot, sizeof(R));
    return r;
  }
  // Per-lane results computed at once for a segment's lanes (a scan):
  // compute(store) calls store(lane, value) for each of them.
  template <class R, class F> ALLOY_FUNC R per_lane(unsigned seg, F compute) const {
    static_assert(sizeof(R) <= kSimdSlotBytes, "a SIMD-group result fits a slot");
    if (!((*v.results_ready >> seg) & 1u)) {
      compute([&](unsigned lane, const R& r) { __builtin_memcpy(v.results + lane * kSimdSlotBytes, &r, sizeof(R)); });
      *v.results_ready |= 1u << seg;
    }
    R r;
    __builtin_memcpy(&r, v.results + v.lane * kSimdSlotBytes, sizeof(R));
    return r;
  }
};
template <class T> ALLOY_FUNC exchanged<T> exchange(const T& x, SyncSite site, const char* what) {
  static_assert(sizeof(T) <= kSimdSlotBytes, "SIMD-group functions take scalars and vectors up to 32 bytes");
  site.what = what;
  exchanged<T> e;
  fiber_api()->simd_exchange(site, &x, sizeof(T), &e.v);
  memory_clobber();
  return e;
}

// A SIMD-group function: deposit `x`, then `then(exchanged)` computes the
// caller's result from every lane's deposit. A fiber waits inside the call;
// a coroutine thread gets an awaiter, which the translator `co_await`s.
#if ALLOY_MSL_CPU_COROUTINES
template <class T, class F> struct exchange_awaiter {
  typedef decltype((*static_cast<F*>(nullptr))(*static_cast<const exchanged<T>*>(nullptr))) result_type;
  T value;
  SyncSite site;
  F then;
  void* group = nullptr;  // the scheduler's, from the thread's promise
  static constexpr bool has_result = !metal::is_same_v<result_type, void>;  // (simdgroup_barrier has none)
  typedef metal::conditional_t<has_result, result_type, char> stored_type;
  // Taken by settle() as the thread resumes (FiberApi::arrive_simd says why).
  alignas(stored_type) unsigned char result[sizeof(stored_type)];
  static void settle(void* self) {
    exchange_awaiter& a = *static_cast<exchange_awaiter*>(self);
    exchanged<T> e;
    fiber_api()->simd_result(a.group, &e.v);
    if constexpr (has_result) new (a.result) stored_type(a.then(e));
    else a.then(e);
  }
  bool await_ready() const noexcept { return false; }
  template <class P> void await_suspend(std::coroutine_handle<P> h) noexcept {
    group = h.promise().group;
    fiber_api()->arrive_simd(group, site, &value, sizeof(T), &settle, this);
  }
  ALLOY_FUNC result_type await_resume() {
    if constexpr (has_result) return *reinterpret_cast<stored_type*>(result);
  }
};
template <class T, class F> ALLOY_FUNC exchange_awaiter<T, F> exchange_then(const T& x, SyncSite site, const char* what, F then) {
  static_assert(sizeof(T) <= kSimdSlotBytes, "SIMD-group functions take scalars and vectors up to 32 bytes");
  site.what = what;
  return {x, site, then};
}
struct barrier_awaiter {
  SyncSite site;
  bool await_ready() const noexcept { return false; }
  template <class P> void await_suspend(std::coroutine_handle<P> h) noexcept {
    fiber_api()->arrive_barrier(h.promise().group, site);
  }
  void await_resume() const noexcept {}
};
#elif ALLOY_MSL_CPU_REGIONS
// Regions (msl/cpu_regions.h): the translation deposits every lane's value
// in one loop over the group's threads and computes each lane's result in
// the next; a call is the pending pair of value and computation.
template <class T, class F> struct exchange_pending {
  T value;
  F then;
};
template <class T, class F> ALLOY_FUNC exchange_pending<T, F> exchange_then(const T& x, SyncSite, const char*, F then) {
  static_assert(sizeof(T) <= kSimdSlotBytes, "SIMD-group functions take scalars and vectors up to 32 bytes");
  return {x, then};
}
#else
template <class T, class F> ALLOY_FUNC auto exchange_then(const T& x, SyncSite site, const char* what, F then) {
  return then(exchange(x, site, what));
}
#endif
}  // namespace alloy_msl::cpu::detail

namespace metal {

// ---- barriers
enum mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
ALLOY_FUNC constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }

#if ALLOY_MSL_CPU_COROUTINES
ALLOY_FUNC alloy_msl::cpu::detail::barrier_awaiter threadgroup_barrier(mem_flags = mem_none, ALLOY_SYNC_SITE) {
  site.what = "threadgroup_barrier";
  return {site};
}
#else
ALLOY_FUNC void threadgroup_barrier(mem_flags = mem_none, ALLOY_SYNC_SITE) {
  site.what = "threadgroup_barrier";
  alloy_msl::cpu::detail::fiber_api()->barrier(site);
  alloy_msl::cpu::detail::memory_clobber();
}
#endif
ALLOY_FUNC auto simdgroup_barrier(mem_flags = mem_none, ALLOY_SYNC_SITE) {
  return alloy_msl::cpu::detail::exchange_then(0, site, "simdgroup_barrier", [](const auto&) {});
}

#if ALLOY_MSL_USE_SIMD
}  // namespace metal
#if ALLOY_MSL_CPU_REGIONS
namespace alloy_msl::cpu {
ALLOY_FUNC unsigned region_lane();  // the thread region_for runs (metal_cpu_regions.h)
}
#endif
namespace metal::detail {
// The calling thread's lane: the running fiber's, or split into regions
// the thread the region's loop is at.
#if ALLOY_MSL_CPU_REGIONS
ALLOY_FUNC unsigned current_lane() { return alloy_msl::cpu::region_lane(); }
#else
ALLOY_FUNC unsigned current_lane() { return alloy_msl::cpu::detail::fiber_api()->lane(); }
#endif
}  // namespace metal::detail

// Apple's compiler builtin for the lane, which MLX's NAX headers call directly
// (`__metal_get_thread_index_in_simdgroup(ushort())`); a kernel naming it runs
// with its threads' lanes known (msl::is_sync_name).
template <class T> ALLOY_FUNC T __metal_get_thread_index_in_simdgroup(T) {
  return T(metal::detail::current_lane());
}

namespace metal {
// ---- SIMD-group (32 lanes) and quad-group (4 lanes) functions, over the
// lanes taking part (a partial last group, lanes that returned early).
namespace detail {
using alloy_msl::cpu::detail::exchanged;
// The lanes of the caller's segment: the whole SIMD group (W = 32) or its quad (W = 4).
template <unsigned W> struct segment {
  unsigned base, mask, width;
  template <class T> ALLOY_FUNC segment(const exchanged<T>& e) {
    base = W == 32 ? 0u : (e.v.lane & ~(W - 1));
    // (W & 31: no shift by 32 in the branch not taken, which clang warns of.)
    unsigned seg_bits = W == 32 ? 0xffffffffu : (((1u << (W & 31u)) - 1u) << base);
    mask = e.v.mask & seg_bits;
    unsigned end = base + W < e.v.width ? base + W : e.v.width;
    width = end > base ? end - base : 0;
  }
  ALLOY_FUNC bool has(unsigned lane) const { return lane < 32 && ((mask >> lane) & 1u); }
};
using alloy_msl::cpu::detail::exchange_then;
// A reduction over a segment whose SIMD group has every lane that exists
// taking part, in the CUDA target's order (cuda_simd.h, reduce): a full
// group of 32 folds its upper half onto its lower one, halving (the
// butterfly every lane computes alike), a shorter group folds lane l + o
// onto lane l where l + o exists. Both devices then round the same way,
// and the folds are independent, so this is a tree, not a chain of W adds.
template <unsigned W, class T, class Op>
ALLOY_FUNC T seg_tree_reduce(const exchanged<T>& e, const segment<W>& s, Op op) {
  T a[W];
  const unsigned present = e.v.width - s.base < W ? e.v.width - s.base : W;
  for (unsigned l = 0; l < present; ++l) a[l] = e.at(s.base + l);
  if (e.v.width == 32) {
    for (unsigned o = W / 2; o > 0; o >>= 1)
      for (unsigned l = 0; l < o; ++l) a[l] = op(a[l], a[l + o]);
  } else {
    for (unsigned o = W / 2; o > 0; o >>= 1)
      for (unsigned l = 0; l < o; ++l)
        if (l + o < present) a[l] = op(a[l], a[l + o]);
  }
  return a[0];
}
// Segment s's reduction, every lane of it alike (the first lane taking
// part starts the chain where lanes are missing).
template <unsigned W, class T, class Op>
ALLOY_FUNC T seg_reduce_lanes(const exchanged<T>& e, const segment<W>& s, Op op) {
  const unsigned every = e.v.width >= 32 ? ~0u : (1u << e.v.width) - 1u;
  if (e.v.mask == every) return seg_tree_reduce<W>(e, s, op);
  T r{};
  bool first = true;
  for (unsigned l = s.base; l < s.base + W; ++l) {
    if (!s.has(l)) continue;
    r = first ? e.at(l) : op(r, e.at(l));
    first = false;
  }
  return r;
}
#if ALLOY_MSL_CPU_REGIONS
// A reduction between regions: every lane of a segment gets the same
// value, so the loop that reads the results computes the group's segments
// once and each thread reads its own (region_result in metal_cpu_regions.h).
template <unsigned W, class T, class Op> struct reduction_pending {
  T value;
  Op op;
};
template <unsigned W, class T, class Op>
ALLOY_FUNC reduction_pending<W, T, Op> seg_reduce(const T& x, alloy_msl::cpu::SyncSite, const char*, Op op) {
  static_assert(sizeof(T) <= alloy_msl::cpu::kSimdSlotBytes, "SIMD-group functions take scalars and vectors up to 32 bytes");
  return {x, op};
}
#else
template <unsigned W, class T, class Op>
ALLOY_FUNC auto seg_reduce(const T& x, alloy_msl::cpu::SyncSite site, const char* what, Op op) {
  return exchange_then(x, site, what, [op](const exchanged<T>& e) {
    segment<W> s(e);
    return e.template shared<T>(s.base / W, [&] { return seg_reduce_lanes<W>(e, s, op); });
  });
}
#endif
template <unsigned W, bool Inclusive, class T, class Op>
ALLOY_FUNC auto seg_scan(const T& x, T identity, alloy_msl::cpu::SyncSite site, const char* what, Op op) {
  return exchange_then(x, site, what, [identity, op](const exchanged<T>& e) {
    segment<W> s(e);
    // One pass gives every lane of the segment its prefix, in lane order.
    return e.template per_lane<T>(s.base / W, [&](auto store) {
      T r = identity;
      for (unsigned l = s.base; l < s.base + W && l < 32; ++l) {
        if (!Inclusive && s.has(l)) store(l, r);
        if (s.has(l)) r = op(r, e.at(l));
        if (Inclusive && s.has(l)) store(l, r);
      }
    });
  });
}
// Value of lane `src` (relative to the segment base); the caller's own value
// where that lane does not take part.
template <unsigned W, class T>
ALLOY_FUNC T seg_read(const exchanged<T>& e, const segment<W>& s, unsigned src_abs, const T& own) {
  return s.has(src_abs) ? e.at(src_abs) : own;
}
struct op_add { template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return a + b; } };
struct op_mul { template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return a * b; } };
struct op_min { template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return metal::min(a, b); } };
struct op_max { template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return metal::max(a, b); } };
struct op_and { template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return a & b; } };
struct op_or { template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return a | b; } };
struct op_xor { template <class T> ALLOY_FUNC T operator()(const T& a, const T& b) const { return a ^ b; } };

template <unsigned W, class T> ALLOY_FUNC auto shuffle(const T& x, unsigned src_in_seg, alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(x, site, what, [x, src_in_seg](const exchanged<T>& e) {
    segment<W> s(e);
    return seg_read(e, s, s.base + (src_in_seg & (W - 1)), x);
  });
}
template <unsigned W, class T> ALLOY_FUNC auto shuffle_up(const T& x, unsigned delta, alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(x, site, what, [x, delta](const exchanged<T>& e) {
    segment<W> s(e);
    unsigned me = e.v.lane - s.base;
    return me < delta ? x : seg_read(e, s, e.v.lane - delta, x);  // no wrap: the first lanes keep their value
  });
}
template <unsigned W, class T> ALLOY_FUNC auto shuffle_down(const T& x, unsigned delta, alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(x, site, what, [x, delta](const exchanged<T>& e) {
    segment<W> s(e);
    unsigned me = e.v.lane - s.base;
    return me + delta >= W ? x : seg_read(e, s, e.v.lane + delta, x);  // no wrap: the last lanes keep their value
  });
}
template <unsigned W, class T> ALLOY_FUNC auto shuffle_xor(const T& x, unsigned m, alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(x, site, what, [x, m](const exchanged<T>& e) {
    segment<W> s(e);
    return seg_read(e, s, s.base + ((e.v.lane - s.base) ^ (m & (W - 1))), x);
  });
}
// Rotations wrap around the lanes that exist in the segment.
template <unsigned W, class T>
ALLOY_FUNC auto shuffle_rotate(const T& x, unsigned delta, bool down, alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(x, site, what, [x, delta, down](const exchanged<T>& e) {
    segment<W> s(e);
    if (s.width == 0) return x;
    unsigned me = e.v.lane - s.base, d = delta % s.width;
    unsigned src = down ? (me + d) % s.width : (me + s.width - d) % s.width;
    return seg_read(e, s, s.base + src, x);
  });
}
// Shifts within segments of `modulo` lanes (W by default), taking lanes
// shifted in from the neighbouring segment's `fill` values.
template <class T> struct fill_pair { T d, f; };
template <unsigned W, class T>
ALLOY_FUNC auto shuffle_fill(const T& x, const T& fill, unsigned delta, unsigned modulo, bool down,
                             alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(fill_pair<T>{x, fill}, site, what, [x, delta, modulo, down](const exchanged<fill_pair<T>>& e) {
    segment<W> s(e);
    const unsigned me = e.v.lane - s.base, j = me % modulo;
    if (!down) {
      if (j >= delta) return s.has(e.v.lane - delta) ? e.at(e.v.lane - delta).d : x;
      unsigned src = e.v.lane + modulo - delta;
      return s.has(src) ? e.at(src).f : x;
    }
    if (j + delta < modulo) return s.has(e.v.lane + delta) ? e.at(e.v.lane + delta).d : x;
    unsigned src = e.v.lane + delta - modulo;
    return s.has(src) ? e.at(src).f : x;
  });
}
// `Vote(bits)`: simd_vote or quad_vote.
template <unsigned W, class Vote> ALLOY_FUNC auto ballot(bool b, alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(b, site, what, [](const exchanged<bool>& e) {
    segment<W> s(e);
    unsigned long long r = 0;
    for (unsigned l = s.base; l < s.base + W; ++l)
      if (s.has(l) && e.at(l)) r |= 1ull << (W == 32 ? l : l - s.base);
    return Vote(typename Vote::vote_t(r));
  });
}
template <unsigned W, class Vote> ALLOY_FUNC auto active_mask(alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(true, site, what, [](const exchanged<bool>& e) {
    segment<W> s(e);
    return Vote(typename Vote::vote_t(W == 32 ? s.mask : (s.mask >> s.base)));
  });
}
template <unsigned W> ALLOY_FUNC auto is_first(alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(true, site, what, [](const exchanged<bool>& e) {
    segment<W> s(e);
    return s.mask != 0 && unsigned(__builtin_ctz(s.mask)) == e.v.lane;
  });
}
template <unsigned W, class T> ALLOY_FUNC auto broadcast_first(const T& x, alloy_msl::cpu::SyncSite site, const char* what) {
  return exchange_then(x, site, what, [x](const exchanged<T>& e) {
    segment<W> s(e);
    return s.mask ? e.at(unsigned(__builtin_ctz(s.mask))) : x;
  });
}
}  // namespace detail

// simd_vote: the result of a ballot (bit i = lane i).
struct simd_vote {
  typedef ulong vote_t;
  vote_t v;
  ALLOY_FUNC constexpr explicit simd_vote(vote_t x = 0) : v(x) {}
  ALLOY_FUNC constexpr explicit operator vote_t() const { return v; }
  ALLOY_FUNC constexpr bool all() const { return v == 0xffffffffull; }
  ALLOY_FUNC constexpr bool any() const { return v != 0; }
};
struct quad_vote {
  typedef unsigned vote_t;
  vote_t v;
  ALLOY_FUNC constexpr explicit quad_vote(vote_t x = 0) : v(x) {}
  ALLOY_FUNC constexpr explicit operator vote_t() const { return v; }
  ALLOY_FUNC constexpr bool all() const { return v == 0xfu; }
  ALLOY_FUNC constexpr bool any() const { return v != 0; }
};

#define ALLOY_SEG_FUNCS(prefix, W)                                                                          \
  template <class T> ALLOY_FUNC auto prefix##_sum(T x, ALLOY_SYNC_SITE) {                                      \
    return detail::seg_reduce<W>(x, site, #prefix "_sum", detail::op_add());                               \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_product(T x, ALLOY_SYNC_SITE) {                                  \
    return detail::seg_reduce<W>(x, site, #prefix "_product", detail::op_mul());                           \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_min(T x, ALLOY_SYNC_SITE) {                                      \
    return detail::seg_reduce<W>(x, site, #prefix "_min", detail::op_min());                               \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_max(T x, ALLOY_SYNC_SITE) {                                      \
    return detail::seg_reduce<W>(x, site, #prefix "_max", detail::op_max());                               \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_and(T x, ALLOY_SYNC_SITE) {                                      \
    return detail::seg_reduce<W>(x, site, #prefix "_and", detail::op_and());                               \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_or(T x, ALLOY_SYNC_SITE) {                                       \
    return detail::seg_reduce<W>(x, site, #prefix "_or", detail::op_or());                                 \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_xor(T x, ALLOY_SYNC_SITE) {                                      \
    return detail::seg_reduce<W>(x, site, #prefix "_xor", detail::op_xor());                               \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_prefix_inclusive_sum(T x, ALLOY_SYNC_SITE) {                     \
    return detail::seg_scan<W, true>(x, T(0), site, #prefix "_prefix_inclusive_sum", detail::op_add());    \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_prefix_exclusive_sum(T x, ALLOY_SYNC_SITE) {                     \
    return detail::seg_scan<W, false>(x, T(0), site, #prefix "_prefix_exclusive_sum", detail::op_add());   \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_prefix_inclusive_product(T x, ALLOY_SYNC_SITE) {                 \
    return detail::seg_scan<W, true>(x, T(1), site, #prefix "_prefix_inclusive_product", detail::op_mul()); \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_prefix_exclusive_product(T x, ALLOY_SYNC_SITE) {                 \
    return detail::seg_scan<W, false>(x, T(1), site, #prefix "_prefix_exclusive_product", detail::op_mul());\
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle(T x, ushort lane, ALLOY_SYNC_SITE) {                     \
    return detail::shuffle<W>(x, lane, site, #prefix "_shuffle");                                          \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_broadcast(T x, ushort lane, ALLOY_SYNC_SITE) {                   \
    return detail::shuffle<W>(x, lane, site, #prefix "_broadcast");                                        \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle_up(T x, ushort delta, ALLOY_SYNC_SITE) {                 \
    return detail::shuffle_up<W>(x, delta, site, #prefix "_shuffle_up");                                   \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle_down(T x, ushort delta, ALLOY_SYNC_SITE) {               \
    return detail::shuffle_down<W>(x, delta, site, #prefix "_shuffle_down");                               \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle_xor(T x, ushort mask, ALLOY_SYNC_SITE) {                 \
    return detail::shuffle_xor<W>(x, mask, site, #prefix "_shuffle_xor");                                  \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle_rotate_up(T x, ushort delta, ALLOY_SYNC_SITE) {          \
    return detail::shuffle_rotate<W>(x, delta, false, site, #prefix "_shuffle_rotate_up");                 \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle_rotate_down(T x, ushort delta, ALLOY_SYNC_SITE) {        \
    return detail::shuffle_rotate<W>(x, delta, true, site, #prefix "_shuffle_rotate_down");                \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle_and_fill_up(T x, T fill, ushort delta, ALLOY_SYNC_SITE) { \
    return detail::shuffle_fill<W>(x, fill, delta, W, false, site, #prefix "_shuffle_and_fill_up");        \
  }                                                                                                         \
  template <class T>                                                                                        \
  ALLOY_FUNC auto prefix##_shuffle_and_fill_up(T x, T fill, ushort delta, ushort modulo, ALLOY_SYNC_SITE) {    \
    return detail::shuffle_fill<W>(x, fill, delta, modulo, false, site, #prefix "_shuffle_and_fill_up");   \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_shuffle_and_fill_down(T x, T fill, ushort delta, ALLOY_SYNC_SITE) { \
    return detail::shuffle_fill<W>(x, fill, delta, W, true, site, #prefix "_shuffle_and_fill_down");       \
  }                                                                                                         \
  template <class T>                                                                                        \
  ALLOY_FUNC auto prefix##_shuffle_and_fill_down(T x, T fill, ushort delta, ushort modulo, ALLOY_SYNC_SITE) {  \
    return detail::shuffle_fill<W>(x, fill, delta, modulo, true, site, #prefix "_shuffle_and_fill_down");  \
  }                                                                                                         \
  template <class T> ALLOY_FUNC auto prefix##_broadcast_first(T x, ALLOY_SYNC_SITE) {                          \
    return detail::broadcast_first<W>(x, site, #prefix "_broadcast_first");                                \
  }                                                                                                         \
  ALLOY_FUNC auto prefix##_is_first(ALLOY_SYNC_SITE) { return detail::is_first<W>(site, #prefix "_is_first"); } \
  ALLOY_FUNC auto prefix##_all(bool b, ALLOY_SYNC_SITE) {                                                   \
    return detail::seg_reduce<W>(b, site, #prefix "_all", detail::op_and());                               \
  }                                                                                                         \
  ALLOY_FUNC auto prefix##_any(bool b, ALLOY_SYNC_SITE) {                                                   \
    return detail::seg_reduce<W>(b, site, #prefix "_any", detail::op_or());                                \
  }

ALLOY_SEG_FUNCS(simd, 32)
ALLOY_SEG_FUNCS(quad, 4)
#undef ALLOY_SEG_FUNCS

ALLOY_FUNC auto simd_ballot(bool b, ALLOY_SYNC_SITE) { return detail::ballot<32, simd_vote>(b, site, "simd_ballot"); }
ALLOY_FUNC auto quad_ballot(bool b, ALLOY_SYNC_SITE) { return detail::ballot<4, quad_vote>(b, site, "quad_ballot"); }
ALLOY_FUNC auto simd_active_threads_mask(ALLOY_SYNC_SITE) {
  return detail::active_mask<32, simd_vote>(site, "simd_active_threads_mask");
}
ALLOY_FUNC auto quad_active_threads_mask(ALLOY_SYNC_SITE) {
  return detail::active_mask<4, quad_vote>(site, "quad_active_threads_mask");
}

#endif  // ALLOY_MSL_USE_SIMD

#if ALLOY_MSL_USE_ATOMICS
// ---- atomics: atomic<T> has T's size and layout, so a plain buffer cast to
// `atomic<T>*` works too. Integer add/sub/and/or/xor map to one instruction;
// float add/sub and min/max are compare-and-swap loops on the bits.
enum memory_order {
  memory_order_relaxed = __ATOMIC_RELAXED,
  memory_order_acquire = __ATOMIC_ACQUIRE,
  memory_order_release = __ATOMIC_RELEASE,
  memory_order_acq_rel = __ATOMIC_ACQ_REL,
  memory_order_seq_cst = __ATOMIC_SEQ_CST,
};
// Every fence here is one of the host's, which orders the group's threads
// (one OS thread) and other threadgroups alike, whatever the scope.
ALLOY_FUNC void atomic_thread_fence(mem_flags, memory_order order = memory_order_seq_cst,
                                    thread_scope = thread_scope_device) {
  if (order != memory_order_relaxed) __atomic_thread_fence(int(order));
}
template <class T> struct atomic {
  T v_;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;
typedef atomic<long> atomic_long;

namespace detail {
template <class T> struct identity { typedef T type; };
template <int Size> struct bits_type;
template <> struct bits_type<1> { typedef unsigned char __attribute__((may_alias)) type; };
template <> struct bits_type<2> { typedef unsigned short __attribute__((may_alias)) type; };
template <> struct bits_type<4> { typedef unsigned int __attribute__((may_alias)) type; };
template <> struct bits_type<8> { typedef unsigned long long __attribute__((may_alias)) type; };
template <class T> using bits_t = typename bits_type<sizeof(T)>::type;

template <class T, class Op> ALLOY_FUNC T atomic_rmw_cas(volatile atomic<T>* obj, Op op) {
  bits_t<T>* p = (bits_t<T>*)(&obj->v_);
  bits_t<T> old = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T o = __builtin_bit_cast(T, old);
    bits_t<T> desired = __builtin_bit_cast(bits_t<T>, T(op(o)));
    if (__atomic_compare_exchange_n(p, &old, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return o;
  }
}
}  // namespace detail

template <class T>
ALLOY_FUNC void atomic_store_explicit(volatile atomic<T>* obj, typename detail::identity<T>::type v, memory_order o = memory_order_relaxed) {
  __atomic_store((detail::bits_t<T>*)&obj->v_, (detail::bits_t<T>*)&v, int(o) == __ATOMIC_ACQUIRE ? __ATOMIC_RELAXED : int(o));
}
template <class T> ALLOY_FUNC T atomic_load_explicit(const volatile atomic<T>* obj, memory_order o = memory_order_relaxed) {
  detail::bits_t<T> b;
  __atomic_load((const detail::bits_t<T>*)&obj->v_, &b, int(o) == __ATOMIC_RELEASE ? __ATOMIC_RELAXED : int(o));
  return __builtin_bit_cast(T, b);
}
template <class T>
ALLOY_FUNC T atomic_exchange_explicit(volatile atomic<T>* obj, typename detail::identity<T>::type v, memory_order = memory_order_relaxed) {
  detail::bits_t<T> b = __atomic_exchange_n((detail::bits_t<T>*)&obj->v_, __builtin_bit_cast(detail::bits_t<T>, v), __ATOMIC_RELAXED);
  return __builtin_bit_cast(T, b);
}
// On failure the observed value is written back to *expected.
template <class T>
ALLOY_FUNC bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* obj, typename detail::identity<T>::type* expected,
                                                      typename detail::identity<T>::type desired,
                                                      memory_order = memory_order_relaxed, memory_order = memory_order_relaxed) {
  return __atomic_compare_exchange((detail::bits_t<T>*)&obj->v_, (detail::bits_t<T>*)expected, (detail::bits_t<T>*)&desired, true,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
template <class T>
ALLOY_FUNC bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* obj, typename detail::identity<T>::type* expected,
                                                        typename detail::identity<T>::type desired,
                                                        memory_order = memory_order_relaxed, memory_order = memory_order_relaxed) {
  return __atomic_compare_exchange((detail::bits_t<T>*)&obj->v_, (detail::bits_t<T>*)expected, (detail::bits_t<T>*)&desired, false,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
#define ALLOY_ATOMIC_RMW(name, builtin, expr)                                                              \
  template <class T>                                                                                       \
  ALLOY_FUNC T atomic_fetch_##name##_explicit(volatile atomic<T>* obj, typename detail::identity<T>::type v, \
                                              memory_order = memory_order_relaxed) {                       \
    if constexpr (is_integral_v<T> && !is_same_v<T, bool> && (builtin)) {                                  \
      return __atomic_fetch_##name((T*)&obj->v_, v, __ATOMIC_RELAXED);                                     \
    } else {                                                                                               \
      return detail::atomic_rmw_cas(obj, [&](const T& o) { return expr; });                               \
    }                                                                                                      \
  }
ALLOY_ATOMIC_RMW(add, true, o + v)
ALLOY_ATOMIC_RMW(sub, true, o - v)
ALLOY_ATOMIC_RMW(and, true, o & v)
ALLOY_ATOMIC_RMW(or, true, o | v)
ALLOY_ATOMIC_RMW(xor, true, o ^ v)
ALLOY_ATOMIC_RMW(min, false, v < o ? v : o)
ALLOY_ATOMIC_RMW(max, false, o < v ? v : o)
#undef ALLOY_ATOMIC_RMW
// Non-explicit forms (seq_cst in C++; relaxed is all Metal has).
template <class T> ALLOY_FUNC void atomic_store(volatile atomic<T>* obj, typename detail::identity<T>::type v) {
  atomic_store_explicit(obj, v);
}
template <class T> ALLOY_FUNC T atomic_load(const volatile atomic<T>* obj) { return atomic_load_explicit(obj); }
}  // namespace metal

namespace alloy_msl::cpu {
// An add to an atomic output the kernel only adds to (msl/private_adds.h):
// a plain add when the launch gave this worker a copy of the output of its
// own (Launch::plain_adds), the atomic one otherwise. Integers wrap, as the
// atomic add does.
// Launch::plain_adds as the kernel's `alloy_plain_adds` argument: a type, so
// that the glue makes the kernel once for each value and its loops over
// threads do not test it at every add (g++ does not take the test out).
template <bool Plain> struct PlainAdds {
  constexpr operator bool() const { return Plain; }
};
template <bool Sub, class T, class U>
ALLOY_FUNC T fetch_add_or_sub_private(bool plain, volatile metal::atomic<T>* obj, U v, metal::memory_order o) {
  if (!plain) return Sub ? metal::atomic_fetch_sub_explicit(obj, v, o) : metal::atomic_fetch_add_explicit(obj, v, o);
  T* p = (T*)&obj->v_;
  T old = *p;
  if constexpr (metal::is_integral_v<T>) Sub ? __builtin_sub_overflow(old, T(v), p) : __builtin_add_overflow(old, T(v), p);
  else *p = Sub ? T(old - T(v)) : T(old + T(v));
  return old;
}
template <class T, class U>
ALLOY_FUNC T fetch_add_private(bool plain, volatile metal::atomic<T>* obj, U v,
                               metal::memory_order o = metal::memory_order_relaxed) {
  return fetch_add_or_sub_private<false>(plain, obj, v, o);
}
template <class T, class U>
ALLOY_FUNC T fetch_sub_private(bool plain, volatile metal::atomic<T>* obj, U v,
                               metal::memory_order o = metal::memory_order_relaxed) {
  return fetch_add_or_sub_private<true>(plain, obj, v, o);
}
}  // namespace alloy_msl::cpu
namespace metal {

#endif  // ALLOY_MSL_USE_ATOMICS

#if ALLOY_MSL_USE_MATRIX
// ---- simdgroup_matrix<T, 8, 8>: each lane holds two elements, row fm and
// columns fn, fn+1 with qid = lane / 4, fm = (qid & 4) + (lane / 2) % 4,
// fn = (qid & 2) * 2 + (lane % 2) * 2 -- the layout MLX's GEMMs read through
// thread_elements(). multiply_accumulate exchanges the operands across the
// SIMD group and computes each lane's outputs in float, in k order.
namespace detail {
struct frag_coord {
  unsigned row, col;
};
ALLOY_FUNC frag_coord frag_of(unsigned lane) {
  unsigned qid = lane / 4;
  return {(qid & 4) + (lane / 2) % 4, (qid & 2) * 2 + (lane % 2) * 2};
}
}  // namespace detail

template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix: only 8x8 exists");
  vec<T, 2> e_;
  simdgroup_matrix() = default;
  // A diagonal matrix with `d` on the diagonal.
  ALLOY_FUNC explicit simdgroup_matrix(T d) {
    detail::frag_coord c = detail::frag_of(detail::current_lane());
    e_[0] = c.row == c.col ? d : T(0);
    e_[1] = c.row == c.col + 1 ? d : T(0);
  }
  ALLOY_FUNC vec<T, 2>& thread_elements() { return e_; }
  ALLOY_FUNC const vec<T, 2>& thread_elements() const { return e_; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int C, int R = C> ALLOY_FUNC simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, C, R> m;
  m.e_ = vec<T, 2>(v);
  return m;
}
// Element (row r, column c) of the matrix is src[(origin.y + r) * elements_per_row + origin.x + c],
// or with transpose src[(origin.y + c) * elements_per_row + origin.x + r].
template <class T, int C, int R, class U>
ALLOY_FUNC void simdgroup_load(simdgroup_matrix<T, C, R>& m, const U* src, ulong elements_per_row = C,
                               ulong2 origin = ulong2(0ul), bool transpose = false) {
  detail::frag_coord f = detail::frag_of(detail::current_lane());
  for (unsigned j = 0; j < 2; ++j) {
    ulong r = f.row, c = f.col + j;
    m.e_[j] = T(transpose ? src[(origin.y + c) * elements_per_row + origin.x + r]
                          : src[(origin.y + r) * elements_per_row + origin.x + c]);
  }
}
template <class T, int C, int R, class U>
ALLOY_FUNC void simdgroup_store(const simdgroup_matrix<T, C, R>& m, U* dst, ulong elements_per_row = C,
                                ulong2 origin = ulong2(0ul), bool transpose = false) {
  detail::frag_coord f = detail::frag_of(detail::current_lane());
  for (unsigned j = 0; j < 2; ++j) {
    ulong r = f.row, c = f.col + j;
    (transpose ? dst[(origin.y + c) * elements_per_row + origin.x + r]
               : dst[(origin.y + r) * elements_per_row + origin.x + c]) = U(m.e_[j]);
  }
}
// The operands may differ in type (half inputs into a float accumulator), as
// in Metal and MLX's steel GEMM.
// (A SIMD-group exchange: split into regions, a call is the pending pair
// of the lane's operands and the computation of its d, which the next
// region's loop runs for each lane.) The first lane to ask computes every
// lane's d from the deposits (its c among them), the others read theirs.
template <class T, class TA, class TB, class TC, int C, int R>
ALLOY_FUNC auto simdgroup_multiply_accumulate(simdgroup_matrix<T, C, R>& d, const simdgroup_matrix<TA, 8, R>& a,
                                              const simdgroup_matrix<TB, C, 8>& b, const simdgroup_matrix<TC, C, R>& c,
                                              ALLOY_SYNC_SITE) {
  struct operands {
    vec<TA, 2> a;
    vec<TB, 2> b;
    vec<TC, 2> c;
  };
  auto product = [&d](const auto& e) {
    d.e_ = e.template per_lane<vec<T, 2>>(0, [&](auto store) {
      float A[8][8] = {}, B[8][8] = {};
      for (unsigned l = 0; l < 32; ++l) {
        if (!e.has(l)) continue;  // a missing lane (undefined in Metal) contributes zeros
        operands o = e.at(l);
        detail::frag_coord f = detail::frag_of(l);
        A[f.row][f.col] = float(o.a[0]);
        A[f.row][f.col + 1] = float(o.a[1]);
        B[f.row][f.col] = float(o.b[0]);
        B[f.row][f.col + 1] = float(o.b[1]);
      }
      for (unsigned l = 0; l < 32; ++l) {
        if (!e.has(l)) continue;
        const operands o = e.at(l);
        detail::frag_coord f = detail::frag_of(l);
        vec<T, 2> out;
        for (unsigned j = 0; j < 2; ++j) {
          float acc = float(o.c[j]);
          for (unsigned k = 0; k < 8; ++k) acc += A[f.row][k] * B[k][f.col + j];
          out[j] = T(acc);
        }
        store(l, out);
      }
    });
  };
  return alloy_msl::cpu::detail::exchange_then(operands{a.e_, b.e_, c.e_}, site, "simdgroup_multiply_accumulate",
                                               product);
}
template <class T, class TA, class TB, int C, int R>
ALLOY_FUNC auto simdgroup_multiply(simdgroup_matrix<T, C, R>& d, const simdgroup_matrix<TA, 8, R>& a,
                                   const simdgroup_matrix<TB, C, 8>& b, ALLOY_SYNC_SITE) {
  return simdgroup_multiply_accumulate(d, a, b, make_filled_simdgroup_matrix<T, C, R>(T(0)), site);
}

#endif  // ALLOY_MSL_USE_MATRIX

}  // namespace metal

// ---- the executor
namespace alloy_msl::cpu {
namespace detail {
template <class F> struct group_call {
  F* fn;
  const GroupGeometry* geometry;
};
template <class F> void fiber_entry(void* arg, unsigned thread) {
  auto* call = static_cast<group_call<F>*>(arg);
  ThreadIds t;
  fill_thread_ids(t, *call->geometry, thread);
  (*call->fn)(static_cast<const ThreadIds&>(t));
}
ALLOY_FUNC void write_error(const Launch* L, const char* msg) {
  if (!L->error || L->error_size == 0) return;
  size_t i = 0;
  for (; msg[i] && i + 1 < L->error_size; ++i) L->error[i] = msg[i];
  L->error[i] = 0;
}
}  // namespace detail

// Runs threadgroups [L->tg_begin, L->tg_end) of the launch, calling
// thread_fn(const ThreadIds&) once per thread. uses_sync = false: each group is
// a plain loop (threads never wait for each other); true: each group's threads
// run as fibers. A failure is written to L->error and ends the run.
template <bool uses_sync, class F> void run(const Launch* L, F&& thread_fn) {
  if constexpr (uses_sync) {
    if (!L->fibers) {
      detail::write_error(L, "[alloy_msl::cpu::run] this kernel synchronises threads but the launch has no fiber services");
      return;
    }
    __atomic_store_n(&detail::g_fiber_api, L->fibers, __ATOMIC_RELAXED);
  }
  for (unsigned long long g = L->tg_begin; g < L->tg_end; ++g) {
    if (L->cancel && __atomic_load_n(L->cancel, __ATOMIC_RELAXED)) return;
    const GroupGeometry geo = group_geometry(L->grid, L->threadgroup, g);
    if constexpr (!uses_sync) {
      // Fields shared by the group are set once; the x loop runs over the grid
      // position itself, so an index derived from it is a plain induction
      // variable the compiler can vectorise over.
      ThreadIds t;
      fill_thread_ids(t, geo, metal::uint3(0u), 0u);
      const unsigned gx0 = geo.position.x * geo.threadgroup.x, gx1 = gx0 + geo.actual.x;
      for (unsigned z = 0; z < geo.actual.z; ++z)
        for (unsigned y = 0; y < geo.actual.y; ++y) {
          const unsigned row = (z * geo.actual.y + y) * geo.actual.x;
          const unsigned gy = geo.position.y * geo.threadgroup.y + y, gz = geo.position.z * geo.threadgroup.z + z;
          for (unsigned gx = gx0; gx < gx1; ++gx) {
            const unsigned linear = row + (gx - gx0);
            t.thread_position_in_grid = metal::uint3(gx, gy, gz);
            t.thread_position_in_threadgroup = metal::uint3(gx - gx0, y, z);
            t.thread_index_in_threadgroup = linear;
            t.thread_index_in_simdgroup = linear % kSimdWidth;
            t.simdgroup_index_in_threadgroup = linear / kSimdWidth;
            t.thread_index_in_quadgroup = linear % 4;
            t.quadgroup_index_in_threadgroup = linear / 4;
            thread_fn(static_cast<const ThreadIds&>(t));
          }
        }
    } else {
      using Fn = metal::remove_reference_t<F>;
      detail::group_call<Fn> call{&thread_fn, &geo};
      unsigned pos[3] = {geo.position.x, geo.position.y, geo.position.z};
      if (L->fibers->run_group(geo.count, pos, &detail::fiber_entry<Fn>, &call, L->error, L->error_size) != 0) return;
    }
  }
}

#if ALLOY_MSL_CPU_COROUTINES
// What a kernel translated for coroutine threads returns: its coroutine,
// suspended at its start. Frames come from the group's arena (released when
// the next group starts), so making 1024 threads costs no malloc.
struct thread_task {
  struct promise_type {
    thread_task get_return_object() noexcept {
      return {std::coroutine_handle<promise_type>::from_promise(*this).address()};
    }
    static thread_task get_return_object_on_allocation_failure() noexcept { return {nullptr}; }
    std::suspend_always initial_suspend() const noexcept { return {}; }
    std::suspend_always final_suspend() const noexcept { return {}; }
    void return_void() const noexcept {}
    void unhandled_exception() const noexcept { __builtin_trap(); }
    static void* operator new(size_t bytes) noexcept { return detail::fiber_api()->frame_alloc(bytes); }
    static void operator delete(void*) noexcept {}
    void* group = nullptr;  // the scheduler running this thread (set by coroutine_start)
  };
  void* handle;
};

namespace detail {
template <class F> void* coroutine_start(void* arg, void* group, unsigned thread) {
  auto* call = static_cast<group_call<F>*>(arg);
  ThreadIds t;
  fill_thread_ids(t, *call->geometry, thread);
  void* handle = (*call->fn)(static_cast<const ThreadIds&>(t)).handle;
  if (handle) std::coroutine_handle<thread_task::promise_type>::from_address(handle).promise().group = group;
  return handle;
}
inline int coroutine_resume(void* handle) {
  auto h = std::coroutine_handle<>::from_address(handle);
  h.resume();
  return h.done() ? 1 : 0;
}
inline void coroutine_destroy(void* handle) { std::coroutine_handle<>::from_address(handle).destroy(); }
}  // namespace detail

// run<true>'s contract, with thread_fn(const ThreadIds&) returning the
// thread's thread_task: each group's threads run as coroutines, scheduled by
// liballoy exactly as fibers would be.
template <class F> void run_coroutines(const Launch* L, F&& thread_fn) {
  if (!L->fibers || !L->fibers->run_group_coroutines) {
    detail::write_error(L, "[alloy_msl::cpu::run] this kernel synchronises threads but the launch has no coroutine services");
    return;
  }
  __atomic_store_n(&detail::g_fiber_api, L->fibers, __ATOMIC_RELAXED);
  using Fn = metal::remove_reference_t<F>;
  for (unsigned long long g = L->tg_begin; g < L->tg_end; ++g) {
    if (L->cancel && __atomic_load_n(L->cancel, __ATOMIC_RELAXED)) return;
    const GroupGeometry geo = group_geometry(L->grid, L->threadgroup, g);
    detail::group_call<Fn> call{&thread_fn, &geo};
    const CoroutineThreads threads{&detail::coroutine_start<Fn>, &detail::coroutine_resume, &detail::coroutine_destroy,
                                   &call};
    unsigned pos[3] = {geo.position.x, geo.position.y, geo.position.z};
    if (L->fibers->run_group_coroutines(geo.count, pos, &threads, L->error, L->error_size) != 0) return;
  }
}
#endif

#if ALLOY_MSL_CPU_REGIONS
#include "metal_cpu_regions.h"
#endif

}  // namespace alloy_msl::cpu

#if ALLOY_MSL_USE_TENSOR
namespace alloy_msl {
// The running fiber's place in its threadgroup (a tensor op at a SIMD-group
// scope: the translator runs such kernels as fibers).
ALLOY_FUNC void thread_in_threadgroup(unsigned& index, unsigned& count) {
  cpu::detail::fiber_api()->thread(&index, &count);
}
}  // namespace alloy_msl
#include "metal_tensor.h"
#endif

#if ALLOY_MSL_USE_MLX_UTILS
#include "mlx_utils.h"
#endif

using namespace metal;

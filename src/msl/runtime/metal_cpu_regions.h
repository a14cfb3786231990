// The CPU runtime of a kernel split into regions (msl/cpu_regions.h):
// included by metal_cpu.h inside namespace alloy_msl::cpu when the
// translation defines ALLOY_MSL_CPU_REGIONS.
#pragma once

// A kernel split into regions (msl/cpu_regions.h) runs once per threadgroup:
// each region is a loop over the group's threads, what lives across regions
// is in per-thread arrays, and the group's state is this.
inline constexpr unsigned kRegionMaxThreads = 1024;  // Metal's limit
// SIMD-group calls in one statement, twice: the loop that reads one
// statement's results deposits the next statement's values.
inline constexpr unsigned kRegionCallsPerStatement = 4;

// The C library's allocator under names of the runtime's own, bound to its
// symbols: GCC has __builtin_aligned_alloc, clang does not, and declaring
// aligned_alloc itself would clash with a <stdlib.h> a header brings in.
extern "C" void* alloy_region_aligned_alloc(unsigned long, unsigned long) __asm__("aligned_alloc");
extern "C" void alloy_region_free(void*) __asm__("free");
inline constexpr unsigned kRegionExchangeSlots = 2 * kRegionCallsPerStatement;
struct GroupThreads {
  unsigned count;
  unsigned extent[3];  // the group's threads along x, y, z (count = their product)
  ThreadIds base;      // the group's own ids (those of its thread 0)
  // Every thread running (no return, no wait): regions then loop over the
  // group's x, y and z (region_for), and `alive` is not kept.
  bool all_alive = true;
  // Once not all_alive: 1 running; 0 returned; 2 + d waiting after the loop
  // at depth d it has left while others run on (as a SIMT machine
  // reconverges there).
  unsigned char alive[kRegionMaxThreads];
  unsigned simd_mask[kRegionMaxThreads / kSimdWidth];  // living lanes at the current exchange
  unsigned results_ready[kRegionExchangeSlots][kRegionMaxThreads / kSimdWidth];
  // Whether a reduction's slot has every segment's result (region_result).
  bool reduced[kRegionExchangeSlots];
  alignas(64) unsigned char results[kRegionExchangeSlots][kRegionMaxThreads][kSimdSlotBytes];
#if ALLOY_MSL_CPU_RACE_CHECK
  // Regions run so far by this OS thread, over all its groups: two accesses
  // in one region, with no barrier between, may race (metal_race.h).
  unsigned long long region_serial = 0;
#endif
  // The kernel's per-thread arrays (values that live across regions).
  void* frame = nullptr;
  unsigned long frame_bytes = 0, frame_wanted = 0;
#if ALLOY_MSL_USE_MATRIX
  // The thread region_for runs: a simdgroup matrix's load, store and
  // diagonal need their lane (region_lane).
  unsigned long current = 0;
#endif
  ~GroupThreads() { alloy_region_free(frame); }
};
#if ALLOY_MSL_USE_MATRIX || ALLOY_MSL_CPU_RACE_CHECK
namespace detail {
// The group this OS thread runs (set once per launch by run_regions): a
// matrix operation reads its current thread from it, the race check its region.
inline thread_local GroupThreads* g_region_group = nullptr;
}  // namespace detail
#endif
#if ALLOY_MSL_USE_MATRIX
ALLOY_FUNC unsigned region_lane() { return unsigned(detail::g_region_group->current % kSimdWidth); }
#endif

// The type a per-thread array keeps for a value declared `auto` (its
// declared type without const or volatile: the frame assigns it), given the
// member of the type-deduction lambda's struct that names it (msl/cpu_regions_split.cpp).
template <class T> struct RegionValue { typedef T type; };
template <class T> struct RegionValue<const T> { typedef T type; };
template <class T> struct RegionValue<volatile T> { typedef T type; };
template <class T> struct RegionValue<const volatile T> { typedef T type; };
template <class T> using region_value_t = typename RegionValue<T>::type;
// The struct a pointer type points to (the type-deduction lambda returns one).
template <class P> struct RegionPointee;
template <class T> struct RegionPointee<T*> { typedef T type; };
template <class P> using region_pointee_t = typename RegionPointee<P>::type;

// Memory for the kernel's per-thread arrays, kept from group to group (null
// when it cannot be had: the kernel then stops with an error).
ALLOY_FUNC void* region_frame(GroupThreads& g, unsigned long bytes) {
  if (bytes > g.frame_bytes) {
    alloy_region_free(g.frame);
    g.frame = alloy_region_aligned_alloc(64, (bytes + 63) / 64 * 64);
    g.frame_bytes = g.frame ? bytes : 0;
    g.frame_wanted = g.frame ? 0 : bytes;
  }
  return g.frame;
}

// Thread `tid`'s position in its group (x fastest), where the loop over
// the threads does not have it at hand.
ALLOY_FUNC metal::uint3 region_local(const GroupThreads& g, unsigned long tid) {
  const unsigned t = unsigned(tid), nx = g.extent[0], ny = g.extent[1];
  return metal::uint3(t % nx, t / nx % ny, t / (nx * ny));
}
// Each per-thread attribute of thread `tid` at position `lid` in its group,
// computed on its own (a region reads a few); the group's own ones are read
// from g.base.
#define ALLOY_REGION_ATTRIBUTE(name, expr)                                                      \
  ALLOY_FUNC auto region_##name(const GroupThreads& g, unsigned long tid, metal::uint3 lid) { \
    (void)g, (void)tid, (void)lid;                                                              \
    return expr;                                                                                \
  }
ALLOY_REGION_ATTRIBUTE(thread_position_in_grid, g.base.thread_position_in_grid + lid)
ALLOY_REGION_ATTRIBUTE(thread_position_in_threadgroup, lid)
ALLOY_REGION_ATTRIBUTE(thread_index_in_threadgroup, metal::uint(tid))
ALLOY_REGION_ATTRIBUTE(thread_index_in_simdgroup, metal::uint(tid % kSimdWidth))
ALLOY_REGION_ATTRIBUTE(simdgroup_index_in_threadgroup, metal::uint(tid / kSimdWidth))
ALLOY_REGION_ATTRIBUTE(thread_index_in_quadgroup, metal::uint(tid % 4))
ALLOY_REGION_ATTRIBUTE(quadgroup_index_in_threadgroup, metal::uint(tid / 4))
#undef ALLOY_REGION_ATTRIBUTE

// A region's SIMD-group operands go to `deposits`, an array of the kernel's
// frame (RegionDeposits), each thread's value at its index: a typed store to
// the object every per-thread array lives in, which the compiler can tell
// apart from the others (a byte copy into the group's slots was a scatter
// that may alias them, and kept the region's loop scalar).
template <class P> ALLOY_FUNC void region_deposit(unsigned char* deposits, unsigned long tid, const P& pending) {
  using V = decltype(pending.value);
  static_assert(sizeof(V) <= kSimdSlotBytes, "SIMD-group functions take scalars and vectors up to 32 bytes");
  reinterpret_cast<V*>(deposits)[tid] = pending.value;
}
// The frame's deposit arrays, one per exchange slot.
struct RegionDeposits {
  alignas(64) unsigned char slot[kRegionExchangeSlots][kRegionMaxThreads * kSimdSlotBytes];
};
// Between the loop that deposits and the loop that reads: the lanes taking
// part are those still living.
ALLOY_FUNC void region_exchange(GroupThreads& g, unsigned first_slot, unsigned slots) {
  const unsigned groups = (g.count + kSimdWidth - 1) / kSimdWidth;
  for (unsigned s = 0; s < groups; ++s) {
    const unsigned lanes = g.count - s * kSimdWidth < kSimdWidth ? g.count - s * kSimdWidth : kSimdWidth;
    unsigned m = lanes == kSimdWidth ? ~0u : (1u << lanes) - 1u;  // every lane, while all run
    if (!g.all_alive) {
      m = 0;
      for (unsigned l = 0; l < lanes; ++l) m |= unsigned(g.alive[s * kSimdWidth + l] == 1) << l;
    }
    g.simd_mask[s] = m;
    for (unsigned k = first_slot; k < first_slot + slots; ++k) g.results_ready[k][s] = 0;
  }
  for (unsigned k = first_slot; k < first_slot + slots; ++k) g.reduced[k] = false;
}
// SIMD group s's deposits of V as an exchange sees them (its lanes, which
// took part, and their values); the caller sets the lane and the results.
template <class V> ALLOY_FUNC detail::exchanged<V> group_deposits(const GroupThreads& g, unsigned s,
                                                                  const unsigned char* deposits) {
  const unsigned first = s * kSimdWidth;
  detail::exchanged<V> e;
  e.v.slots = deposits + first * sizeof(V);
  e.v.slot_stride = sizeof(V);
  e.v.mask = g.simd_mask[s];
  e.v.width = g.count - first < kSimdWidth ? g.count - first : kSimdWidth;
  return e;
}
template <class P>
ALLOY_FUNC auto region_result(GroupThreads& g, unsigned slot, const unsigned char* deposits, unsigned tid,
                              const P& pending) {
  using V = decltype(pending.value);
  const unsigned s = tid / kSimdWidth;
  detail::exchanged<V> e = group_deposits<V>(g, s, deposits);
  e.v.lane = tid % kSimdWidth;
  e.v.results = g.results[slot][s * kSimdWidth];
  e.v.results_ready = &g.results_ready[slot][s];
  return pending.then(e);
}
#if ALLOY_MSL_USE_SIMD
// A reduction's result (metal::detail::reduction_pending): the first
// thread to ask computes every segment of the group, in segment order; each
// thread then reads its segment's value. A thread reads one flag and one
// value, where the general form above builds the SIMD group's view first.
template <unsigned W, class T, class Op>
ALLOY_FUNC void region_reduce_segments(GroupThreads& g, unsigned slot, const unsigned char* deposits, Op op) {
  T* out = reinterpret_cast<T*>(g.results[slot]);
  const unsigned groups = (g.count + kSimdWidth - 1) / kSimdWidth;
  for (unsigned s = 0; s < groups; ++s) {
    auto e = group_deposits<T>(g, s, deposits);
    const unsigned first = s * kSimdWidth;
    e.v.results = nullptr;  // (a reduction keeps none)
    e.v.results_ready = nullptr;
    for (unsigned base = 0; base < e.v.width; base += W) {
      e.v.lane = base;
      const ::metal::detail::segment<W> seg(e);
      if (seg.mask) out[(first + base) / W] = ::metal::detail::seg_reduce_lanes<W>(e, seg, op);
    }
  }
  g.reduced[slot] = true;
}
template <unsigned W, class T, class Op>
ALLOY_FUNC T region_result(GroupThreads& g, unsigned slot, const unsigned char* deposits, unsigned tid,
                           const ::metal::detail::reduction_pending<W, T, Op>& pending) {
  static_assert(kSimdSlotBytes % alignof(T) == 0 && 64 % alignof(T) == 0, "a result slot holds a T");
  if (__builtin_expect(!g.reduced[slot], 0)) region_reduce_segments<W, T>(g, slot, deposits, pending.op);
  return reinterpret_cast<const T*>(g.results[slot])[tid / W];
}
#endif
// One region: `body(tid, lid)` for each running thread of the group. While
// every thread runs, the threads are nested loops over z, y and x with a
// 64-bit index, the shape the compiler vectorises (x innermost, each
// per-thread array indexed by an induction variable that cannot wrap);
// otherwise a loop over the threads that skips those not running.
template <class F> ALLOY_FUNC void region_for(GroupThreads& g, F&& body) {
#if ALLOY_MSL_CPU_RACE_CHECK
  ++g.region_serial;
#endif
#if ALLOY_MSL_USE_MATRIX
#define ALLOY_REGION_CURRENT(tid) g.current = (tid)
#else
#define ALLOY_REGION_CURRENT(tid) (void)0
#endif
  if (g.all_alive) {
    const unsigned long nx = g.extent[0], ny = g.extent[1], nz = g.extent[2];
    for (unsigned long z = 0; z < nz; ++z)
      for (unsigned long y = 0; y < ny; ++y)
        for (unsigned long x = 0; x < nx; ++x) {
          ALLOY_REGION_CURRENT((z * ny + y) * nx + x);
          body((z * ny + y) * nx + x, metal::uint3(unsigned(x), unsigned(y), unsigned(z)));
        }
  } else {
    for (unsigned long tid = 0; tid < g.count; ++tid)
      if (g.alive[tid] == 1) {
        ALLOY_REGION_CURRENT(tid);
        body(tid, region_local(g, tid));
      }
  }
#undef ALLOY_REGION_CURRENT
}

// Rows of threads (msl/cpu_uniform_values.h, ThreadRows): the kernel names
// its thread `e = thread_position_in_grid.x` (of type E) and divides it by a
// value k the group shares; thread e is in row e / k, at column e % k.
template <class Q> struct RowColumn {
  Q row, col;
};
// (Computed before the kernel's own code runs, which may divide only after
// testing k: a zero k gives row and column 0 rather than a fault the
// kernel would never have made.)
template <class E, class K>
ALLOY_FUNC auto region_row_column(const GroupThreads& g, unsigned long tid, metal::uint3 lid, K k) {
  (void)tid;
  const E e = E(g.base.thread_position_in_grid.x + lid.x);
  typedef decltype(e / k) Q;
  if (k == K(0)) return RowColumn<Q>{Q(0), Q(0)};
  return RowColumn<Q>{Q(e / k), Q(e % k)};
}
// One region of such a kernel: `body(tid, lid, RowColumn)` for each running
// thread. In a one-dimensional group whose threads all run, with rows of at
// least 8, the threads go row by row, the row counted rather than divided
// for: the compiler then sees what depends on the row alone as an invariant
// of the loop over its columns and computes it once a row. Otherwise
// region_for, each thread's row and column divided for.
template <class E, class K, class F> ALLOY_FUNC void region_for_rows(GroupThreads& g, K k, F&& body) {
#if ALLOY_MSL_CPU_RACE_CHECK
  ++g.region_serial;
#endif
  if constexpr (metal::is_integral_v<E> && metal::is_integral_v<K>) {
    typedef decltype(E() / k) Q;
    const unsigned long n = g.extent[0], first = g.base.thread_position_in_grid.x, last = first + n - 1;
    // (Every thread's E value is its position: none wraps to a negative.)
    const bool fits = E(last) >= E(0) && (unsigned long)E(last) == last;
    if (g.all_alive && g.extent[1] == 1 && g.extent[2] == 1 && k >= K(8) && fits &&
        (unsigned long)k <= 0x7fffffffUL) {
      const unsigned long width = (unsigned long)k;
      Q row = Q(E(first) / k);
      unsigned long col = (unsigned long)(E(first) % k);
      for (unsigned long x = 0; x < n; col = 0, ++row) {
        const unsigned long len = n - x < width - col ? n - x : width - col;
        // The column as a signed counter that cannot wrap (it stays below
        // the width): the kernel's `int` index arithmetic on it is then
        // affine in the loop, and its accesses vectorise as contiguous ones
        // rather than gathers.
        const int c0 = int(col), c1 = int(col + len);
        for (int c = c0; c < c1; ++c) {
          const unsigned long t = x + (unsigned long)(c - c0);
#if ALLOY_MSL_USE_MATRIX
          g.current = t;
#endif
          body(t, metal::uint3(unsigned(t), 0u, 0u), RowColumn<Q>{row, Q(c)});
        }
        x += len;
      }
      return;
    }
  }
  region_for(g, [&](unsigned long tid, metal::uint3 lid) __attribute__((always_inline)) {
    body(tid, lid, region_row_column<E>(g, tid, lid, k));
  });
}

// From here on the group keeps which threads run (alive), every one running.
ALLOY_FUNC void region_split_group(GroupThreads& g) {
  if (!g.all_alive) return;
  for (unsigned long t = 0; t < g.count; ++t) g.alive[t] = 1;
  g.all_alive = false;
}
// Whether every thread runs again.
ALLOY_FUNC void region_settle(GroupThreads& g) {
  bool all = true;
  for (unsigned long tid = 0; tid < g.count; ++tid) all &= g.alive[tid] == 1;
  g.all_alive = all;
}

// A thread's `return` inside a region.
ALLOY_FUNC void region_return(GroupThreads& g, unsigned long tid) {
  region_split_group(g);
  g.alive[tid] = 0;
}

// Each running thread's `cond(tid, lid)` (1 or 0) in stays[], while every
// thread runs: in region_for's loops (32-bit words, which unlike the alive
// bytes alias nothing else, take 16 threads per 64-byte vector where bytes
// would take 64). Returns how many hold.
template <class F> ALLOY_FUNC unsigned long region_count_all(GroupThreads& g, F& cond, unsigned* stays) {
  unsigned long holding = 0;
  region_for(g, [&](unsigned long tid, metal::uint3 lid) __attribute__((always_inline)) {
    stays[tid] = cond(tid, lid);
    holding += stays[tid];
  });
  return holding;
}

// The group splits: a thread whose stays[] is 0 waits (alive = `waiting`).
ALLOY_FUNC void region_wait_unless(GroupThreads& g, const unsigned* stays, unsigned char waiting) {
  for (unsigned long tid = 0; tid < g.count; ++tid) g.alive[tid] = stays[tid] ? 1 : waiting;
  g.all_alive = false;
}

// An `if` whose condition differs between threads, with SIMD-group calls
// (no barriers) in its branches: the threads whose condition holds run the
// first branch's regions while the others wait (at nesting depth `depth`),
// then those others run the second branch's while the first wait, then all
// go on together. A SIMD-group call in a branch covers the lanes that took
// it, as Metal's active threads. The fibers' runtime resolves the same
// calls the same way, the earlier branch first, except in a loop whose
// trips differ between lanes (README: one case where the CPU's thread
// models differ). Returns whether any running thread takes the branch.
template <class F> ALLOY_FUNC bool region_branch(GroupThreads& g, F cond, unsigned depth) {
  const unsigned char waiting = static_cast<unsigned char>(2 + depth);
  if (g.all_alive) {
    unsigned stays[kRegionMaxThreads];
    const unsigned long holding = region_count_all(g, cond, stays);
    if (holding == g.count) return true;  // every thread takes it: the group stays whole
    region_wait_unless(g, stays, waiting);
    return holding != 0;
  }
  bool any = false;
  for (unsigned long tid = 0; tid < g.count; ++tid) {
    if (g.alive[tid] != 1) continue;
    if (cond(tid, region_local(g, tid))) any = true;
    else g.alive[tid] = waiting;
  }
  region_settle(g);
  return any;
}

// The second branch: the threads that ran the first wait, those that
// waited run. Returns whether any runs.
ALLOY_FUNC bool region_else(GroupThreads& g, unsigned depth) {
  const unsigned char waiting = static_cast<unsigned char>(2 + depth);
  region_split_group(g);
  bool any = false;
  for (unsigned long tid = 0; tid < g.count; ++tid) {
    if (g.alive[tid] == 1) {
      g.alive[tid] = waiting;
    } else if (g.alive[tid] == waiting) {
      g.alive[tid] = 1;
      any = true;
    }
  }
  region_settle(g);
  return any;
}
// After the `if`: every thread that waited at `depth` runs again.
ALLOY_FUNC void region_rejoin(GroupThreads& g, unsigned depth) {
  if (g.all_alive) return;
  const unsigned char waiting = static_cast<unsigned char>(2 + depth);
  for (unsigned long tid = 0; tid < g.count; ++tid)
    if (g.alive[tid] == waiting) g.alive[tid] = 1;
  region_settle(g);
}

// A loop whose body has barriers runs for the group as a whole, while any
// running thread's condition holds; a thread whose condition fails waits
// after the loop (at nesting depth `depth`) until the last one leaves. (In
// Metal every thread must reach a barrier; where some leave early, the
// others' barriers count the threads still in the loop, as fibers do.)
template <class F> ALLOY_FUNC bool region_loop(GroupThreads& g, F cond, unsigned depth) {
  if (g.all_alive) {
    // The group stays whole unless its threads disagree.
    const unsigned char waiting = static_cast<unsigned char>(2 + depth);
    unsigned stays[kRegionMaxThreads];
    const unsigned long staying = region_count_all(g, cond, stays);
    if (staying == g.count || staying == 0) return staying != 0;
    region_wait_unless(g, stays, waiting);
    return true;
  }
  // The threads whose condition fails wait; when none holds, the loop ends
  // and every thread that waited at this depth goes on.
  const bool any = region_branch(g, cond, depth);
  if (!any) region_rejoin(g, depth);
  return any;
}

// run<true>'s contract for a kernel split into regions: group_fn(GroupThreads&)
// runs one whole threadgroup.
template <class F> void run_regions(const Launch* L, F&& group_fn) {
  // Looked up once per launch: in a shared object each use of a
  // thread_local is a call (__tls_get_addr), which g++ would otherwise
  // repeat for every thread; the empty asm keeps the address in a register.
  static thread_local GroupThreads state;
  GroupThreads* state_address = &state;
  __asm__("" : "+r"(state_address));
  GroupThreads& g = *state_address;
#if ALLOY_MSL_USE_MATRIX || ALLOY_MSL_CPU_RACE_CHECK
  detail::g_region_group = &g;
#endif
  for (unsigned long long n = L->tg_begin; n < L->tg_end; ++n) {
    if (L->cancel && __atomic_load_n(L->cancel, __ATOMIC_RELAXED)) return;
    const GroupGeometry geo = group_geometry(L->grid, L->threadgroup, n);
    fill_thread_ids(g.base, geo, metal::uint3(0u), 0u);
    g.count = geo.count;
    g.extent[0] = geo.actual.x;
    g.extent[1] = geo.actual.y;
    g.extent[2] = geo.actual.z;
    g.all_alive = true;
    group_fn(g);
    if (g.frame_wanted) {
      char msg[160];
      __builtin_snprintf(msg, sizeof msg,
                         "[alloy_msl::cpu::run] cannot allocate %lu bytes for the per-thread values of a threadgroup",
                         g.frame_wanted);
      detail::write_error(L, msg);
      return;
    }
  }
}

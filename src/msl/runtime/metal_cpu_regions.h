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
inline constexpr unsigned kRegionExchangeSlots = 2 * kRegionCallsPerStatement;
struct GroupThreads {
  unsigned count;
  ThreadIds base;  // the group's own ids (those of its thread 0)
  unsigned short local[kRegionMaxThreads][3];
  // 1: running; 0: returned; 2 + d: waiting after the loop at depth d it
  // has left while others run on (as a SIMT machine reconverges there).
  unsigned char alive[kRegionMaxThreads];
  unsigned simd_mask[kRegionMaxThreads / kSimdWidth];  // living lanes at the current exchange
  unsigned results_ready[kRegionExchangeSlots][kRegionMaxThreads / kSimdWidth];
  alignas(16) unsigned char slots[kRegionExchangeSlots][kRegionMaxThreads][kSimdSlotBytes];
  alignas(16) unsigned char results[kRegionExchangeSlots][kRegionMaxThreads][kSimdSlotBytes];
  // The kernel's per-thread arrays (values that live across regions).
  void* frame = nullptr;
  unsigned long frame_bytes = 0, frame_wanted = 0;
  ~GroupThreads() { __builtin_free(frame); }
};

// Memory for the kernel's per-thread arrays, kept from group to group (null
// when it cannot be had: the kernel then stops with an error).
ALLOY_FUNC void* region_frame(GroupThreads& g, unsigned long bytes) {
  if (bytes > g.frame_bytes) {
    __builtin_free(g.frame);
    g.frame = __builtin_aligned_alloc(64, (bytes + 63) / 64 * 64);
    g.frame_bytes = g.frame ? bytes : 0;
    g.frame_wanted = g.frame ? 0 : bytes;
  }
  return g.frame;
}

// Each per-thread attribute of thread `tid`, computed on its own (a region
// reads a few); the group's own ones are read from g.base.
ALLOY_FUNC metal::uint3 region_local(const GroupThreads& g, unsigned tid) {
  return metal::uint3(g.local[tid][0], g.local[tid][1], g.local[tid][2]);
}
#define ALLOY_REGION_ATTRIBUTE(name, expr) \
  ALLOY_FUNC auto region_##name(const GroupThreads& g, unsigned tid) { (void)tid; return expr; }
ALLOY_REGION_ATTRIBUTE(thread_position_in_grid, g.base.thread_position_in_grid + region_local(g, tid))
ALLOY_REGION_ATTRIBUTE(thread_position_in_threadgroup, region_local(g, tid))
ALLOY_REGION_ATTRIBUTE(thread_index_in_threadgroup, metal::uint(tid))
ALLOY_REGION_ATTRIBUTE(thread_index_in_simdgroup, metal::uint(tid % kSimdWidth))
ALLOY_REGION_ATTRIBUTE(simdgroup_index_in_threadgroup, metal::uint(tid / kSimdWidth))
ALLOY_REGION_ATTRIBUTE(thread_index_in_quadgroup, metal::uint(tid % 4))
ALLOY_REGION_ATTRIBUTE(quadgroup_index_in_threadgroup, metal::uint(tid / 4))
#undef ALLOY_REGION_ATTRIBUTE

template <class P> ALLOY_FUNC void region_deposit(GroupThreads& g, unsigned slot, unsigned tid, const P& pending) {
  __builtin_memcpy(g.slots[slot][tid], &pending.value, sizeof(pending.value));
}
// Between the loop that deposits and the loop that reads: the lanes taking
// part are those still living.
ALLOY_FUNC void region_exchange(GroupThreads& g, unsigned first_slot, unsigned slots) {
  const unsigned groups = (g.count + kSimdWidth - 1) / kSimdWidth;
  for (unsigned s = 0; s < groups; ++s) {
    unsigned m = 0;
    for (unsigned l = 0; l < kSimdWidth && s * kSimdWidth + l < g.count; ++l)
      m |= unsigned(g.alive[s * kSimdWidth + l] == 1) << l;
    g.simd_mask[s] = m;
    for (unsigned k = first_slot; k < first_slot + slots; ++k) g.results_ready[k][s] = 0;
  }
}
template <class P> ALLOY_FUNC auto region_result(GroupThreads& g, unsigned slot, unsigned tid, const P& pending) {
  const unsigned s = tid / kSimdWidth, first = s * kSimdWidth;
  detail::exchanged<decltype(pending.value)> e;
  e.v.slots = g.slots[slot][first];
  e.v.mask = g.simd_mask[s];
  e.v.lane = tid % kSimdWidth;
  e.v.width = g.count - first < kSimdWidth ? g.count - first : kSimdWidth;
  e.v.results = g.results[slot][first];
  e.v.results_ready = &g.results_ready[slot][s];
  return pending.then(e);
}
// A loop whose body has barriers runs for the group as a whole, while any
// running thread's condition holds; a thread whose condition fails waits
// after the loop (at nesting depth `depth`) until the last one leaves. (In
// Metal every thread must reach a barrier; where some leave early, the
// others' barriers count the threads still in the loop, as fibers do.)
template <class F> ALLOY_FUNC bool region_loop(GroupThreads& g, F cond, unsigned depth) {
  bool any = false;
  for (unsigned tid = 0; tid < g.count; ++tid) {
    if (g.alive[tid] != 1) continue;
    if (cond(tid)) any = true;
    else g.alive[tid] = static_cast<unsigned char>(2 + depth);
  }
  if (!any)
    for (unsigned tid = 0; tid < g.count; ++tid)
      if (g.alive[tid] == 2 + depth) g.alive[tid] = 1;
  return any;
}

// run<true>'s contract for a kernel split into regions: group_fn(GroupThreads&)
// runs one whole threadgroup.
template <class F> void run_regions(const Launch* L, F&& group_fn) {
  static thread_local GroupThreads g;
  for (unsigned long long n = L->tg_begin; n < L->tg_end; ++n) {
    if (L->cancel && __atomic_load_n(L->cancel, __ATOMIC_RELAXED)) return;
    const GroupGeometry geo = group_geometry(L->grid, L->threadgroup, n);
    fill_thread_ids(g.base, geo, metal::uint3(0u), 0u);
    g.count = geo.count;
    unsigned tid = 0;
    for (unsigned z = 0; z < geo.actual.z; ++z)
      for (unsigned y = 0; y < geo.actual.y; ++y)
        for (unsigned x = 0; x < geo.actual.x; ++x, ++tid) {
          g.local[tid][0] = (unsigned short)x;
          g.local[tid][1] = (unsigned short)y;
          g.local[tid][2] = (unsigned short)z;
          g.alive[tid] = 1;
        }
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

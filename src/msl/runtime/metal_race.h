// The race check of a CPU translation (KernelSpec::race_check): every access
// to a threadgroup array the body declares, `(*race_access(alloy_bc, slot,
// line, write, &(a[i]), a))` (msl/rewrite.cpp), is compared with the earlier
// accesses to the same element in the same region. A kernel split into
// regions runs each region for every thread of the group before the next,
// and regions end at its barriers (and at SIMD-group calls), so two threads
// that touch one element within a region, one of them writing, have no
// barrier between them: on a GPU the reader may see either value, and the
// CPU shows one of them. The first such pair is reported through the bounds
// report (bounds_report.h) and the launch raises naming both lines.
//
// Per element, the last write and up to two readers of the current region
// are kept, each with the region it was in; regions are counted per OS
// thread over all its groups, so entries of an earlier group never match.
// Accesses through pointers to the array, and in helper functions, are not
// seen; kernels that run as coroutines or fibers are not checked.
#pragma once

#include <unordered_map>

namespace alloy_msl {
namespace cpu::detail {

struct RaceAccess {
  unsigned long long region = 0;  // 0: none yet (regions count from 1)
  unsigned thread[3] = {0, 0, 0};
  int line = 0;
};
// The last write; the first read of the region and a read by another thread
// (enough to name a reader other than any one writer).
struct RaceEntry {
  RaceAccess write, read, other_read;
};

inline bool same_thread(const unsigned* a, const metal::uint3& b) {
  return a[0] == b.x && a[1] == b.y && a[2] == b.z;
}

inline void race_fault(const BoundsCheck& c, int slot, int line, int write, long long element,
                       const RaceAccess& other, int other_write) {
  BoundsReport* r = claim_report(c);
  if (!r) return;
  r->race = 1;
  set_access(r->access, c, slot, 0, line, write, element, 0);
  r->other_line = other.line;
  r->other_write = other_write;
  for (int d = 0; d < 3; ++d) r->other_thread[d] = other.thread[d];
}

}  // namespace cpu::detail

template <class T>
ALLOY_FUNC T* race_access(const BoundsCheck& c, int slot, int line, int write, T* p, const void* array) {
#if ALLOY_MSL_CPU_REGIONS
  using namespace cpu::detail;
  static thread_local std::unordered_map<unsigned long long, RaceEntry> entries;
  const unsigned long long region = g_region_group->region_serial;
  const long long offset = reinterpret_cast<const char*>(p) - static_cast<const char*>(array);
  RaceEntry& e = entries[(static_cast<unsigned long long>(slot) << 40) ^ static_cast<unsigned long long>(offset)];
  const long long element = offset / static_cast<long long>(sizeof(T));
  auto mark = [&](RaceAccess& a) {
    a.region = region;
    a.thread[0] = c.thread.x;
    a.thread[1] = c.thread.y;
    a.thread[2] = c.thread.z;
    a.line = line;
  };
  auto by_other = [&](const RaceAccess& a) { return a.region == region && !same_thread(a.thread, c.thread); };
  if (by_other(e.write)) {
    race_fault(c, slot, line, write, element, e.write, 1);
  } else if (write && (by_other(e.read) || by_other(e.other_read))) {
    race_fault(c, slot, line, write, element, by_other(e.read) ? e.read : e.other_read, 0);
  }
  if (write) {
    mark(e.write);
  } else if (e.read.region != region) {
    mark(e.read);
  } else if (!same_thread(e.read.thread, c.thread) && e.other_read.region != region) {
    mark(e.other_read);
  }
#else
  (void)c, (void)slot, (void)line, (void)write, (void)array;
#endif
  return p;
}

}  // namespace alloy_msl

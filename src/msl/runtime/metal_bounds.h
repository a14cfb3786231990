// The checks a bounds-checked translation (KernelSpec::bounds_check) puts
// around every subscript of a kernel buffer or threadgroup array:
// `out[i]` becomes `out[(::alloy_msl::bounds_index<decltype(out), 0>)(
// alloy_bc, slot, line, write, (i))]`. An index inside the buffer is returned as it is;
// one outside records the launch's first fault (bounds_report.h) and becomes
// 0, so the access itself stays in memory the kernel owns and the launch
// runs to its end; the host then raises naming the buffer, index and thread.
// On the CPU the fault also cancels the threadgroups not yet started. A
// launch may instead tolerate reads of its inputs out of bounds: they read
// element 0 (BoundsReport::tolerate_reads_below), or, in a translation that
// checks only them (ALLOY_BOUNDS_INPUT_READS_ONLY), the input's last element.
#pragma once

#include "bounds_report.h"

// The rare path of a check (a fault, a tolerated read) is a call, not
// inlined at each subscript: inlined, a kernel with unrolled loops of
// accesses (jang's gather_tq_matmul, 1,000 subscripts) took NVRTC 2 minutes
// and g++ 8 s.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ALLOY_BOUNDS_COLD __device__ __noinline__
#else
#define ALLOY_BOUNDS_COLD inline __attribute__((noinline, cold))
#endif

namespace alloy_msl {

// What the kernel function receives in a checked translation.
struct BoundsCheck {
  const unsigned long long* sizes;  // elements per buffer slot
  BoundsReport* report;
  metal::uint3 thread;  // thread_position_in_grid, for the report
  const int* cancel;    // the CPU launch's cancel flag (null on the GPU)
};

// The extent of dimension D of an array type, 0 for a pointer (whose size
// the launch passes).
template <class T, int D> struct bounds_extent { static constexpr unsigned long long value = 0; };
template <class T, int D> struct bounds_extent<T&, D> : bounds_extent<T, D> {};
template <class T, unsigned long long N> struct bounds_extent<T[N], 0> {
  static constexpr unsigned long long value = N;
};
template <class T, unsigned long long N, int D> struct bounds_extent<T[N], D> : bounds_extent<T, D - 1> {};

ALLOY_FUNC void set_access(BoundsAccess& a, const BoundsCheck& c, int slot, int dim, int line, int write,
                           long long index, unsigned long long size) {
  a.slot = slot;
  a.dim = dim;
  a.line = line;
  a.write = write;
  a.index = index;
  a.size = size;
  a.thread[0] = c.thread.x;
  a.thread[1] = c.thread.y;
  a.thread[2] = c.thread.z;
}

// The launch's report, claimed for this thread's fault, or null when another
// fault came first. On the CPU the launch's threadgroups not yet started are
// cancelled.
ALLOY_FUNC BoundsReport* claim_report(const BoundsCheck& c) {
  BoundsReport* r = c.report;
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  if (atomicCAS(&r->faulted, 0u, 1u) != 0u) return nullptr;
#else
  unsigned expected = 0;
  if (!__atomic_compare_exchange_n(&r->faulted, &expected, 1u, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    return nullptr;
  if (c.cancel) __atomic_store_n(const_cast<int*>(c.cancel), 1, __ATOMIC_RELAXED);
#endif
  return r;
}

ALLOY_FUNC void bounds_fault(const BoundsCheck& c, int slot, int dim, int line, int write, long long index,
                             unsigned long long size) {
  if (BoundsReport* r = claim_report(c)) set_access(r->access, c, slot, dim, line, write, index, size);
}

// A read of an input outside its buffer, in a launch that tolerates them
// (BoundsReport::tolerate_reads_below), kept for the warning. The host sets
// that on the CPU only. Threads run in any order there, so the read kept is
// that of the first thread in grid order (z, then y, then x), its first: the
// warning names the same read on every run. `tolerated` is a lock: 0 none
// kept, 1 being written, 2 kept.
ALLOY_FUNC void note_tolerated_read(const BoundsCheck& c, int slot, int line, long long index,
                                    unsigned long long size) {
  BoundsReport* r = c.report;
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
  if (atomicCAS(&r->tolerated, 0u, 2u) == 0u) set_access(r->tolerated_read, c, slot, 0, line, 0, index, size);
#else
  const unsigned mine[3] = {c.thread.z, c.thread.y, c.thread.x};
  auto before_kept = [&] {
    const unsigned* t = r->tolerated_read.thread;
    const unsigned kept[3] = {__atomic_load_n(&t[2], __ATOMIC_RELAXED), __atomic_load_n(&t[1], __ATOMIC_RELAXED),
                              __atomic_load_n(&t[0], __ATOMIC_RELAXED)};
    for (int d = 0; d < 3; ++d)
      if (mine[d] != kept[d]) return mine[d] < kept[d];
    return false;  // this thread's own earlier read stays
  };
  unsigned state = __atomic_load_n(&r->tolerated, __ATOMIC_ACQUIRE);
  for (;;) {
    if (state == 2 && !before_kept()) return;  // the common case once one is kept: no lock
    if (state != 1 && __atomic_compare_exchange_n(&r->tolerated, &state, 1u, false, __ATOMIC_ACQUIRE,
                                                  __ATOMIC_ACQUIRE))
      break;
    state = __atomic_load_n(&r->tolerated, __ATOMIC_ACQUIRE);
  }
  if (state == 0 || before_kept()) set_access(r->tolerated_read, c, slot, 0, line, 0, index, size);
  __atomic_store_n(&r->tolerated, 2u, __ATOMIC_RELEASE);
#endif
}

// An index outside its buffer: kept as a tolerated read or reported as the
// fault; the access then goes to element 0.
ALLOY_BOUNDS_COLD void out_of_bounds(const BoundsCheck& c, int slot, int dim, int line, int write, long long index,
                                     unsigned long long size) {
  if (!write && slot < c.report->tolerate_reads_below && size > 0 && size != ~0ull)
    note_tolerated_read(c, slot, line, index, size);
  else
    bounds_fault(c, slot, dim, line, write, index, size);
}

// The largest value of an index's type (no <limits> in the runtime, and
// metal::numeric_limits has no enumerations, which kernels use as
// subscripts: `enum { kRow = 4 }; x[kRow]`).
template <class I>
constexpr unsigned long long index_top() {
  constexpr bool is_signed = static_cast<I>(-1) < static_cast<I>(0);
  constexpr unsigned bits = 8 * sizeof(I) - (is_signed ? 1 : 0);
  return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

template <class Base, int D, class I>
ALLOY_FUNC I bounds_index(const BoundsCheck& c, int slot, int line, int write, I index) {
  constexpr unsigned long long extent = bounds_extent<Base, D>::value;
  const unsigned long long size = extent ? extent : c.sizes[slot];
#if ALLOY_BOUNDS_INPUT_READS_ONLY
  // KernelSpec::tolerate_input_reads: only the inputs' subscripts come here,
  // all reads; one out of bounds reads the input's last element (the last
  // an index of its type reaches), and nothing is reported; an empty input
  // keeps its index (no element can be read). For a 32-bit index that is
  // one unsigned min against a limit the compiler derives from the launch's
  // sizes once (a negative int wraps past it): the seed's grid_sample
  // forward, six subscripts, took 28% more instructions with a 64-bit
  // compare and select per subscript, 8% with this.
  (void)line, (void)write;
  constexpr unsigned long long top = index_top<I>();
  const unsigned long long last = size - 1 > top ? top : size - 1;
  if constexpr (sizeof(I) == 4) {
    const unsigned limit = size == 0 ? 0xffffffffu : static_cast<unsigned>(last);
    const unsigned u = static_cast<unsigned>(index);
    return static_cast<I>(u < limit ? u : limit);
  } else {
    const long long i = static_cast<long long>(index);
    if (size == 0 || (i >= 0 && static_cast<unsigned long long>(i) < size)) return index;
    return static_cast<I>(last);
  }
#else
  const long long i = static_cast<long long>(index);
  if (i >= 0 && static_cast<unsigned long long>(i) < size) return index;
  out_of_bounds(c, slot, D, line, write, i, size);
  return static_cast<I>(0);
#endif
}

}  // namespace alloy_msl

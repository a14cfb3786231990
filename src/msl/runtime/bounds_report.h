// Where a bounds-checked kernel (KernelSpec::bounds_check) records its first
// out-of-bounds access, and the per-buffer sizes it checks against. Plain
// C++ with no dependencies: the runtime (both targets) and liballoy include it.
#pragma once

namespace alloy_msl {

// Buffers and threadgroup arrays one checked launch can name.
inline constexpr int kMaxBoundsSlots = 64;

// One access out of bounds: what, where, and by which thread.
struct BoundsAccess {
  int slot;     // inputs, then outputs, then the body's threadgroup arrays
  int dim;      // which subscript of `name[a][b]...` (0 for a buffer)
  int line;     // the access's line in the kernel's source
  int write;    // 1: the access is assigned to (`=`, `+=`, `++`), 0: read
  long long index;
  unsigned long long size;  // elements of the buffer, or the array's extent
  unsigned thread[3];       // thread_position_in_grid of the accessing thread
};

// The first fault of a launch; `faulted` is 0 until then and the rest is
// written once, by the thread that set it.
struct BoundsReport {
  unsigned faulted;
  BoundsAccess access;
  // A race (KernelSpec::race_check) rather than an index out of bounds: the
  // access above (index: the element) met an earlier one, by another thread
  // since the last barrier, one of them a write.
  int race;
  int other_line, other_write;
  unsigned other_thread[3];
  // Set by the host (0: off): reads of slots below this (the inputs, which
  // a kernel cannot write) outside their buffer read its element 0 instead
  // of faulting (a CPU launch rerun after a memory fault:
  // backend/cpu/custom_kernel.cpp). `tolerated` is 0 until one is kept in
  // `tolerated_read`: that of the first thread in grid order, its first.
  int tolerate_reads_below;
  unsigned tolerated;
  BoundsAccess tolerated_read;
};

// Elements of each buffer slot, passed to a CUDA kernel by value.
struct BoundsSizes {
  unsigned long long v[kMaxBoundsSlots];
};

// What a translation that checks only its inputs' reads
// (KernelSpec::tolerate_input_reads) declares instead: the first N sizes of
// the launch's BoundsSizes (its inputs'), and no report. A kernel parameter
// of 512 bytes made each graph node of alloy.mlx's tiny kernel cost more.
template <int N>
struct InputSizes {
  unsigned long long v[N];
};

}  // namespace alloy_msl

// The launch record liballoy hands to a JIT-compiled CPU kernel
// (alloy_kernel_main), and the fiber services liballoy provides to it through
// function pointers, so the kernel's shared object links against nothing.
// Plain C++ with no dependencies: included by the runtime and by liballoy.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "bounds_report.h"

namespace alloy_msl::cpu {

// Bytes one lane may deposit in a SIMD-group exchange (the largest MSL vector, long4).
inline constexpr unsigned kSimdSlotBytes = 32;

// Where a barrier or SIMD-group function was called (for matching and messages).
struct SyncSite {
  const char* file;
  unsigned line;
  unsigned column;
  const char* what;  // "threadgroup_barrier", "simd_sum", ...
};

// What a SIMD-group exchange returns to each lane taking part.
struct SimdView {
  const unsigned char* slots;  // lane i's bytes at slots + i * slot_stride
  unsigned mask;               // lanes taking part (bit i = lane i)
  unsigned lane;               // the caller's lane
  unsigned width;              // lanes that exist in the caller's SIMD group
  // Results shared by the lanes of this exchange (kSimdSlotBytes per lane):
  // the first lane of a segment to return computes a reduction or scan for
  // all of them and sets its segment's bit in *results_ready (cleared when
  // the exchange completes).
  unsigned char* results;
  unsigned* results_ready;
  // kSimdSlotBytes, or the value's own size where a region deposits typed
  // values side by side (region_deposit: a plain store its loop vectorises).
  unsigned slot_stride = kSimdSlotBytes;
};

struct CoroutineThreads;

struct FiberApi {
  // Runs threads [0, count) of one threadgroup as fibers, entry(arg, i), until all
  // have returned. Returns 0, or nonzero after writing a message (naming the
  // threadgroup `group`) to err (err_size bytes, NUL-terminated).
  int (*run_group)(unsigned count, const unsigned group[3], void (*entry)(void* arg, unsigned thread), void* arg,
                   char* err, size_t err_size);
  // threadgroup_barrier from the running fiber: waits for every thread of the
  // group that has not returned.
  void (*barrier)(SyncSite site);
  // SIMD-group rendezvous from the running fiber: deposits `size` bytes of
  // `value` and waits for the living lanes of its SIMD group (or, when some of
  // them wait at a threadgroup barrier, for those at this call).
  void (*simd_exchange)(SyncSite site, const void* value, unsigned size, SimdView* out);
  // thread_index_in_simdgroup of the running fiber.
  unsigned (*lane)();
  // thread_index_in_threadgroup of the running fiber, and the group's thread count.
  void (*thread)(unsigned* index, unsigned* count);

  // The same scheduler with each thread a C++20 coroutine instead of a fiber
  // (a kernel whose barriers and SIMD-group calls are all `co_await`s in its
  // own body): `threads` makes, resumes and frees them. Same result and
  // messages as run_group.
  int (*run_group_coroutines)(unsigned count, const unsigned group[3], const CoroutineThreads* threads,
                              char* err, size_t err_size);
  // From a coroutine thread of `group` (the scheduler's, given to
  // CoroutineThreads::start) about to suspend: it waits at a threadgroup
  // barrier, or deposits `size` bytes of `value` for a SIMD-group exchange;
  // then `settle(arg)` runs when the exchange is over and the thread is
  // resumed, before its code goes on: the awaiter takes its result there
  // (g++ 12 may call a co_await's await_resume only after a later co_await
  // of the same expression has suspended, when the exchange's buffers hold
  // the next one).
  void (*arrive_barrier)(void* group, SyncSite site);
  void (*arrive_simd)(void* group, SyncSite site, const void* value, unsigned size, void (*settle)(void* arg),
                      void* arg);
  // From settle: what the exchange returns to the thread.
  void (*simd_result)(void* group, SimdView* out);
  // Memory for a coroutine frame, valid until the group's run ends (null
  // when memory ran out).
  void* (*frame_alloc)(size_t bytes);
};

// One threadgroup's threads as coroutines, made by the kernel's own code (the
// coroutine ABI stays inside the kernel's shared object).
struct CoroutineThreads {
  // Thread `thread`'s coroutine, suspended at its start, knowing `group`; null: out of memory.
  void* (*start)(void* arg, void* group, unsigned thread);
  int (*resume)(void* handle);                 // runs it to its next suspension; nonzero once it has returned
  void (*destroy)(void* handle);
  void* arg;
};

struct Launch {
  void* const* buffers;            // kernel arguments in order: inputs, then outputs
  // Per input, then per output where given (metal_library's tensors):
  const int* const* shapes;        // name_shape (null where unused)
  const int64_t* const* strides;   // name_strides
  const int* ndims;                // name_ndim
  unsigned grid[3];                // threads, as dispatchThreads counts them
  unsigned threadgroup[3];         // requested size, already clamped to the grid
  uint64_t tg_begin, tg_end;       // linear threadgroup indices to run (x fastest)
  const FiberApi* fibers;          // liballoy's fiber services (run<true>)
  char* error;                     // run() writes a message here and stops
  size_t error_size;
  const int* cancel;               // nonzero: stop before the next threadgroup (may be null)
  // A bounds-checked translation only: elements per buffer (inputs, then
  // outputs) and where its first out-of-bounds access is recorded.
  const unsigned long long* bounds_sizes;
  BoundsReport* bounds_report;
  // Nonzero: no other thread adds to this launch's add-only atomic outputs
  // at the same time (each worker has a copy of its own, summed after the
  // launch), so their adds may be plain (msl/private_adds.h).
  int plain_adds;
};

}  // namespace alloy_msl::cpu

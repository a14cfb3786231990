// CUDA target: barriers, memory flags, fences, and the set of lanes of this
// thread's SIMD group that exist.
//
// Threads outside the grid return at kernel entry (Metal: they do not
// exist), so the last warp of a partial threadgroup has fewer lanes, always
// the low ones (SIMD groups are formed from the linear thread index).
// Warp intrinsics with a full mask are undefined when lanes have exited:
// simdgroup_barrier waits for the lanes present instead, and the SIMD-group
// functions (cuda_simd.h) work over the lanes active at the call, taking
// their fast path when those are all the lanes present.
// thread_ids() has lane 0 of each SIMD group store the group's present-lane
// mask and the threadgroup's thread count in that SIMD group's own shared
// slot, then waits for the lanes present (__syncwarp): only that SIMD
// group's lanes read the slot, so no other warp's access can race with it.
#pragma once

namespace alloy_msl {
namespace cuda {

ALLOY_FUNC unsigned lane_id() { return threadIdx.x & 31u; }

#if ALLOY_MSL_USE_LANE_STATE
struct SimdGroupState {
  unsigned present;              // bit i: lane i exists
  unsigned threadgroup_threads;  // threads of the threadgroup that exist
  unsigned converged;            // bit i: lane i is inside a statement every lane present runs together
};
__shared__ SimdGroupState simd_group_state[32];

// Bit i set for each lane i present in this thread's SIMD group.
ALLOY_FUNC unsigned present_mask() { return simd_group_state[threadIdx.x >> 5].present; }
// Number of lanes present in this thread's SIMD group (1..32).
ALLOY_FUNC unsigned lanes_present() { return __popc(present_mask()); }
ALLOY_FUNC unsigned threads_present_in_threadgroup() { return simd_group_state[threadIdx.x >> 5].threadgroup_threads; }
// At entry, once the threads outside the grid have left (thread_ids()).
ALLOY_FUNC void set_simd_group_state(unsigned tid, unsigned n) {
  const unsigned left = n - (tid & ~31u);
  const unsigned present = left >= 32u ? 0xffffffffu : ((1u << left) - 1u);
  if ((tid & 31u) == 0u) simd_group_state[tid >> 5] = SimdGroupState{present, n, 0u};
  __syncwarp(present);
}
#else
// Nothing reads the record (the translator saw no SIMD-group function,
// simdgroup_barrier or tensor): no store and no warp barrier at entry.
ALLOY_FUNC void set_simd_group_state(unsigned, unsigned) {}
#endif

}  // namespace cuda

// Around a statement whose SIMD-group calls every lane present makes
// (msl/converged_calls.h, msl/rewrite.cpp): each lane waits for the others,
// then marks itself as inside the statement, and unmarks itself after it.
// A marked lane's calls take the lanes present as their set
// (cuda_simd.h's active_mask), not __activemask(): the barrier does not
// promise that the lanes are still together at the call (on an H100, lanes
// that left a loop at different trips summed in two parts after it), while
// a *_sync intrinsic named with every lane present waits for them all.
// simd_reconverge_only() is the barrier without the mark, for a statement
// whose calls may sit in a branch of its own (`c ? simd_sum(x) : 0`).
#if ALLOY_MSL_USE_LANE_STATE
ALLOY_FUNC void simd_reconverge_only() { __syncwarp(cuda::present_mask()); }
ALLOY_FUNC void simd_reconverge() {
  __syncwarp(cuda::present_mask());
  atomicOr(&cuda::simd_group_state[threadIdx.x >> 5].converged, 1u << cuda::lane_id());
}
ALLOY_FUNC void simd_converged_end() {
  atomicAnd(&cuda::simd_group_state[threadIdx.x >> 5].converged, ~(1u << cuda::lane_id()));
}
namespace cuda {
// Whether this lane is inside a statement every lane present runs together.
ALLOY_FUNC bool in_converged_statement() { return ((simd_group_state[threadIdx.x >> 5].converged >> lane_id()) & 1u) != 0u; }
}  // namespace cuda
#endif

// Between two statements of a metal_kernel body that share threadgroup
// memory between a SIMD group's lanes with no barrier (msl/lockstep.h): the
// warp's lanes executing this point wait for each other and see each
// other's stores, as lockstep lanes do on Apple's GPUs. Without it nvcc kept
// a lane's element in a register across such statements and stored it once
// after all of them. The lanes executing it, not those present: it may sit
// in a branch only some take, where a wait for absent lanes would hang.
ALLOY_FUNC void lockstep_point() { __syncwarp(__activemask()); }

}  // namespace alloy_msl

// Apple's compiler builtin for the lane, which MLX's NAX headers call directly.
template <class T> ALLOY_FUNC T __metal_get_thread_index_in_simdgroup(T) { return T(::alloy_msl::cuda::lane_id()); }

namespace metal {

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
ALLOY_FUNC constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }
ALLOY_FUNC constexpr mem_flags operator&(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) & unsigned(b)); }

enum memory_order {
  memory_order_relaxed,
  memory_order_acquire,
  memory_order_release,
  memory_order_acq_rel,
  memory_order_seq_cst,
};

// All threads of the threadgroup must reach it (as in Metal). __syncthreads
// also orders device and threadgroup memory within the block, which covers
// every mem_flags value.
ALLOY_FUNC void threadgroup_barrier(mem_flags = mem_flags::mem_none) { __syncthreads(); }

#if ALLOY_MSL_USE_LANE_STATE
ALLOY_FUNC void simdgroup_barrier(mem_flags flags = mem_flags::mem_none) {
  __syncwarp(::alloy_msl::cuda::present_mask());
  if (unsigned(flags & mem_flags::mem_device)) __threadfence_block();
}
#endif

ALLOY_FUNC void atomic_thread_fence(mem_flags flags, memory_order order = memory_order_seq_cst,
                                    thread_scope scope = thread_scope_device) {
  if (order == memory_order_relaxed) return;
  if (scope == thread_scope_device && unsigned(flags & mem_flags::mem_device)) {
    __threadfence();
  } else {
    __threadfence_block();
  }
}

}  // namespace metal

// CUDA target: threadgroup arrays in dynamic shared memory. CUDA caps static
// `__shared__` storage at 48 KB per block; a kernel that declares more is
// translated again (KernelSpec::threadgroup_storage): first with every
// kernel-scope array kept allocated, so ptxas's count bounds their total,
// then with each taking the next aligned piece of this buffer (declarations
// run once, in order, so the offsets fold to constants). The launcher
// passes the bound as the launch's dynamic shared memory size.
#pragma once

namespace alloy_msl {
namespace cuda {

extern __shared__ __align__(16) unsigned char alloy_dynamic_threadgroup[];

template <class T> ALLOY_FUNC T* threadgroup_take(unsigned& cursor) {
  cursor = (cursor + unsigned(alignof(T)) - 1u) & ~(unsigned(alignof(T)) - 1u);
  T* p = reinterpret_cast<T*>(alloy_dynamic_threadgroup + cursor);
  cursor += unsigned(sizeof(T));
  return p;
}

// Makes ptxas allocate (and count) an array even if nothing reads it.
template <class T> ALLOY_FUNC void keep_threadgroup(T* p) { asm volatile("" ::"l"(p)); }

}  // namespace cuda
}  // namespace alloy_msl

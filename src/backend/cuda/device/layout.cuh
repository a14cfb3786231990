// Kernel parameters that describe strided operands, shared by the host (which
// fills them) and the device (which reads them): plain structs passed by value
// in the kernel's parameter space, so a launch needs no metadata buffer.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cstdint>
#endif

namespace alloy::cuda {

// The most dimensions a strided kernel walks after merging contiguous ones.
inline constexpr int kMaxDims = 10;

// N operands over one shape: strides[k] are operand k's element strides.
template <int N>
struct StridedLayout {
  int32_t ndim;
  int32_t shape[kMaxDims];
  int64_t strides[N][kMaxDims];
};

#if defined(__CUDACC_RTC__)

// Element offsets of the row-major position `i` for every operand. NDIM > 0
// unrolls for exactly that many dims; NDIM == 0 reads layout.ndim.
template <int NDIM, int N, typename IdxT>
__device__ __forceinline__ void elem_to_locs(IdxT i, const StridedLayout<N>& L, IdxT (&loc)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) loc[k] = 0;
  if constexpr (NDIM > 0) {
#pragma unroll
    for (int d = NDIM - 1; d > 0; --d) {
      IdxT s = L.shape[d];
      IdxT q = i / s;
      IdxT r = i - q * s;
#pragma unroll
      for (int k = 0; k < N; ++k) loc[k] += r * IdxT(L.strides[k][d]);
      i = q;
    }
#pragma unroll
    for (int k = 0; k < N; ++k) loc[k] += i * IdxT(L.strides[k][0]);
  } else {
    for (int d = L.ndim - 1; d > 0; --d) {
      IdxT s = L.shape[d];
      IdxT q = i / s;
      IdxT r = i - q * s;
#pragma unroll
      for (int k = 0; k < N; ++k) loc[k] += r * IdxT(L.strides[k][d]);
      i = q;
    }
#pragma unroll
    for (int k = 0; k < N; ++k) loc[k] += i * IdxT(L.strides[k][0]);
  }
}

// One operand's offset for a shape and strides given as plain arrays.
template <typename IdxT>
__device__ __forceinline__ IdxT elem_to_loc(IdxT i, int ndim, const int32_t* shape, const int64_t* strides) {
  IdxT loc = 0;
  for (int d = ndim - 1; d > 0; --d) {
    IdxT s = shape[d];
    IdxT q = i / s;
    loc += (i - q * s) * IdxT(strides[d]);
    i = q;
  }
  if (ndim > 0) loc += i * IdxT(strides[0]);
  return loc;
}

#endif

}  // namespace alloy::cuda

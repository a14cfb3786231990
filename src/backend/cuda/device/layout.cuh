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

// Parameters of the reduction kernels (reduce.cuh).
struct RowReduceArgs {
  int64_t n_rows;        // outputs (before splitting)
  int64_t run;           // contiguous reduced elements per outer reduced position
  int64_t n_outer;       // outer reduced positions
  int64_t split_len;     // elements of `run` each gridDim.y slice covers
  StridedLayout<1> kept;   // row index -> input offset
  StridedLayout<1> outer;  // outer reduced position -> input offset
};

struct ColReduceArgs {
  int64_t inner;      // K: the kept contiguous run (outputs per outer position)
  int64_t n_outer;    // outer kept positions
  int64_t n_red;      // reduced positions
  int64_t split_len;  // reduced positions each gridDim.z slice covers
  StridedLayout<1> kept;  // outer kept position -> input offset
  StridedLayout<1> red;   // reduced position -> input offset
};

// Parameters of gather and scatter (indexing.cuh): up to kMaxDims index
// arrays of one integer dtype over a common index shape.
struct IndexArgs {
  const void* idx[kMaxDims];
  int32_t n_idx;
  int32_t idx_ndim;
  int32_t idx_shape[kMaxDims];
  int64_t idx_strides[kMaxDims][kMaxDims];  // [index array][dim]
  int64_t axis_size[kMaxDims];    // size of the axis each index array indexes
  int64_t axis_limit[kMaxDims];   // largest valid block start on that axis
  int64_t axis_stride[kMaxDims];  // that axis' element stride in the target
  int64_t n_index;                // positions of the index shape
  int64_t block;                  // elements per block
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

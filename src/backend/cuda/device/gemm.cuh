// The matmul fallback for dtypes cuBLAS does not take (integers, bool): one
// thread per output element, products accumulated in the element type
// (wrapping, as the CPU backend), 16-bit floats in float.
#pragma once

#include "kernel_common.cuh"

namespace alloy {

template <typename T>
__device__ __forceinline__ void gemm_naive(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K, int64_t sam,
                                           int64_t sak, int64_t sbk, int64_t sbn, cuda::StridedLayout<2> batch,
                                           int64_t n_out) {
  using Acc = std::conditional_t<std::is_integral_v<T>, math::wrap_t<T>, math::compute_t<T>>;
  for (int64_t e = global_thread(); e < n_out; e += grid_threads()) {
    const int64_t mn = M * N, bi = e / mn, r = (e - bi * mn) / N, c = e - bi * mn - r * N;
    int64_t bl[2];
    cuda::elem_to_locs<0>(bi, batch, bl);
    const T* a = A + bl[0] + r * sam;
    const T* b = B + bl[1] + c * sbn;
    Acc acc = Acc(0);
    for (int64_t k = 0; k < K; ++k) {
      if constexpr (std::is_same_v<T, bool>) acc = acc || (a[k * sak] && b[k * sbk]);
      else acc = Acc(acc + cast_value<Acc>(a[k * sak]) * cast_value<Acc>(b[k * sbk]));
    }
    C[e] = cast_value<T>(acc);
  }
}

}  // namespace alloy

#define ALLOY_KERNEL_gemm_naive(T)                                                                      \
  extern "C" __global__ void gemm_naive(const T* A, const T* B, T* C, int64_t M, int64_t N, int64_t K,  \
                                        int64_t sam, int64_t sak, int64_t sbk, int64_t sbn,             \
                                        alloy::cuda::StridedLayout<2> batch, int64_t n_out) {           \
    alloy::gemm_naive<T>(A, B, C, M, N, K, sam, sak, sbk, sbn, batch, n_out);                           \
  }

// Hand-written C++ of two guide kernels' algorithms (examples/guide), the
// peer bench_guide.py cpu times a kernel split into regions against: the
// same arithmetic in the same order as the kernel, as plain loops over each
// threadgroup's threads, compiled with the JIT's own flags. extern "C" for ctypes.
#include <cmath>
#include <cstddef>

extern "C" {

// softmax_kernel with threadgroups of 32: each group's 32 values, the max
// over the SIMD group then over shmem[0..7], the same for the sum of exps.
void peer_softmax_tg32(const float* input, float* output, unsigned n) {
  float shmem[32], val[32], e[32];
  for (unsigned g0 = 0; g0 < n; g0 += 32) {
    for (unsigned l = 0; l < 32; ++l) {
      val[l] = g0 + l < n ? input[g0 + l] : -INFINITY;
      shmem[l] = val[l];
    }
    float row_max = val[0];
    for (unsigned l = 1; l < 32; ++l) row_max = std::fmax(row_max, val[l]);
    shmem[0] = row_max;
    for (unsigned i = 1; i < 8; ++i) shmem[0] = std::fmax(shmem[0], shmem[i]);
    row_max = shmem[0];
    for (unsigned l = 0; l < 32; ++l) e[l] = std::exp(val[l] - row_max);
    float row_sum = e[0];
    for (unsigned l = 1; l < 32; ++l) row_sum += e[l];
    shmem[0] = row_sum;
    for (unsigned i = 1; i < 8; ++i) shmem[0] += shmem[i];
    row_sum = shmem[0];
    for (unsigned l = 0; l < 32; ++l)
      if (g0 + l < n) output[g0 + l] = e[l] / row_sum;
  }
}

// matmul_tiled: 16x16 tiles of A and B in local memory, each output's sum
// over k in tile order.
void peer_matmul_tiled(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
  constexpr unsigned T = 16;
  float tileA[T * T], tileB[T * T], acc[T * T];
  for (unsigned by = 0; by < (M + T - 1) / T; ++by)
    for (unsigned bx = 0; bx < (N + T - 1) / T; ++bx) {
      for (unsigned i = 0; i < T * T; ++i) acc[i] = 0.0f;
      for (unsigned t = 0; t < (K + T - 1) / T; ++t) {
        for (unsigned ly = 0; ly < T; ++ly)
          for (unsigned lx = 0; lx < T; ++lx) {
            unsigned row = by * T + ly, col = bx * T + lx, ac = t * T + lx, br = t * T + ly;
            tileA[ly * T + lx] = (row < M && ac < K) ? A[row * K + ac] : 0.0f;
            tileB[ly * T + lx] = (br < K && col < N) ? B[br * N + col] : 0.0f;
          }
        for (unsigned ly = 0; ly < T; ++ly)
          for (unsigned lx = 0; lx < T; ++lx) {
            float a = acc[ly * T + lx];
            for (unsigned k = 0; k < T; ++k) a += tileA[ly * T + k] * tileB[k * T + lx];
            acc[ly * T + lx] = a;
          }
      }
      for (unsigned ly = 0; ly < T; ++ly)
        for (unsigned lx = 0; lx < T; ++lx) {
          unsigned row = by * T + ly, col = bx * T + lx;
          if (row < M && col < N) C[row * N + col] = acc[ly * T + lx];
        }
    }
}

}  // extern "C"

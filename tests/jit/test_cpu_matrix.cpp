// simdgroup_matrix<float, 8, 8> on the CPU: load, multiply-accumulate, store
// (exact fp32, checked against double), and the per-lane element layout that
// MLX's GEMMs read through thread_elements().
#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

TEST(CpuMatrix, MultiplyAccumulateAndLayout) {
  auto rng = seeded_rng("CpuMatrix.MultiplyAccumulate");
  const unsigned groups = 3;  // three independent products, one SIMD group each
  auto a = random_floats(rng, groups * 64), b = random_floats(rng, groups * 64), c = random_floats(rng, groups * 64);
  auto d = poisoned<float>(groups * 64), dt = poisoned<float>(groups * 64);
  auto elems = poisoned<float>(groups * 64);
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_mma(const T* a, const T* b, const T* c, T* d, T* dt, T* elems,
    uint3 threadgroup_position_in_grid, uint thread_index_in_simdgroup) {
  uint g = threadgroup_position_in_grid.x;
  simdgroup_matrix<T, 8, 8> A, B, C, D;
  simdgroup_load(A, a + g * 64, 8);
  simdgroup_load(B, b + g * 64, 8);
  simdgroup_load(C, c + g * 64);
  simdgroup_multiply_accumulate(D, A, B, C);
  simdgroup_store(D, d + g * 64, 8);
  simdgroup_float8x8 Bt;
  simdgroup_load(Bt, b + g * 64, 8, ulong2(0, 0), true);
  simdgroup_multiply(D, A, Bt);   // A * B^T
  simdgroup_store(D, dt + g * 64, 8);
  elems[g * 64 + thread_index_in_simdgroup * 2] = A.thread_elements()[0];
  elems[g * 64 + thread_index_in_simdgroup * 2 + 1] = A.thread_elements()[1];
}
)",
                                    R"(
  alloy_msl::cpu::run<true>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_mma<float>(static_cast<const float*>(L->buffers[0]), static_cast<const float*>(L->buffers[1]),
        static_cast<const float*>(L->buffers[2]), static_cast<float*>(L->buffers[3]), static_cast<float*>(L->buffers[4]),
        static_cast<float*>(L->buffers[5]), t.threadgroup_position_in_grid, t.thread_index_in_simdgroup);
  });)"));
  launch(*k, {a.data(), b.data(), c.data(), d.data(), dt.data(), elems.data()}, {32 * groups}, {32});
  for (unsigned g = 0; g < groups; ++g) {
    const float *A = &a[g * 64], *B = &b[g * 64], *C = &c[g * 64];
    for (int r = 0; r < 8; ++r)
      for (int col = 0; col < 8; ++col) {
        double ref = C[r * 8 + col], ref_t = 0, mag = std::fabs(ref), mag_t = 0;
        for (int kk = 0; kk < 8; ++kk) {
          ref += double(A[r * 8 + kk]) * B[kk * 8 + col];
          mag += std::fabs(double(A[r * 8 + kk]) * B[kk * 8 + col]);
          ref_t += double(A[r * 8 + kk]) * B[col * 8 + kk];
          mag_t += std::fabs(double(A[r * 8 + kk]) * B[col * 8 + kk]);
        }
        // fp32 accumulation of 9 terms: a few ulps of the magnitude (tf32 would miss by ~1e-3).
        EXPECT_NEAR(d[g * 64 + r * 8 + col], ref, 1e-6 * mag) << "group " << g << " (" << r << "," << col << ")";
        EXPECT_NEAR(dt[g * 64 + r * 8 + col], ref_t, 1e-6 * mag_t) << "group " << g << " (" << r << "," << col << ")";
      }
    for (unsigned lane = 0; lane < 32; ++lane) {
      unsigned qid = lane / 4, row = (qid & 4) + (lane / 2) % 4, col = (qid & 2) * 2 + (lane % 2) * 2;
      EXPECT_EQ(elems[g * 64 + lane * 2], A[row * 8 + col]) << "lane " << lane;
      EXPECT_EQ(elems[g * 64 + lane * 2 + 1], A[row * 8 + col + 1]) << "lane " << lane;
    }
  }
}

}  // namespace
}  // namespace alloy::jit::test

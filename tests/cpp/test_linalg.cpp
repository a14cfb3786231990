// The C++ face of mx.linalg on the CPU stream (LAPACK), checked by the
// defining identities, and the cuSOLVER loader's behaviour without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "alloy/alloy.h"
#include "backend/cuda/cusolver.h"

namespace {

using namespace alloy;

const Device kCpu(Device::cpu);

std::vector<float> values(const array& a) {
  array h = to_host(contiguous(a, false, kCpu));
  h.eval();
  return std::vector<float>(h.data<float>(), h.data<float>() + h.size());
}

// Two 3x3 matrices with strong diagonals.
array batch() {
  return array(std::vector<float>{4, 1, -2, 0.5, 5, 1, -1, 2, 6, 3, -1, 0, 1, 4, 2, 0.5, -1, 5}, {2, 3, 3});
}

TEST(Linalg, InverseTimesMatrixIsIdentity) {
  array a = batch();
  std::vector<float> p = values(matmul(a, linalg::inv(a, kCpu), kCpu));
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_NEAR(p[b * 9 + i * 3 + j], i == j ? 1.0f : 0.0f, 1e-5);
}

TEST(Linalg, CholeskyReconstructs) {
  array a = batch();
  array spd = add(matmul(a, swapaxes(a, -1, -2, kCpu), kCpu), eye(3, -1, 0, float32, kCpu), kCpu);
  array l = linalg::cholesky(spd, false, kCpu);
  std::vector<float> got = values(matmul(l, swapaxes(l, -1, -2, kCpu), kCpu)), want = values(spd);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * std::abs(want[i]) + 1e-4);
  std::vector<float> lv = values(l);
  EXPECT_EQ(lv[1], 0.0f);  // strictly upper part of a lower factor
}

TEST(Linalg, SvdReconstructsWideMatrix) {
  array a = reshape(batch(), {3, 6}, kCpu);
  auto usv = linalg::svd(a, true, kCpu);
  ASSERT_EQ(usv.size(), 3u);
  EXPECT_EQ(usv[0].shape(), (Shape{3, 3}));
  EXPECT_EQ(usv[2].shape(), (Shape{6, 6}));
  Shape lo{0, 0}, hi{3, 6}, step{1, 1};
  array vt3 = slice(usv[2], lo, hi, step, kCpu);
  array r = matmul(multiply(usv[0], expand_dims(usv[1], 0, kCpu), kCpu), vt3, kCpu);
  std::vector<float> got = values(r), want = values(a);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4);
}

TEST(Linalg, BadInputNamesTheOp) {
  try {
    linalg::inv(ones({2, 3}), kCpu);
    FAIL() << "inv accepted a 2x3 matrix";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[linalg::inv]"), std::string::npos);
  }
  EXPECT_THROW(linalg::cholesky(ones({3, 3}, int32), false, kCpu), std::invalid_argument);
}

TEST(Linalg, CusolverLoaderNeverThrows) {
  // Without a GPU stack it reports why; with one it binds every routine.
  bool ok = false;
  EXPECT_NO_THROW(ok = cuda::cusolver::available());
  if (!ok) EXPECT_FALSE(cuda::cusolver::unavailable_reason().empty());
}

}  // namespace

// The C++ FFT API on the default device: a unit impulse transforms to ones,
// rfftn/irfftn round-trip along chosen axes (odd last length), a shifted
// impulse gives the DFT's phase ramp, and bad arguments throw the exception
// types the Python API maps to ValueError / IndexError.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "alloy/fft.h"
#include "alloy/ops.h"
#include "alloy/transforms.h"

using namespace alloy;

TEST(FFT, ImpulseIsFlat) {
  std::vector<float> v(12, 0.0f);
  v[0] = 1.0f;
  array y = fft::fft(array(v, {12}));
  eval(y);
  ASSERT_EQ(y.dtype(), Dtype::complex64);
  const auto* p = to_host(y).data<std::complex<float>>();
  for (int k = 0; k < 12; ++k) EXPECT_NEAR(std::abs(p[k] - std::complex<float>(1.0f, 0.0f)), 0.0f, 1e-6f);
}

TEST(FFT, ShiftedImpulseIsPhaseRamp) {
  const int n = 7;  // prime
  std::vector<float> v(n, 0.0f);
  v[2] = 1.0f;
  array y = fft::fft(array(v, {n}));
  eval(y);
  const auto* p = to_host(y).data<std::complex<float>>();
  for (int k = 0; k < n; ++k) {
    const double angle = -2.0 * M_PI * 2 * k / n;
    EXPECT_NEAR(p[k].real(), std::cos(angle), 1e-5);
    EXPECT_NEAR(p[k].imag(), std::sin(angle), 1e-5);
  }
}

TEST(FFT, RealRoundTripAlongAxes) {
  Shape shape{3, 4, 5};
  std::vector<float> v(shape_size(shape));
  std::iota(v.begin(), v.end(), -7.0f);
  array x(v, shape);
  array spectrum = fft::rfftn(x, std::nullopt, std::vector<int>{2, 0});
  EXPECT_EQ(spectrum.shape(), (Shape{2, 4, 5}));
  array back = fft::irfftn(spectrum, std::vector<int>{5, 3}, std::vector<int>{2, 0});
  eval(back);
  ASSERT_EQ(back.shape(), shape);
  ASSERT_EQ(back.dtype(), Dtype::float32);
  array host = to_host(copy(back));
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(host.data<float>()[i], v[i], 1e-4f);
}

TEST(FFT, BadArgumentsThrow) {
  array x = ones({2, 3});
  EXPECT_THROW(fft::fft(x, 0), std::invalid_argument);
  EXPECT_THROW(fft::fft(x, std::nullopt, 2), std::out_of_range);
  EXPECT_THROW(fft::fftn(x, std::nullopt, std::vector<int>{0, 0}), std::invalid_argument);
  EXPECT_THROW(fft::fft(x, std::nullopt, -1, "sideways"), std::invalid_argument);
  EXPECT_THROW(fft::fftfreq(0), std::invalid_argument);
}

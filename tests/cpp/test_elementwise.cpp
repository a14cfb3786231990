// Promotion, a few elementwise/reduction/scan ops, error messages and
// derivatives, checked on fixed small inputs against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "alloy/ops.h"
#include "alloy/transforms.h"

using namespace alloy;

namespace {

template <typename T>
std::vector<T> values(array a) {
  a = contiguous(a);
  a.eval();
  array h = to_host(a);
  return std::vector<T>(h.data<T>(), h.data<T>() + h.size());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Promotion, MatchesMlxTable) {
  EXPECT_EQ(promote_types(int8, uint8), int16);
  EXPECT_EQ(promote_types(int32, uint32), int64);
  EXPECT_EQ(promote_types(uint64, int8), float32);
  EXPECT_EQ(promote_types(float16, bfloat16), float32);
  EXPECT_EQ(promote_types(int64, float16), float16);
  EXPECT_EQ(promote_types(bool_, int8), int8);
  EXPECT_EQ(promote_types(float32, complex64), complex64);
  EXPECT_EQ(add(array(1, int8), array(1, uint8)).dtype(), int16);
  EXPECT_EQ(divide(array(1), array(2)).dtype(), float32);
  EXPECT_EQ(exp(array(1, int64)).dtype(), float32);
  EXPECT_EQ(less(array(1.0f), array(2)).dtype(), bool_);
}

TEST(Binary, IntegerFloorDivideAndRemainderFollowPython) {
  array a({7, -7, 7, -7, 5, 0}, int32);
  array b({2, 2, -2, -2, 0, 3}, int32);
  EXPECT_EQ(values<int32_t>(floor_divide(a, b)), (std::vector<int32_t>{3, -4, -4, 3, 0, 0}));
  EXPECT_EQ(values<int32_t>(remainder(a, b)), (std::vector<int32_t>{1, 1, -1, -1, 0, 0}));
  // INT_MIN // -1 wraps instead of trapping.
  array m({std::numeric_limits<int32_t>::min()}, int32);
  EXPECT_EQ(values<int32_t>(floor_divide(m, array({-1}, int32)))[0], std::numeric_limits<int32_t>::min());
}

TEST(Binary, BroadcastsAndNamesShapesOnMismatch) {
  array a(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  array b({10.0f, 20.0f, 30.0f});
  EXPECT_EQ(values<float>(a + b), (std::vector<float>{11, 22, 33, 14, 25, 36}));
  std::string msg = error_of([&] { add(a, array({1.0f, 2.0f})); });
  EXPECT_NE(msg.find("[add]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(2,)"), std::string::npos) << msg;
}

TEST(Binary, BitwiseOnFloatsIsRejected) {
  std::string msg = error_of([] { bitwise_and(array(1.0f), array(2.0f)); });
  EXPECT_NE(msg.find("[bitwise_and]"), std::string::npos) << msg;
}

TEST(Binary, MaximumPropagatesNan) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto v = values<float>(maximum(array({nan, 1.0f, 3.0f}), array({0.0f, nan, 2.0f})));
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 3.0f);
}

TEST(Reduce, DtypesAndAxes) {
  array a(std::vector<int8_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  array s = sum(a, Axes{1});
  EXPECT_EQ(s.dtype(), int32);
  EXPECT_EQ(values<int32_t>(s), (std::vector<int32_t>{6, 15}));
  EXPECT_EQ(values<int32_t>(sum(a, Axes{0}, true)), (std::vector<int32_t>{5, 7, 9}));
  EXPECT_EQ(sum(a, Axes{0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(mean(a).dtype(), float32);
  EXPECT_FLOAT_EQ(mean(a).item<float>(), 3.5f);
  EXPECT_EQ(values<int8_t>(max(a, Axes{0})), (std::vector<int8_t>{4, 5, 6}));
  EXPECT_EQ(values<uint32_t>(argmax(a, 1)), (std::vector<uint32_t>{2, 2}));
}

TEST(Reduce, EmptyArrays) {
  array e(std::vector<float>{}, {0, 3});
  EXPECT_EQ(values<float>(sum(e, Axes{0})), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(values<float>(prod(e, Axes{0})), (std::vector<float>{1, 1, 1}));
  std::string msg = error_of([&] { max(e); });
  EXPECT_NE(msg.find("[max]"), std::string::npos) << msg;
}

TEST(Reduce, LongSumIsAccurate) {
  std::mt19937 gen(1234);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(1 << 20);
  double ref = 0;
  for (auto& x : v) {
    x = dist(gen);
    ref += x;
  }
  float got = sum(array(v, {static_cast<int>(v.size())})).item<float>();
  EXPECT_NEAR(got, ref, ref * 1e-5);
}

TEST(Scan, CumsumVariants) {
  array a({1.0f, 2.0f, 3.0f, 4.0f});
  EXPECT_EQ(values<float>(cumsum(a, 0)), (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(values<float>(cumsum(a, 0, true)), (std::vector<float>{10, 9, 7, 4}));
  EXPECT_EQ(values<float>(cumsum(a, 0, false, false)), (std::vector<float>{0, 1, 3, 6}));
  EXPECT_EQ(values<float>(cummax(array({1.0f, 3.0f, 2.0f, 5.0f}), 0)), (std::vector<float>{1, 3, 3, 5}));
}

TEST(Grad, UnaryBinaryAndReduce) {
  // d/dx sum(sin(x) * x) = cos(x) * x + sin(x)
  auto f = [](const std::vector<array>& in) { return std::vector<array>{sum(multiply(sin(in[0]), in[0]))}; };
  array x({0.5f, 1.0f, 2.0f});
  auto g = values<float>(grad(f)({x})[0]);
  for (int i = 0; i < 3; ++i) {
    float xv = std::vector<float>{0.5f, 1.0f, 2.0f}[i];
    EXPECT_NEAR(g[i], std::cos(xv) * xv + std::sin(xv), 1e-6);
  }
  // max routes the cotangent to the maximum.
  auto fm = [](const std::vector<array>& in) { return std::vector<array>{max(in[0])}; };
  EXPECT_EQ(values<float>(grad(fm)({array({1.0f, 5.0f, 2.0f})})[0]), (std::vector<float>{0, 1, 0}));
}

TEST(Grad, JvpMatchesDerivative) {
  auto f = [](const std::vector<array>& in) { return std::vector<array>{exp(in[0])}; };
  auto [out, tangents] = jvp(f, {array({0.0f, 1.0f})}, {array({1.0f, 2.0f})});
  auto t = values<float>(tangents[0]);
  EXPECT_NEAR(t[0], 1.0f, 1e-6);
  EXPECT_NEAR(t[1], 2.0f * std::exp(1.0f), 1e-5);
}

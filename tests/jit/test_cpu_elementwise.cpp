// Elementwise kernels on the loop path (run<false>): exp over float and half,
// and a strided input read through elem_to_loc.
#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

const char* kExpKernel = R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_myexp(const float* inp, float* out, uint3 thread_position_in_grid) {
        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
}
)";

TEST(CpuElementwise, ExpFloatMatchesDoubleReference) {
  auto rng = seeded_rng("CpuElementwise.ExpFloat");
  const size_t n = 100003;  // not a multiple of the threadgroup: the last group is partial
  auto in = random_floats(rng, n, -10.0f, 10.0f);
  auto out = poisoned<float>(n);
  auto k = compile(translation_unit(kExpKernel, R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_myexp<float>(static_cast<const float*>(L->buffers[0]), static_cast<float*>(L->buffers[1]),
                               t.thread_position_in_grid);
  });)"));
  launch(*k, {in.data(), out.data()}, {unsigned(n)}, {256});
  for (size_t i = 0; i < n; ++i) {
    double ref = std::exp(double(in[i]));
    ASSERT_NEAR(out[i], ref, 2e-7 * ref) << "i=" << i << " x=" << in[i];
  }
}

TEST(CpuElementwise, ExpHalfRoundsLikeHalf) {
  auto rng = seeded_rng("CpuElementwise.ExpHalf");
  const size_t n = 4099;
  auto inf = random_floats(rng, n, -4.0f, 4.0f);
  std::vector<_Float16> in(n), out(n, _Float16(-1.0f));
  for (size_t i = 0; i < n; ++i) in[i] = _Float16(inf[i]);
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_hexp(const float16_t* inp, float16_t* out, uint3 thread_position_in_grid) {
  uint elem = thread_position_in_grid.x;
  T tmp = inp[elem];
  out[elem] = metal::exp(tmp);
}
)",
                                    R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_hexp<half>(static_cast<const float16_t*>(L->buffers[0]), static_cast<float16_t*>(L->buffers[1]),
                             t.thread_position_in_grid);
  });)"));
  launch(*k, {in.data(), out.data()}, {unsigned(n)}, {128});
  for (size_t i = 0; i < n; ++i) {
    double ref = std::exp(double(float(in[i])));
    // exp computed in float, rounded once to half: within half an ulp of half (2^-11 relative).
    ASSERT_NEAR(float(out[i]), ref, ref * (1.0 / 2048) * 1.01) << "i=" << i;
  }
}

TEST(CpuElementwise, StridedInputThroughElemToLoc) {
  auto rng = seeded_rng("CpuElementwise.Strided");
  // A (6, 5, 7) view of a (12, 5, 14) array taking every other row and column.
  const int shape[3] = {6, 5, 7};
  const int64_t strides[3] = {2 * 5 * 14, 14, 2};
  auto base = random_floats(rng, 12 * 5 * 14, -3.0f, 3.0f);
  const size_t n = 6 * 5 * 7;
  auto out = poisoned<float>(n);
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_sexp(const float* inp, const int* inp_shape, const int64_t* inp_strides, int inp_ndim,
                                        float* out, uint3 thread_position_in_grid) {
  uint elem = thread_position_in_grid.x;
  uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
  T tmp = inp[loc];
  out[elem] = metal::exp(tmp);
}
)",
                                    R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_sexp<float>(static_cast<const float*>(L->buffers[0]), L->shapes[0], L->strides[0], L->ndims[0],
                              static_cast<float*>(L->buffers[1]), t.thread_position_in_grid);
  });)"));
  launch(*k, {base.data(), out.data()}, {unsigned(n)}, {64}, {shape}, {strides}, {3});
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 5; ++b)
      for (int c = 0; c < 7; ++c) {
        size_t elem = (a * 5 + b) * 7 + c;
        double ref = std::exp(double(base[a * strides[0] + b * strides[1] + c * strides[2]]));
        ASSERT_NEAR(out[elem], ref, 2e-7 * ref) << a << "," << b << "," << c;
      }
}

// Reports how long a small kernel takes to compile (fresh cache, so no hit).
TEST(CpuElementwise, SmallKernelCompileTime) {
  Cache fresh(test_cache_dir() / "compile-time");
  CompileOptions opts;
  auto t0 = std::chrono::steady_clock::now();
  auto k = compile(translation_unit(std::string(kExpKernel) + "// timing\n", R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_myexp<float>(static_cast<const float*>(L->buffers[0]), static_cast<float*>(L->buffers[1]),
                               t.thread_position_in_grid);
  });)"),
                   opts, &fresh);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[timing] small kernel compile (g++ -O2, cold cache): " << ms << " ms\n";
  EXPECT_EQ(fresh.stats().builds, 1u);
  EXPECT_LT(ms, 20000.0);  // only guards against a hang; the figure is reported above
}

}  // namespace
}  // namespace alloy::jit::test

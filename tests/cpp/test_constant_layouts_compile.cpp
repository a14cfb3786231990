// A metal_kernel body translated for CUDA with its inputs' layouts as
// constants (msl::KernelSpec::constant_layouts, the GPU backend's
// specialized builds, backend/cuda/specialize.h) keeps the generic build's
// parameters, reads the constants instead, and compiles with NVRTC for sm_90.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "fast/cuda_build.h"
#include "fast/cuda_plan.h"
#include "jit/nvrtc.h"
#include "seed_sources.h"

namespace alloy::fast {
namespace {

msl::KernelSpec seed_spec() {
  msl::KernelSpec s;
  s.name = "grid_sample";
  s.source = test::seed_grid_sample_body();
  s.inputs = {{"x", "float", false, false}, {"grid", "float", false, false}};
  s.outputs = {{"out", "float", false, false}};
  s.template_args = {{"T", msl::TemplateArg::Type, "float"}};
  return s;
}

TEST(ConstantLayoutsCompile, TheSeedsGridSampleReadsItsShapesAsConstants) {
  msl::KernelSpec generic = seed_spec();
  ASSERT_NE(generic.source.find("x_shape[1]"), std::string::npos) << "the seed's kernel body was not found";
  msl::KernelSpec special = generic;
  special.constant_layouts = {{{8, 64, 64, 32}, {131072, 2048, 32, 1}}, {{8, 256, 256, 2}, {131072, 512, 2, 1}}};
  const msl::TranslatedKernel g = msl::translate(generic, msl::Target::Cuda);
  const msl::TranslatedKernel t = msl::translate(special, msl::Target::Cuda);
  EXPECT_NE(t.source.find("__device__ constexpr int alloy_const_in0_shape[alloy_msl::cuda::kMaxKernelDims] = {8, 64, 64, 32};"), std::string::npos)
      << t.source;
  EXPECT_NE(t.source.find("__device__ constexpr int alloy_const_in1_shape[alloy_msl::cuda::kMaxKernelDims] = {8, 256, 256, 2};"), std::string::npos)
      << t.source;
  EXPECT_EQ(t.source.find("in0_shape.v"), std::string::npos) << t.source;
  EXPECT_NE(g.source.find("in0_shape.v"), std::string::npos) << g.source;
  // The same parameters, so the launch passes the same arguments.
  ASSERT_EQ(t.params.size(), g.params.size());
  for (size_t i = 0; i < t.params.size(); ++i) {
    EXPECT_EQ(t.params[i].kind, g.params[i].kind);
    EXPECT_EQ(t.params[i].index, g.params[i].index);
  }
  // A build of its own in the disk cache.
  EXPECT_NE(cuda_plan_key(special, "sm_90"), cuda_plan_key(generic, "sm_90"));
  special.constant_layouts[0].strides[3] = 2;
  EXPECT_NE(cuda_plan_key(special, "sm_90"), cuda_plan_key(seed_spec(), "sm_90"));
  if (!jit::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available: " << jit::nvrtc_unavailable_reason();
  const CudaBuild b = build_for_cuda(special, t, jit::with_arch_features("sm_90"), "[metal_kernel] kernel 'grid_sample'");
  EXPECT_TRUE(b.cubin && b.cubin->size() > 0);
}

TEST(ConstantLayoutsCompile, StridesAndNdimBecomeConstantsToo) {
  msl::KernelSpec s;
  s.name = "strided";
  s.source = R"(
      uint i = thread_position_in_grid.x;
      uint row = i / inp_shape[ndim_of_inp - 1];
      uint col = i % inp_shape[inp_ndim - 1];
      out[i] = inp[row * inp_strides[0] + col * inp_strides[1]];
  )";
  s.source.replace(s.source.find("ndim_of_inp"), 11, "inp_ndim");
  s.inputs = {{"inp", "float", false, false}};
  s.outputs = {{"out", "float", false, false}};
  s.constant_layouts = {{{3, 5}, {1, 3}}};
  const msl::TranslatedKernel t = msl::translate(s, msl::Target::Cuda);
  EXPECT_NE(t.source.find("__device__ constexpr long alloy_const_in0_strides[alloy_msl::cuda::kMaxKernelDims] = {1l, 3l};"), std::string::npos)
      << t.source;
  EXPECT_EQ(t.source.find("in0_strides.v"), std::string::npos) << t.source;
  if (!jit::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available: " << jit::nvrtc_unavailable_reason();
  const CudaBuild b = build_for_cuda(s, t, jit::with_arch_features("sm_90"), "[metal_kernel] kernel 'strided'");
  EXPECT_TRUE(b.cubin && b.cubin->size() > 0);
}

// alloy.mlx's builds clamp every input read to the input's last element
// (tolerate_input_reads); specialized, the clamp's limits are constants too,
// and the sizes the launch still passes arrive under another name.
TEST(ConstantLayoutsCompile, ToleratedReadsClampToConstantSizes) {
  msl::KernelSpec generic = seed_spec();
  generic.bounds_check = true;
  generic.tolerate_input_reads = true;
  msl::KernelSpec special = generic;
  special.constant_layouts = {{{8, 64, 64, 32}, {131072, 2048, 32, 1}, 1048576},
                              {{8, 256, 256, 2}, {131072, 512, 2, 1}, 1048576}};
  const msl::TranslatedKernel g = msl::translate(generic, msl::Target::Cuda);
  const msl::TranslatedKernel t = msl::translate(special, msl::Target::Cuda);
  EXPECT_NE(t.source.find("__device__ constexpr ::alloy_msl::InputSizes<2> alloy_bc_sizes = {{1048576ull, 1048576ull}};"),
            std::string::npos)
      << t.source;
  EXPECT_NE(t.source.find("::alloy_msl::InputSizes<2> alloy_bc_sizes_passed,"), std::string::npos) << t.source;
  EXPECT_NE(g.source.find("::alloy_msl::InputSizes<2> alloy_bc_sizes,"), std::string::npos) << g.source;
  EXPECT_EQ(g.source.find("alloy_bc_sizes_passed"), std::string::npos) << g.source;
  ASSERT_EQ(t.params.size(), g.params.size());
  // Another element count is another build.
  msl::KernelSpec other = special;
  other.constant_layouts[1].elements = 1048577;
  EXPECT_NE(cuda_plan_key(other, "sm_90"), cuda_plan_key(special, "sm_90"));
  if (!jit::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available: " << jit::nvrtc_unavailable_reason();
  const CudaBuild b = build_for_cuda(special, t, jit::with_arch_features("sm_90"), "[metal_kernel] kernel 'grid_sample'");
  EXPECT_TRUE(b.cubin && b.cubin->size() > 0);
}

}  // namespace
}  // namespace alloy::fast

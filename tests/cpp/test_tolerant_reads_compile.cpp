// A metal_kernel body translated for CUDA with its input reads tolerated
// (msl::KernelSpec::tolerate_input_reads, what alloy.mlx launches on MLX's
// CUDA backend) compiles with NVRTC for sm_90: no GPU needed, so CI sees the
// runtime's clamp path (runtime/metal_bounds.h) compile as the GPU does.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "fast/cuda_build.h"
#include "jit/nvrtc.h"
#include "seed_sources.h"

namespace alloy::fast {
namespace {

TEST(TolerantReadsCompile, TheSeedsGridSampleCompilesForSm90) {
  if (!jit::nvrtc_available()) GTEST_SKIP() << "NVRTC is not available: " << jit::nvrtc_unavailable_reason();
  msl::KernelSpec s;
  s.name = "grid_sample";
  s.source = test::seed_grid_sample_body();
  ASSERT_NE(s.source.find("I_nw = x["), std::string::npos) << "the seed's kernel body was not found";
  s.inputs = {{"x", "float", false, false}, {"grid", "float", false, false}};
  s.outputs = {{"out", "float", false, false}};
  s.template_args = {{"T", msl::TemplateArg::Type, "float"}};
  s.bounds_check = s.tolerate_input_reads = true;
  const msl::TranslatedKernel t = msl::translate(s, msl::Target::Cuda);
  EXPECT_NE(t.source.find("ALLOY_BOUNDS_INPUT_READS_ONLY"), std::string::npos);
  // The inputs' sizes alone as a parameter, and no report pointer: the
  // launcher passes one bounds argument (CustomKernelLaunch).
  EXPECT_NE(t.source.find("::alloy_msl::InputSizes<2> alloy_bc_sizes,"), std::string::npos) << t.source;
  EXPECT_EQ(t.source.find("::alloy_msl::BoundsReport* alloy_bc_report,"), std::string::npos) << t.source;
  const CudaBuild b = build_for_cuda(s, t, jit::with_arch_features("sm_90"), "[metal_kernel] kernel 'grid_sample'");
  EXPECT_TRUE(b.cubin && b.cubin->size() > 0);
  EXPECT_FALSE(b.entry.empty());
}

}  // namespace
}  // namespace alloy::fast

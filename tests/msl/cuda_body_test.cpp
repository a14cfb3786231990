// translate() of CUDA bodies (Dialect::Cuda, mx.fast.cuda_kernel): MLX's
// signature with CUDA types and the user's names, template values at the top
// of the body, the body untouched and mapped line for line.
#include <gtest/gtest.h>

#include <stdexcept>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

KernelSpec cuda_spec(std::string source, std::string header = "") {
  KernelSpec s = test::kernel(std::move(source), std::move(header), {param("inp", "float16_t"), param("scale", "float")},
                              {param("out", "bfloat16_t")});
  s.dialect = Dialect::Cuda;
  s.inputs[1].is_scalar = true;
  return s;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(CudaBody, SignatureHasCudaTypesUserNamesAndOnlyTheShapeInfoUsed) {
  KernelSpec s = cuda_spec("out[threadIdx.x] = inp[inp_strides[0] * threadIdx.x] * scale[0];\n");
  s.template_args = {{"T", TemplateArg::Type, "float16_t"}, {"N", TemplateArg::Int, "-3"},
                     {"B", TemplateArg::Bool, "1"}};
  TranslatedKernel k = translate(s, Target::Cuda);
  EXPECT_TRUE(contains(k.source, "const __half* __restrict__ inp,")) << k.source;
  EXPECT_TRUE(contains(k.source, "const __grid_constant__ alloy_msl::cuda::StridesArg inp_strides,"));
  EXPECT_FALSE(contains(k.source, "inp_shape"));
  EXPECT_FALSE(contains(k.source, "inp_ndim"));
  EXPECT_TRUE(contains(k.source, "const float* __restrict__ scale,"));  // 0-d: a pointer, as in MLX
  EXPECT_TRUE(contains(k.source, "__nv_bfloat16* __restrict__ out)"));
  EXPECT_TRUE(contains(k.source, "using T = __half;"));
  EXPECT_TRUE(contains(k.source, "constexpr int N = -3;"));
  EXPECT_TRUE(contains(k.source, "constexpr bool B = true;"));
  EXPECT_TRUE(contains(k.source, "#define ALLOY_CUDA_BODY_FP16 1"));
  EXPECT_TRUE(contains(k.source, "#define ALLOY_CUDA_BODY_BF16 1"));
  EXPECT_FALSE(contains(k.source, "COOPERATIVE_GROUPS"));
  EXPECT_TRUE(k.analysis.attributes.empty());
  // The glue parameters, in order, for the launcher.
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[0].kind, GlueParam::Buffer);
  EXPECT_EQ(k.params[0].name, "inp");
  EXPECT_EQ(k.params[1].kind, GlueParam::Strides);
  EXPECT_EQ(k.params[2].kind, GlueParam::Scalar);
  EXPECT_EQ(k.params[3].kind, GlueParam::Buffer);
  EXPECT_EQ(k.params[3].index, 2);
}

TEST(CudaBody, BodyIsVerbatimAndMappedToTheUsersLines) {
  std::string body = "int i = threadIdx.x;\n  // Metal words stay: threadgroup simd_sum\nout[i] = inp[i];\n";
  TranslatedKernel k = translate(cuda_spec(body, "__device__ float twice(float x) { return 2 * x; }\n"),
                                 Target::Cuda);
  EXPECT_TRUE(contains(k.source, body)) << k.source;
  int g = k.lines.generated_line(Origin::Source, 3);
  ASSERT_GT(g, 0);
  EXPECT_EQ(k.lines.lines[g - 1].line, 3);
  EXPECT_EQ(k.lines.user_column(g, 5), 5);
  EXPECT_GT(k.lines.generated_line(Origin::Header, 1), 0);
}

TEST(CudaBody, CooperativeGroupsOnlyWhenNamed) {
  EXPECT_TRUE(contains(translate(cuda_spec("auto g = cg::this_thread_block(); out[0] = inp[0];"), Target::Cuda).source,
                       "ALLOY_CUDA_BODY_COOPERATIVE_GROUPS"));
  EXPECT_FALSE(contains(translate(cuda_spec("int cgx = 0; out[cgx] = inp[0];"), Target::Cuda).source,
                        "ALLOY_CUDA_BODY_COOPERATIVE_GROUPS"));
}

TEST(CudaBody, OtherTargetsAreRefused) {
  EXPECT_THROW(translate(cuda_spec("out[0] = inp[0];"), Target::Cpp), std::invalid_argument);
  EXPECT_THROW(translate(cuda_spec("out[0] = inp[0];"), Target::Metal), std::invalid_argument);
}

TEST(CudaBody, TypeNames) {
  EXPECT_EQ(cuda_type_name("float16_t"), "__half");
  EXPECT_EQ(cuda_type_name("bfloat16_t"), "__nv_bfloat16");
  EXPECT_EQ(cuda_type_name("complex64_t"), "cuFloatComplex");
  EXPECT_EQ(cuda_type_name("int64_t"), "int64_t");
}

}  // namespace
}  // namespace alloy::msl

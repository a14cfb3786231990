// The Metal form (verbose=True): MLX's exact shape.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// Seed 002 prints this for myexp (template T=float32, float16 input). The
// seed's MLX named the kernel `custom_kernel_myexp_float`; MLX since appends
// the input and output dtypes so two dtypes never share a name.
const char* kSeedVerbose = R"(template <typename T>
[[kernel]] void custom_kernel_myexp_float(
  const device float16_t* inp [[buffer(0)]],
  device float16_t* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {

        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    
}

template [[host_name("custom_kernel_myexp_float")]] [[kernel]] decltype(custom_kernel_myexp_float<float>) custom_kernel_myexp_float<float>;
)";

TEST(MslMetalForm, SeedMyexpMatchesTheSeedText) {
  TranslatedKernel k = translate(test::myexp(), Target::Metal);
  EXPECT_EQ(k.kernel_name, "custom_kernel_myexp_float_float16_t_float16_t");
  EXPECT_EQ(k.entry, k.kernel_name);
  EXPECT_EQ(k.source, replace_all(kSeedVerbose, "custom_kernel_myexp_float", k.kernel_name));
}

TEST(MslMetalForm, KernelNamesTellDtypesApart) {
  EXPECT_NE(kernel_name(test::myexp("float16_t")), kernel_name(test::myexp("float")));
  EXPECT_EQ(kernel_name(test::myexp("bfloat16_t", "bfloat16_t")),
            "custom_kernel_myexp_bfloat16_t_bfloat16_t_bfloat16_t");
  KernelSpec s = test::header_helpers();  // T=float, K=-3, USE_BIAS=true; scalar + constant inputs
  EXPECT_EQ(kernel_name(s), "custom_kernel_header_helpers_float_n3_1_float_floats_floatc_float");
  s.template_args.clear();
  s.inputs.resize(1);
  EXPECT_EQ(kernel_name(s), "custom_kernel_header_helpers_float_float");
}

TEST(MslMetalForm, ParameterKinds) {
  KernelSpec s;
  s.name = "kinds";
  ParamSpec scale = param("scale", "float");
  scale.is_scalar = true;
  ParamSpec lut = param("lut", "int");
  lut.in_constant = true;
  s.inputs = {param("a", "bfloat16_t"), scale, lut};
  s.outputs = {param("o1", "float"), param("o2", "int")};
  s.template_args = {{"N", TemplateArg::Int, "4"}, {"B", TemplateArg::Bool, "false"}};
  s.atomic_outputs = true;
  // scale_shape is never passed for a 0-d input, as in MLX.
  s.source = "  uint i = thread_index_in_simdgroup + a_ndim + a_strides[0] + scale_shape[0];\n";
  s.header = "#include <metal_stdlib>\n";
  TranslatedKernel k = translate(s, Target::Metal);
  EXPECT_EQ(k.source, R"(#include <metal_stdlib>
template <int N, bool B>
[[kernel]] void custom_kernel_kinds_4_0_bfloat16_t_floats_intc_float_int(
  const device bfloat16_t* a [[buffer(0)]],
  const constant int64_t* a_strides [[buffer(1)]],
  const constant int& a_ndim [[buffer(2)]],
  const constant float& scale [[buffer(3)]],
  const constant int* lut [[buffer(4)]],
  device atomic<float>* o1 [[buffer(5)]],
  device atomic<int>* o2 [[buffer(6)]],
  uint thread_index_in_simdgroup [[thread_index_in_simdgroup]]) {
  uint i = thread_index_in_simdgroup + a_ndim + a_strides[0] + scale_shape[0];

}

template [[host_name("custom_kernel_kinds_4_0_bfloat16_t_floats_intc_float_int")]] [[kernel]] decltype(custom_kernel_kinds_4_0_bfloat16_t_floats_intc_float_int<4, 0>) custom_kernel_kinds_4_0_bfloat16_t_floats_intc_float_int<4, 0>;
)");
  // The buffer order is what the launcher binds.
  ASSERT_EQ(k.params.size(), 7u);
  EXPECT_EQ(k.params[1].kind, GlueParam::Strides);
  EXPECT_EQ(k.params[3].kind, GlueParam::Scalar);
  EXPECT_EQ(k.params[3].index, 1);
  EXPECT_EQ(k.params[6].kind, GlueParam::Buffer);
  EXPECT_EQ(k.params[6].index, 4);  // outputs count after the 3 inputs
}

TEST(MslMetalForm, NoTemplateNoAttributes) {
  KernelSpec s;
  s.name = "plain";
  s.inputs = {param("a", "float")};
  s.outputs = {param("b", "float")};
  s.source = "b[0] = a[0];";
  EXPECT_EQ(translate(s, Target::Metal).source, R"([[kernel]] void custom_kernel_plain_float_float(
  const device float* a [[buffer(0)]],
  device float* b [[buffer(1)]]) {
b[0] = a[0];
}
)");
}

TEST(MslMetalForm, LineMapFindsBodyLines) {
  TranslatedKernel k = translate(test::myexp(), Target::Metal);
  int g = k.lines.generated_line(Origin::Source, 3);
  ASSERT_GT(g, 0);
  std::string src = k.source;
  std::size_t start = 0;
  for (int l = 1; l < g; ++l) start = src.find('\n', start) + 1;
  EXPECT_EQ(src.substr(start, src.find('\n', start) - start), "        T tmp = inp[elem];");
}

}  // namespace
}  // namespace alloy::msl

// runtime_features(): which optional parts of the runtime a kernel's tokens
// need. Missing a part breaks the compile of a kernel that uses it; an extra
// part only costs compile time, so the checks are mostly "needed => on".
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "msl/features.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

RuntimeFeatures features_of(std::string source, std::string header = "", std::string type = "float") {
  KernelSpec s;
  s.name = "k";
  s.inputs = {param("inp", type)};
  s.outputs = {param("out", "float")};
  s.source = std::move(source);
  s.header = std::move(header);
  return runtime_features(s, analyze(s), lex_kernel(s));
}

TEST(MslFeatures, PlainKernelNeedsOnlyTheCore) {
  RuntimeFeatures f = features_of("uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f;");
  EXPECT_FALSE(f.half_ops || f.math || f.math_extra || f.fast_math || f.simd || f.atomics || f.matrix ||
               f.mlx_utils);
}

// Metal 4 tensors: by the header's include or the API's names, even when an
// unknown include puts every other part in; never by a kernel's own `tensor`.
TEST(MslFeatures, TensorPartByIncludeOrNames) {
  EXPECT_TRUE(features_of("out[0] = 1;", "#include <metal_tensor>\n").tensor);
  EXPECT_TRUE(
      features_of("out[0] = 1;", "#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>\n").tensor);
  EXPECT_TRUE(features_of("tensor<device float, dextents<int, 1>> t(out, dextents<int, 1>(4)); t[0] = 1;").tensor);
  EXPECT_TRUE(features_of("out[0] = 1;", "#include \"other.h\"\nusing namespace mpp::tensor_ops;\n").tensor);
  EXPECT_FALSE(features_of("float tensor = inp[0]; out[0] = tensor;").tensor);
  EXPECT_FALSE(features_of("out[0] = 1;", "#include \"other.h\"\n").tensor);
}

TEST(MslFeatures, MathNamesInBodyHeaderAndMacros) {
  EXPECT_TRUE(features_of("out[0] = floor(inp[0]);").math);
  EXPECT_TRUE(features_of("out[0] = metal::precise::sqrt(inp[0]);").math);
  EXPECT_TRUE(features_of("out[0] = f(inp[0]);", "float f(float x) { return max(x, 0.0f); }").math);
  EXPECT_TRUE(features_of("out[0] = SQ(inp[0]);", "#define SQ(x) pow(x, 2.0f)\n").math);
  RuntimeFeatures fast = features_of("out[0] = fast::exp(inp[0]);");
  EXPECT_TRUE(fast.fast_math && fast.math);
  RuntimeFeatures extra = features_of("out[0] = isnan(inp[0]) ? 0.0f : inp[0];");
  EXPECT_TRUE(extra.math_extra && extra.math);
  // A member access named like a function is not the function.
  EXPECT_FALSE(features_of("out[0] = s.floor + p->sqrt;").math);
}

TEST(MslFeatures, HalfFromNamesLiteralsAndTypes) {
  EXPECT_TRUE(features_of("half h = inp[0]; out[0] = h;").half_ops);
  EXPECT_TRUE(features_of("out[0] = inp[0] * 1.5h;").half_ops);
  EXPECT_TRUE(features_of("out[0] = HALF_MAX;").half_ops);
  EXPECT_TRUE(features_of("out[0] = M_PI_H;").half_ops);
  EXPECT_TRUE(features_of("out[0] = inp[0];", "", "float16_t").half_ops);
  EXPECT_TRUE(features_of("packed_half3 v; out[0] = v.x;").half_ops);
  KernelSpec s;
  s.name = "k";
  s.outputs = {param("out", "float")};
  s.source = "out[0] = T(1);";
  s.template_args = {{"T", TemplateArg::Type, "float16_t"}};
  EXPECT_TRUE(runtime_features(s, analyze(s), lex_kernel(s)).half_ops);
}

TEST(MslFeatures, SyncPartsAndTheirDependencies) {
  RuntimeFeatures simd = features_of("out[0] = simd_sum(inp[0]);");
  EXPECT_TRUE(simd.simd && simd.math && simd.half_ops);
  EXPECT_FALSE(simd.atomics || simd.matrix);
  RuntimeFeatures atom = features_of("atomic_fetch_add_explicit((device atomic_float*)out, 1.0f, memory_order_relaxed);");
  EXPECT_TRUE(atom.atomics && atom.math);
  RuntimeFeatures mat = features_of("simdgroup_float8x8 m; out[0] = inp[0];");
  EXPECT_TRUE(mat.matrix && mat.simd);
  // A barrier alone and the SIMD attributes are in the core.
  RuntimeFeatures bar = features_of(
      "threadgroup_barrier(mem_flags::mem_threadgroup); out[simdgroup_index_in_threadgroup] = inp[0];");
  EXPECT_FALSE(bar.simd || bar.matrix || bar.atomics);
  KernelSpec s;
  s.name = "k";
  s.outputs = {param("out", "float")};
  s.source = "out[0] = 1;";
  s.atomic_outputs = true;
  EXPECT_TRUE(runtime_features(s, analyze(s), lex_kernel(s)).atomics);
}

TEST(MslFeatures, MatrixLayoutIsFreeOnlyWhenNoLaneElementsAreNamed) {
  const std::string mma = "#define ALLOY_MSL_MATRIX_MMA_LAYOUT 1\n";
  RuntimeFeatures plain = features_of(
      "simdgroup_half8x8 a, b; simdgroup_float8x8 c; simdgroup_multiply_accumulate(c, a, b, c); out[0] = inp[0];");
  EXPECT_TRUE(plain.matrix && !plain.matrix_elements);
  EXPECT_NE(feature_defines(plain).find(mma), std::string::npos);
  // thread_elements() (a member access) pins Apple's element-to-lane layout.
  RuntimeFeatures named = features_of("simdgroup_float8x8 c; out[0] = c.thread_elements()[0];");
  EXPECT_TRUE(named.matrix && named.matrix_elements);
  EXPECT_EQ(feature_defines(named).find(mma), std::string::npos);
  // Code the scan cannot see might name them too.
  RuntimeFeatures unseen = features_of("simdgroup_float8x8 c; out[0] = inp[0];", "#include \"gemm.h\"\n");
  EXPECT_EQ(feature_defines(unseen).find(mma), std::string::npos);
  // No matrices, no layout.
  EXPECT_EQ(feature_defines(features_of("out[0] = inp[0];")).find(mma), std::string::npos);
}

TEST(MslFeatures, MlxUtils) {
  EXPECT_TRUE(features_of("out[0] = inp[elem_to_loc(0, inp_shape, inp_strides, inp_ndim)];").mlx_utils);
  EXPECT_TRUE(features_of("out[0] = ceildiv(3, 2);").mlx_utils);
  EXPECT_TRUE(features_of("out[0] = Limits<float>::max;").mlx_utils);
  EXPECT_FALSE(features_of("out[0] = inp[0];").mlx_utils);
}

TEST(MslFeatures, UnclearCodeGetsEverything) {
  RuntimeFeatures pasted = features_of("out[0] = CALL(floor)(inp[0]);", "#define CALL(f) f##f\n");
  EXPECT_TRUE(pasted.math && pasted.simd && pasted.atomics && pasted.matrix && pasted.mlx_utils && pasted.half_ops);
  RuntimeFeatures included = features_of("out[0] = helper(inp[0]);", "#include \"my_helpers.h\"\n");
  EXPECT_TRUE(included.math && included.simd && included.mlx_utils);
  // The Metal standard headers are the runtime itself: no reason to include all.
  EXPECT_FALSE(features_of("out[0] = inp[0];", "#include <metal_stdlib>\n").math);
}

TEST(MslFeatures, DefinesNameTheParts) {
  RuntimeFeatures f;
  EXPECT_EQ(feature_defines(f), "#define ALLOY_MSL_SELECT 1\n");
  f.math = f.mlx_utils = true;
  EXPECT_EQ(feature_defines(f), "#define ALLOY_MSL_SELECT 1\n#define ALLOY_MSL_USE_MATH 1\n"
                                "#define ALLOY_MSL_USE_MLX_UTILS 1\n");
}

}  // namespace
}  // namespace alloy::msl

// translate() to the C++ targets: each rule of docs/design/msl.md on small
// bodies, the kernel function's parameters, the glue and the line map.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "alloy/msl/translate.h"
#include "msl/writer.h"
#include "msl/lexer.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

KernelSpec spec(std::string source, std::string header = "") { return test::kernel(std::move(source), std::move(header)); }

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The generated line that holds user line `line` of `origin`.
std::string generated_text(const TranslatedKernel& k, Origin origin, int line) {
  int g = k.lines.generated_line(origin, line);
  if (g == 0) return "<no such line>";
  std::size_t start = 0;
  for (int l = 1; l < g; ++l) start = k.source.find('\n', start) + 1;
  return k.source.substr(start, k.source.find('\n', start) - start);
}

std::string body_line(const std::string& source, int line = 1, std::string header = "",
                      Target t = Target::Cpp) {
  return generated_text(translate(spec(source, std::move(header)), t), Origin::Source, line);
}

std::string header_line(const std::string& header, int line = 1) {
  return generated_text(translate(spec("out[0] = 0;", header), Target::Cpp), Origin::Header,
                        line);
}

TEST(MslTranslate, AddressSpacesInTypesAreDropped) {
  EXPECT_EQ(body_line("device float* p = (device float*)out; thread float& r = p[0];"),
            "float* p = (float*)out; float& r = p[0];");
  // Constant memory is read-only: it stays const.
  EXPECT_EQ(body_line("constant float* c = (constant float*)inp; const constant float* d = c;"),
            "const float* c = (const float*)inp; const float* d = c;");
  EXPECT_EQ(header_line("inline float f(constant float& s, const device float* p, "
                        "constant float const* q) { return s; }"),
            "inline float f(const float& s, const float* p, float const* q) { return s; }");
}

// Metal 4 tensors: address spaces inside template arguments go like any
// other, and a subscript with several indices becomes one C++20 can call.
TEST(MslTranslate, TensorTypesAndMultiIndexSubscripts) {
  EXPECT_EQ(body_line("tensor<device half, dextents<int, 2>> t(p, dextents<int, 2>(4, 4)); "
                      "tensor<threadgroup float, extents<int, 8, 8>, tensor_inline> s(q, extents<int, 8, 8>());"),
            "tensor<half, dextents<int, 2>> t(p, dextents<int, 2>(4, 4)); "
            "tensor<float, extents<int, 8, 8>, tensor_inline> s(q, extents<int, 8, 8>());");
  EXPECT_EQ(body_line("t[i, j + 1] = u[f(a, b), g[c, d]];"),
            "t[ ::alloy_msl::subscript(i, j + 1)] = "
            "u[ ::alloy_msl::subscript(f(a, b), g[ ::alloy_msl::subscript(c, d)])];");
  // One index, a lambda's captures and structured bindings stay.
  EXPECT_EQ(body_line("x[f(a, b)] = 1; auto l = [a, b](int k) { return k; }; auto [p, q] = pair;"),
            "x[f(a, b)] = 1; auto l = [a, b](int k) { return k; }; auto [p, q] = pair;");
}

// MSL has no double: an unsuffixed floating literal is a float; integers,
// suffixed floats and half literals (decimal or hex) are as Metal reads them.
TEST(MslTranslate, FloatingLiteralsAreFloats) {
  EXPECT_EQ(body_line("float a = x * 0.3 + 1e-8 + 2. + .5 + 0x1.8p1 + 3 + 0x1f + 0.5f + 1.5h + 0x1.8p1h;"),
            "float a = x * 0.3f + 1e-8f + 2.f + .5f + 0x1.8p1f + 3 + 0x1f + 0.5f + half(1.5) + half(0x1.8p1);");
  // `#define` bodies are code; `#if` lines are the preprocessor's.
  EXPECT_EQ(body_line("#define EPS 1e-6"), "#define EPS 1e-6f");
  // A conditional's arm written right after its `:`.
  EXPECT_EQ(body_line("float y = c?1:x;"),
            "float y = c? ::alloy_msl::cond_lit<decltype((x))>(1): ::alloy_msl::cond_arm<decltype(1)>(x);");
}

// Metal's char is int8_t; a string (`constant char*`) stays char.
TEST(MslTranslate, CharIsSignedChar) {
  EXPECT_EQ(header_line("inline int f(const device char* p, char c, unsigned char u, signed char s, "
                        "constant char* name) { return p[0] + c; }"),
            "inline int f(const int8_t* p, int8_t c, unsigned char u, signed char s, "
            "const char* name) { return p[0] + c; }");
  EXPECT_EQ(body_line("char c = char(x);"), "int8_t c = int8_t(x);");
}

// `.value` of a generic lambda parameter in a template argument (MLX's
// steel NAX tiles) is the static member, spelled so NVRTC takes it through a
// reference capture; a call's argument or another object's member stays.
TEST(MslTranslate, StaticValueOfGenericLambdaParameters) {
  EXPECT_EQ(header_line("template <class F> void each(F f) { f([&](auto r) { return g<r.value, k.value>() + "
                        "h(x, r.value, y) + q<(r.value > 1)>(); }); }"),
            "template <class F> void each(F f) { f([&](auto r) { return "
            "g<::metal::remove_reference_t<decltype(r)>::value, k.value>() + h(x, r.value, y) + "
            "q<(r.value > 1)>(); }); }");
}

TEST(MslTranslate, ThreadgroupStorageVersusThreadgroupTypes) {
  EXPECT_EQ(body_line("threadgroup float buf[32]; threadgroup vec<float, 4> v[2][3];"),
            "ALLOY_THREADGROUP float buf[32]; ALLOY_THREADGROUP vec<float, 4> v[2][3];");
  EXPECT_EQ(body_line("  threadgroup float* p = buf; auto q = (threadgroup float*)p;"),
            "  float* p = buf; auto q = (float*)p;");
  EXPECT_EQ(body_line("threadgroup atomic<int> count;"), "ALLOY_THREADGROUP atomic<int> count;");
  EXPECT_EQ(header_line("inline void f(threadgroup float* buf) {"
                        " threadgroup float local[4]; }"),
            "inline void f(float* buf) { ALLOY_THREADGROUP float local[4]; }");
  // Inside a macro body, like in code.
  EXPECT_EQ(body_line("#define DECL threadgroup float tg[32];"),
            "#define DECL ALLOY_THREADGROUP float tg[32];");
}

TEST(MslTranslate, ProgramScopeConstantsInTheHeader) {
  EXPECT_EQ(header_line("constant float kScale = 2.0f;"), "ALLOY_PROGRAM_CONSTANT float kScale = 2.0f;");
  // The macro carries its own constness: const/constexpr among the specifiers go.
  EXPECT_EQ(header_line("constexpr constant int kTaps[3] = {1, 2, 1};"),
            "ALLOY_PROGRAM_CONSTANT int kTaps[3] = {1, 2, 1};");
  EXPECT_EQ(header_line("static const constant float a = 1, *const p = nullptr;"),
            "static ALLOY_PROGRAM_CONSTANT float a = 1, *const p = nullptr;");
  EXPECT_EQ(header_line("namespace a::b { constant int N = 4; }"),
            "namespace a::b { ALLOY_PROGRAM_CONSTANT int N = 4; }");
  // Not at program scope: in a function, a struct, a parameter list.
  EXPECT_EQ(header_line("inline int f() { constant int M = 2; return M; }"),
            "inline int f() { const int M = 2; return M; }");
  EXPECT_EQ(header_line("inline int g(constant int* p) { return p[0]; }"),
            "inline int g(const int* p) { return p[0]; }");
  // In the body everything is function scope.
  EXPECT_EQ(body_line("constant float w[2] = {1, 2};"), "const float w[2] = {1, 2};");
}

TEST(MslTranslate, HalfLiterals) {
  EXPECT_EQ(body_line("half a = 1.0h + 0.5H * .25h - 1e-3h + 2h; float f = 1.0f; int x = 0x1h;"),
            "half a = half(1.0) + half(0.5) * half(.25) - half(1e-3) + half(2); float f = 1.0f; "
            "int x = 0x1h;");
}

TEST(MslTranslate, ClangLoopPragmasBecomeTheTargetsUnrolling) {
  const std::string src =
      "#pragma clang loop unroll(full)\nfor (int i = 0; i < 4; ++i) out[i] = 0;\n"
      "#pragma clang loop unroll_count(4)\nfor (int i = 0; i < 8; ++i) out[i] = 1;\n"
      "#pragma  clang loop unroll(disable)\nfor (int i = 0; i < 8; ++i) out[i] = 2;\n"
      "#pragma clang loop vectorize(enable)\nfor (int i = 0; i < 8; ++i) out[i] = 3;\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    EXPECT_EQ(body_line(src, 1, "", t), "ALLOY_LOOP_UNROLL");
    EXPECT_EQ(body_line(src, 3, "", t), "ALLOY_LOOP_UNROLL_BY(4)");
    EXPECT_EQ(body_line(src, 5, "", t), "ALLOY_LOOP_UNROLL_BY(1)");
    EXPECT_EQ(body_line(src, 7, "", t), "#pragma clang loop vectorize(enable)");  // not unrolling: as written
  }
}

TEST(MslTranslate, CudaLaunchBoundOnTheEntryPoint) {
  KernelSpec s = spec("out[0] = 0;");
  EXPECT_FALSE(contains(translate(s, Target::Cuda).source, "__launch_bounds__"));
  s.cuda_launch_bound = 1024;
  EXPECT_TRUE(contains(translate(s, Target::Cuda).source, "__global__ void __launch_bounds__(1024) alloy_kernel_main("));
  EXPECT_FALSE(contains(translate(s, Target::Cpp).source, "__launch_bounds__"));
}

TEST(MslTranslate, ConditionalsWithOneLiteralArm) {
  // Both arms get the type Metal's rules give: the other arm converted, the
  // literal through cond_lit (a half or bfloat arm converts to and from an
  // integer implicitly; a pointer arm keeps a null pointer).
  EXPECT_EQ(body_line("float y = c ? x : 0.5f;"),
            "float y = c ? ::alloy_msl::cond_arm<decltype(0.5f)>(x) : "
            "::alloy_msl::cond_lit<decltype((x))>(0.5f);");
  EXPECT_EQ(body_line("float y = c ? -1 : v.xy.x;"),
            "float y = c ? ::alloy_msl::cond_lit<decltype((v . template swizzle<0,1>() . x))>(-1) : "
            "::alloy_msl::cond_arm<decltype(-1)>(v.template swizzle<0,1>().x);");
  EXPECT_EQ(body_line("y = f(c ? 1.0h : a[i], 2);"),
            "y = f(c ? ::alloy_msl::cond_lit<decltype((a [ i ]))>(half(1.0)) : "
            "::alloy_msl::cond_arm<decltype(half(1.0))>(a[i]), 2);");
  // Nested: the inner conditional is the outer one's third arm; the outer
  // one's copy of it for decltype is a stand-in of its type.
  EXPECT_EQ(body_line("y = a ? 0 : b ? x : 1;"),
            "y = a ? ::alloy_msl::cond_lit<decltype((::alloy_msl::cond_value<::alloy_msl::cond_lit_result_t<"
            "decltype((x)), decltype(1)>>()))>(0) : ::alloy_msl::cond_arm<decltype(0)>(b ? "
            "::alloy_msl::cond_arm<decltype(1)>(x) : ::alloy_msl::cond_lit<decltype((x))>(1));");
  // An arm a copy would not repeat (a lambda): the literal as written.
  EXPECT_EQ(body_line("y = c ? [&] { return x; }() : 0;"),
            "y = c ? ::alloy_msl::cond_arm<decltype(0)>([&] { return x; }()) : 0;");
  // Two literal arms, or an end that tokens cannot tell: as written.
  EXPECT_EQ(body_line("w = c ? 1 : 2;"), "w = c ? 1 : 2;");
  EXPECT_EQ(body_line("V<c ? 0 : N> v;"), "V<c ? 0 : N> v;");
}

TEST(MslTranslate, ConditionalsWithNoLiteralArm) {
  // Each arm cast to cond_t of both arms' types: Metal's common type where
  // both are scalars of two types, else the arm's own (lvalues kept).
  EXPECT_EQ(body_line("y = c ? x : z;"),
            "y = c ? static_cast< ::alloy_msl::cond_t<decltype((x)), decltype((z))>>(x) : "
            "static_cast< ::alloy_msl::cond_t<decltype((z)), decltype((x))>>(z);");
  // Nested in the third arm, behind a condition of several tokens: the
  // stand-in replaces the whole inner conditional, its condition included.
  EXPECT_EQ(body_line("y = c ? x : p + 1 < q ? u : w;"),
            "y = c ? static_cast< ::alloy_msl::cond_t<decltype((x)), decltype((::alloy_msl::cond_value<"
            "::alloy_msl::cond_result_t<decltype((u)), decltype((w))>>()))>>(x) : "
            "static_cast< ::alloy_msl::cond_t<decltype((::alloy_msl::cond_value<::alloy_msl::cond_result_t<"
            "decltype((u)), decltype((w))>>())), decltype((x))>>(p + 1 < q ? "
            "static_cast< ::alloy_msl::cond_t<decltype((u)), decltype((w))>>(u) : "
            "static_cast< ::alloy_msl::cond_t<decltype((w)), decltype((u))>>(w));");
}

TEST(MslTranslate, SpecializationsThatDifferOnlyByAddressSpace) {
  // Once address spaces are dropped, the threadgroup one repeats the device
  // one and is left out; `constant` stays apart as `const`.
  KernelSpec s = spec("out[0] = 0;",
                      "template <class T> struct pe {};\n"
                      "template <class T> struct pe<device T*> { using type = T; };\n"
                      "template <class T> struct pe<threadgroup T*> { using type = T; };\n"
                      "template <class T> struct pe<constant T*> { using type = T; };\n");
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(generated_text(k, Origin::Header, 2), "template <class T> struct pe<T*> { using type = T; };");
  EXPECT_EQ(generated_text(k, Origin::Header, 3), "");
  EXPECT_EQ(generated_text(k, Origin::Header, 4), "template <class T> struct pe<const T*> { using type = T; };");
}

TEST(MslTranslate, MlxIncludesResolveOrNameTheLine) {
  // No mlx package here: the include line is quoted. (The headers of an
  // installed one are compiled by tests/python/test_metal_kernel_mlx_headers.py.)
  const char* saved = std::getenv("ALLOY_MLX_INCLUDE");
  std::string keep = saved ? saved : "";
  setenv("ALLOY_MLX_INCLUDE", "/nonexistent-mlx-include", 1);
  KernelSpec s = spec("out[0] = 0;", "// helpers\n#include \"mlx/backend/metal/kernels/steel/gemm/mma.h\"\n");
  try {
    translate(s, Target::Cpp);
    ADD_FAILURE() << "expected a CompileError";
  } catch (const CompileError& e) {
    EXPECT_TRUE(contains(e.what(), "header:2:1")) << e.what();
    EXPECT_TRUE(contains(e.what(), "#include \"mlx/backend/metal/kernels/steel/gemm/mma.h\"")) << e.what();
  }
  // What MLX prepends to every kernel is Alloy's runtime: no file is read.
  KernelSpec u = spec("out[0] = ceildiv(3, 2);", "#include \"mlx/backend/metal/kernels/utils.h\"\n");
  TranslatedKernel k = translate(u, Target::Cpp);
  EXPECT_FALSE(contains(k.source, "#include \"mlx/"));
  if (saved) setenv("ALLOY_MLX_INCLUDE", keep.c_str(), 1); else unsetenv("ALLOY_MLX_INCLUDE");
}

TEST(MslTranslate, Swizzles) {
  EXPECT_EQ(body_line("float2 a = v.xy; float4 b = v.wzyx; float3 c = v.rgb; float d = v.x + v.a;"),
            "float2 a = v.template swizzle<0,1>(); float4 b = v.template swizzle<3,2,1,0>(); "
            "float3 c = v.template swizzle<0,1,2>(); float d = v.x + v.a;");
  EXPECT_EQ(body_line("v.zw = a; v.xy += a; v.ba *= 2; v.yx <<= 1; p->xy = a; p->xy == a;"),
            "v.template swizzle_ref<2,3>() = a; v.template swizzle_ref<0,1>() += a; "
            "v.template swizzle_ref<2,3>() *= 2; v.template swizzle_ref<1,0>() <<= 1; "
            "p->template swizzle_ref<0,1>() = a; p->template swizzle<0,1>() == a;");
  // Repeated components read fine; mixed sets, long names, free names are not swizzles.
  EXPECT_EQ(body_line("float2 a = v.xx; float b = s.xg + s.xyzwx; float xy = 0;"),
            "float2 a = v.template swizzle<0,0>(); float b = s.xg + s.xyzwx; float xy = 0;");
  // A member function named like one is called.
  EXPECT_EQ(body_line("float a = s.xy() + p->rgb(1) + v.xy.x;"),
            "float a = s.xy() + p->rgb(1) + v.template swizzle<0,1>().x;");
}

TEST(MslTranslate, IncludesAttributesAndUsing) {
  KernelSpec s = spec("out[0] = 0;",
                      "#include <metal_stdlib>\n#include \"metal_atomic\"\n#include \"my.h\"\n"
                      "using namespace metal;\n"
                      "[[clang::always_inline]] inline float f(float x [[maybe_unused]]) "
                      "{ return x; }\n#pragma clang fp contract(off)\n");
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(generated_text(k, Origin::Header, 1), "");
  EXPECT_EQ(generated_text(k, Origin::Header, 2), "");
  EXPECT_EQ(generated_text(k, Origin::Header, 3), "#include \"my.h\"");
  EXPECT_EQ(generated_text(k, Origin::Header, 4), "using namespace metal;");
  EXPECT_EQ(generated_text(k, Origin::Header, 5), "inline float f(float x ) { return x; }");
  EXPECT_EQ(generated_text(k, Origin::Header, 6), "#pragma clang fp contract(off)");
}

TEST(MslTranslate, UserLinesKeepTheirNumbers) {
  KernelSpec s = test::header_helpers();
  for (Target t : {Target::Cpp, Target::Cuda}) {
    TranslatedKernel k = translate(s, t);
    // Every user line is on its own generated line, with #line naming it.
    int header_lines = 1 + static_cast<int>(std::count(s.header.begin(), s.header.end(), '\n'));
    for (int l = 1; l < header_lines; ++l) EXPECT_GT(k.lines.generated_line(Origin::Header, l), 0);
    EXPECT_TRUE(contains(k.source, "#line 1 \"header\"\n"));
    EXPECT_TRUE(contains(k.source, "#line 1 \"source\"\n"));
    EXPECT_EQ(generated_text(k, Origin::Source, 3), "    T v = load_scaled(inp, scale, i);");
    EXPECT_EQ(generated_text(k, Origin::Header, 5), "ALLOY_PROGRAM_CONSTANT float kScale = 2.0f;");
    // Generated lines after a `#line N "generated"` are numbered as they are.
    std::size_t d = k.source.find("#line ", k.source.find("#line 1 \"source\"") + 1);
    int n = std::stoi(k.source.substr(d + 6));
    int physical = 1 + static_cast<int>(std::count(k.source.begin(), k.source.begin() + d, '\n'));
    EXPECT_EQ(n, physical + 1);
    EXPECT_EQ(k.lines.lines[n - 1].origin, Origin::Generated);
  }
}

TEST(MslTranslate, ColumnsMapBackAcrossRewrites) {
  //                           12345678901234567890123456789
  TranslatedKernel k = translate(spec("half a = 1.0h + v.xy.x + bad;"), Target::Cpp);
  int g = k.lines.generated_line(Origin::Source, 1);
  std::string line = generated_text(k, Origin::Source, 1);
  int gen_bad = static_cast<int>(line.find("bad")) + 1;
  EXPECT_EQ(k.lines.user_column(g, gen_bad), 26);
  EXPECT_EQ(k.lines.user_column(g, 1), 1);
  EXPECT_EQ(k.lines.user_column(g, 10), 10);  // `half(1.0)` starts where `1.0h` did
  EXPECT_EQ(k.lines.user_column(g, 13), 10);  // inside the rewrite: its start
}

TEST(MslTranslate, KernelFunctionParametersInOrder) {
  KernelSpec s;
  s.name = "p";
  ParamSpec sc = param("s", "int");
  sc.is_scalar = true;
  ParamSpec small = param("c", "float16_t");
  small.in_constant = true;
  s.inputs = {param("a", "float"), sc, small};
  s.outputs = {param("o", "float")};
  s.atomic_outputs = true;
  s.source = "uint i = simdgroup_index_in_threadgroup + thread_position_in_grid.x"
             " + a_ndim + a_shape[0] + c_strides[0];";
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_TRUE(contains(k.source, "ALLOY_KERNEL_FN void custom_kernel_p_float_ints_float16_tc_float(\n"
                                 "    const float* __restrict__ a,\n"
                                 "    const int* __restrict__ a_shape,\n"
                                 "    const int a_ndim,\n"
                                 "    const int& s,\n"
                                 "    const float16_t* __restrict__ c,\n"
                                 "    const int64_t* __restrict__ c_strides,\n"
                                 "    atomic<float>* __restrict__ o,\n"
                                 "    uint simdgroup_index_in_threadgroup,\n"
                                 "    uint3 thread_position_in_grid) {\n"))
      << k.source;
  EXPECT_TRUE(contains(k.source, "alloy_msl::cpu::run</*uses_sync=*/false>"));
  EXPECT_TRUE(contains(k.source, "custom_kernel_p_float_ints_float16_tc_float(\n"
                                 "        static_cast<const float*>(L->buffers[0]),\n"
                                 "        L->shapes[0],\n"
                                 "        L->ndims[0],\n"
                                 "        *static_cast<const int*>(L->buffers[1]),\n"
                                 "        static_cast<const float16_t*>(L->buffers[2]),\n"
                                 "        L->strides[2],\n"
                                 "        static_cast<atomic<float>*>(L->buffers[3]),\n"
                                 "        t.simdgroup_index_in_threadgroup,\n"
                                 "        t.thread_position_in_grid);\n"))
      << k.source;

  ASSERT_EQ(k.params.size(), 7u);
  std::vector<std::tuple<GlueParam::Kind, int, std::string>> want = {
      {GlueParam::Buffer, 0, "in0"},  {GlueParam::Shape, 0, "in0_shape"},
      {GlueParam::Ndim, 0, "in0_ndim"}, {GlueParam::Scalar, 1, "in1"},
      {GlueParam::Buffer, 2, "in2"},  {GlueParam::Strides, 2, "in2_strides"},
      {GlueParam::Buffer, 3, "out0"}};  // outputs are numbered after the 3 inputs
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(k.params[i].kind, std::get<0>(want[i])) << i;
    EXPECT_EQ(k.params[i].index, std::get<1>(want[i])) << i;
    EXPECT_EQ(k.params[i].name, std::get<2>(want[i])) << i;
  }
  TranslatedKernel cu = translate(s, Target::Cuda);
  EXPECT_TRUE(contains(cu.source, "extern \"C\" __global__ void alloy_kernel_main(\n"
                                  "    const float* __restrict__ in0,\n"
                                  "    const __grid_constant__ alloy_msl::cuda::ShapeArg in0_shape,\n"
                                  "    int in0_ndim,\n"
                                  "    const int* __restrict__ in1,\n"
                                  "    const float16_t* __restrict__ in2,\n"
                                  "    const __grid_constant__ alloy_msl::cuda::StridesArg in2_strides,\n"
                                  "    float* __restrict__ out0,\n"
                                  "    alloy_msl::cuda::Dispatch d) {\n"))
      << cu.source;
  // The 0-d input is read at entry, before the thread ids, and passed on.
  EXPECT_TRUE(contains(cu.source, "    alloy_msl::cuda::Dispatch d) {\n  const int in1_value = *in1;\n")) << cu.source;
  EXPECT_TRUE(contains(cu.source, "      in1_value,\n"));
  EXPECT_TRUE(contains(cu.source, "      reinterpret_cast<atomic<float>*>(out0),\n"));
  // No sync: each block runs 4 threadgroups in turn.
  EXPECT_EQ(cuda_threadgroups_per_block(cu.analysis), 4);
  EXPECT_TRUE(contains(cu.source, "const unsigned first = blockIdx.x * 4u;"));
  EXPECT_TRUE(contains(cu.source, "if (!alloy_msl::cuda::thread_ids(d, t, first + j)) return;"));
  EXPECT_EQ(cu.entry, "alloy_kernel_main");
  EXPECT_EQ(cu.params.size(), k.params.size());
}

TEST(MslTranslate, PreludeAndMathMode) {
  KernelSpec s = spec("out[0] = 0;");
  TranslatedKernel k = translate(s, Target::Cpp);
  // A kernel that names no optional part of the runtime gets only its core.
  EXPECT_TRUE(contains(k.source, "#define ALLOY_MATH_MODE_SAFE 1\n#define ALLOY_MSL_SELECT 1\n"
                                 "#include \"metal_cpu.h\"\nusing namespace metal;\n"))
      << k.source;
  EXPECT_FALSE(contains(k.source, "__FAST_MATH__"));
  s.math_mode = "fast";
  k = translate(s, Target::Cuda);
  EXPECT_TRUE(contains(k.source, "#define ALLOY_MATH_MODE_FAST 1\n#define ALLOY_MSL_SELECT 1\n"
                                 "#include \"metal_cuda.h\"\n"));
  EXPECT_TRUE(contains(k.source, "#ifndef __FAST_MATH__\n#define __FAST_MATH__ 1\n#endif\n"));
  s.math_mode = "relaxed";
  EXPECT_TRUE(contains(translate(s, Target::Cpp).source, "#define ALLOY_MATH_MODE_RELAXED 1\n"));
  s.math_mode = "fastest";
  try {
    translate(s, Target::Cpp);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "[msl::translate]"));
    EXPECT_TRUE(contains(e.what(), "'fastest'"));
  }
}

// A loop with barriers whose trips every thread shares runs as one plain
// loop of the group around its regions (msl/cpu_uniform_loops.h); any doubt
// keeps the condition per thread, in a region_loop of its own.
TEST(MslTranslate, RegionsRunUniformBarrierLoopsAsOnePlainLoop) {
  auto loop_of = [](const std::string& header_clause, const std::string& body_extra = "",
                    const std::string& header = "") {
    KernelSpec s = spec("threadgroup float buf[64];\n"
                        "uint lid = thread_position_in_threadgroup.x;\n"
                        "uint n = inp_shape[0];\n"
                        "for (" + header_clause + ") {\n"
                        "  buf[lid] = inp[lid + k];\n" + body_extra +
                        "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                        "}\n"
                        "out[lid] = buf[lid];\n",
                        header);
    s.inputs = {param("inp", "float")};
    s.outputs = {param("out", "float")};
    TranslatedKernel k = translate(s, Target::Cpp);
    EXPECT_EQ(k.cpu_threads, "regions") << k.source;
    const bool plain = contains(k.source, "for (; ");
    EXPECT_NE(plain, contains(k.source, "region_loop(")) << k.source;
    return plain;
  };
  // Numbers, the counter, parameters (inp_shape), the group's attributes,
  // pure calls, compound steps.
  EXPECT_TRUE(loop_of("uint k = 0; k < 4; ++k"));
  EXPECT_TRUE(loop_of("int k = 0; k < int(inp_shape[0]) / 64; k += 2"));
  EXPECT_TRUE(loop_of("uint k = 32; k > 0; k /= 2"));
  EXPECT_TRUE(loop_of("uint k = threads_per_threadgroup.x / 2; k > 0; k >>= 1"));  // the group's own attribute
  EXPECT_TRUE(loop_of("uint k = 0; k < min(uint(inp_shape[0]), 8u); k++", "", "#define STEP 2"));
  // A body local the group shares (msl/cpu_uniform_values.h).
  EXPECT_TRUE(loop_of("uint k = 0; k < n; ++k"));
  // A thread's own value (a body local set from one), a non-pure call, a
  // macro naming a name, an assignment in the header, a counter the body
  // changes, another form of increment.
  EXPECT_FALSE(loop_of("uint k = 0; k < lid; ++k"));
  EXPECT_FALSE(loop_of("uint k = 0; k < thread_position_in_grid.x % 3; ++k"));
  EXPECT_FALSE(loop_of("uint k = 0; k < helper(4); ++k", "", "inline uint helper(uint x) { return x; }"));
  EXPECT_FALSE(loop_of("uint k = 0; k < LIMIT; ++k", "", "#define LIMIT (thread_position_in_grid.x)"));
  EXPECT_FALSE(loop_of("uint k = 0; k < (n = 4); ++k"));
  EXPECT_FALSE(loop_of("uint k = 0; k < 4; ++k", "  k += buf[0] > 0 ? 1 : 0;\n"));
  EXPECT_FALSE(loop_of("uint k = 0; k < 4; k = k + 1"));
}

// The per-thread frame of values living across regions is declared after
// the body's leading constants, which its arrays may be sized by (mlx-lm's
// qk_norm: `constexpr int R = (D + 31) / 32; ... float v[R];` across a
// simd_sum). A constant the body declares later at its own scope moves
// before the frame (mlx-vlm's GEMVs: `constexpr int TM = 4;` after the ids).
TEST(MslTranslate, RegionsFrameFollowsTheBodysLeadingConstants) {
  auto kernel = [](const std::string& first_lines) {
    KernelSpec s = spec(first_lines +
                        "float v[R];\n"
                        "for (int i = 0; i < R; i++) v[i] = inp[lane + 32 * i];\n"
                        "float total = simd_sum(v[0] + v[1]);\n"
                        "for (int i = 0; i < R; i++) out[lane + 32 * i] = v[i] / total;\n");
    s.inputs = {param("inp", "float")};
    s.outputs = {param("out", "float")};
    return translate(s, Target::Cpp);
  };
  TranslatedKernel k = kernel("constexpr int R = 2;\nthreadgroup float unused[4];\nuint lane = thread_index_in_simdgroup;\n");
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
  const std::size_t constant = k.source.find("constexpr int R = 2;"), frame = k.source.find("struct alloy_frame_t {");
  ASSERT_NE(constant, std::string::npos) << k.source;
  ASSERT_NE(frame, std::string::npos) << k.source;
  EXPECT_LT(constant, frame) << k.source;
  EXPECT_LT(k.source.find("float unused[4];"), frame) << k.source;
  EXPECT_TRUE(contains(k.source, "float v[::alloy_msl::cpu::kRegionMaxThreads][ R ];")) << k.source;
  k = kernel("uint lane = thread_index_in_simdgroup;\nconstexpr int R = 2;\n");
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
  const std::size_t moved = k.source.find("constexpr int R");
  ASSERT_NE(moved, std::string::npos) << k.source;
  EXPECT_LT(moved, k.source.find("struct alloy_frame_t {")) << k.source;
  EXPECT_EQ(k.source.find("constexpr int R", moved + 1), std::string::npos) << k.source;  // not left in place
}

// A declaration whose value every thread of the group shares is evaluated
// once for the group, before the first region, under a `#line` naming its
// own line (msl/cpu_uniform_values.h); one that may differ, may change, or
// reads what a thread may write stays with the thread's code.
TEST(MslTranslate, RegionsEvaluateUniformDeclarationsOnceForTheGroup) {
  auto kernel = [](const std::string& declaration, const std::string& before = "",
                   const std::string& after = "", const std::string& header = "") {
    KernelSpec s = spec("uint lane = thread_index_in_simdgroup;\n" + before + declaration + "\n"
                        "float v = simd_sum(inp[lane]);\n"
                        "out[lane] = v * float(m);\n" + after,
                        header);
    s.inputs = {param("inp", "float")};
    s.outputs = {param("out", "float")};
    return translate(s, Target::Cpp);
  };
  // Moved: it precedes the first region, and is no longer in the frame
  // (one left in place lives there, its declaration an assignment).
  auto moved = [](const TranslatedKernel& k, const std::string& declaration) {
    EXPECT_EQ(k.cpu_threads, "regions") << k.source;
    const std::size_t at = k.source.find(declaration), region = k.source.find("region_for(");
    EXPECT_NE(region, std::string::npos) << k.source;
    return at != std::string::npos && at < region && !contains(k.source, " m[::alloy_msl::cpu::kRegionMaxThreads]");
  };
  TranslatedKernel k = kernel("int m = ceildiv(int(inp_shape[0]), threads_per_simdgroup) * 2;");
  EXPECT_TRUE(moved(k, "int m = ceildiv ( int ( inp_shape [ 0 ] ) , threads_per_simdgroup ) * 2 ;"));
  EXPECT_TRUE(contains(k.source, "#line 2 \"source\"\nint m = ")) << k.source;
  EXPECT_EQ(generated_text(k, Origin::Source, 2).rfind("int m = ", 0), 0u) << k.source;
  // From another uniform one and a constant of the body.
  k = kernel("int m = n * K;", "constexpr int K = 4;\nint n = inp_shape[0] / 2;\n");
  EXPECT_TRUE(moved(k, "int m = n * K ;"));
  EXPECT_LT(k.source.find("int n = inp_shape"), k.source.find("int m = n")) << k.source;
  // Each thread's own: a thread's value, an output's element, a name
  // changed later or passed to a call that may change it, one declared
  // twice, one after a return.
  EXPECT_FALSE(moved(kernel("int m = int(lane) + 1;"), "int m = int(lane) + 1;"));
  EXPECT_FALSE(moved(kernel("int m = int(out[0]);"), "int m = int(out[0]);"));
  EXPECT_FALSE(moved(kernel("int m = 4;", "", "m += 1;\n"), "int m = 4;"));
  EXPECT_FALSE(moved(kernel("int m = 4;", "", "bump(m);\n", "inline void bump(thread int& x) { x++; }"),
                     "int m = 4;"));
  EXPECT_FALSE(moved(kernel("int m = 4;", "", "{ int m = 5; out[0] = m; }\n"), "int m = 4;"));
  EXPECT_FALSE(moved(kernel("int m = 4;", "if (lane > 40) return;\n"), "int m = 4;"));
}

// A kernel that names its position and divides it by a value the group
// shares runs its threads row by row: the divisions whose tokens are whole
// operands become the loop's row and column; the others still divide.
TEST(MslTranslate, RegionsRunRowsOfThreadsForADividedPosition) {
  auto kernel = [](const std::string& body, const std::string& index = "uint e = thread_position_in_grid.x;") {
    KernelSpec s = spec(index + "\nint C = inp_shape[1];\n" + body +
                        "\nfloat v = simd_sum(inp[e % C]);\nout[e] = v;\n");
    s.inputs = {param("inp", "float")};
    s.outputs = {param("out", "float")};
    return translate(s, Target::Cpp);
  };
  TranslatedKernel k = kernel("int r = e / C * 2 + (e / C);");
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
  EXPECT_TRUE(contains(k.source, "region_for_rows<uint>(alloy_g, C, [&](unsigned long alloy_tid, ::metal::uint3 "
                                 "alloy_lid, auto alloy_rc)")) << k.source;
  EXPECT_FALSE(contains(k.source, "region_for(alloy_g,")) << k.source;
  EXPECT_TRUE(contains(k.source, "int r = alloy_row * 2 + (alloy_row );")) << k.source;
  // The remainder in the SIMD-group call's operand, in both its regions.
  EXPECT_TRUE(contains(k.source, "simd_sum ( inp [ alloy_col   ] )")) << k.source;
  EXPECT_TRUE(contains(k.source, "simd_sum(inp[alloy_col ])")) << k.source;
  // Not whole operands: `a * e / C` is `(a * e) / C`, a sign or a cast
  // binds first, and an element or call of the divisor extends it.
  k = kernel("int r = 3 * e / C + (-e / C) + int(e) / C;");
  EXPECT_TRUE(contains(k.source, "int r = 3 * e / C + (-e / C) + int(e) / C;")) << k.source;
  EXPECT_TRUE(contains(k.source, "region_for_rows<uint>")) << k.source;  // (the remainder still counts)
  // A signed position; the position's type without const.
  k = kernel("int r = e / C;", "const int e = thread_position_in_grid.x;");
  EXPECT_TRUE(contains(k.source, "region_for_rows<int>(alloy_g, C,")) << k.source;
  EXPECT_TRUE(contains(k.source, "int r = alloy_row ;")) << k.source;
  // No rows: the position changes, is not the grid's x, or is divided by a
  // thread's own value.
  EXPECT_FALSE(contains(kernel("e += 1; int r = e / C;").source, "region_for_rows"));
  EXPECT_FALSE(contains(kernel("int r = e / C;", "uint e = thread_position_in_grid.y;").source, "region_for_rows"));
  EXPECT_TRUE(contains(kernel("int D = e + 1; int r = e / D;").source, "int r = e / D;"));
  // Divided by a template constant, by a literal of at least 8, from an
  // `auto` position; not by a smaller literal.
  KernelSpec t = spec("auto e = thread_position_in_grid.x;\nfloat v = simd_sum(inp[e % H] + inp[e / H]);\n"
                      "out[e] = v + float(e / 32) + float(e / 4);\n");
  t.inputs = {param("inp", "float")};
  t.outputs = {param("out", "float")};
  t.template_args = {{"H", TemplateArg::Int, "12"}};
  k = translate(t, Target::Cpp);
  EXPECT_TRUE(contains(k.source, "region_for_rows<uint>(alloy_g, H,")) << k.source;
  EXPECT_TRUE(contains(k.source, "float(e / 32) + float(e / 4)")) << k.source;  // (one divisor: H, the most used)
  t.source = "uint e = thread_position_in_grid.x;\nfloat v = simd_sum(inp[e % 32u]);\n"
             "out[e] = v + float(e / 32u) + float(e / 4);\n";
  k = translate(t, Target::Cpp);
  EXPECT_TRUE(contains(k.source, "region_for_rows<uint>(alloy_g, 32u,")) << k.source;
  EXPECT_TRUE(contains(k.source, "float(alloy_row ) + float(e / 4)")) << k.source;
  t.source = "uint e = thread_position_in_grid.x;\nfloat v = simd_sum(inp[e % 4]);\nout[e] = v;\n";
  EXPECT_FALSE(contains(translate(t, Target::Cpp).source, "region_for_rows"));
  // A condition's lambda (a loop with SIMD-group calls whose trips differ)
  // divides for its row.
  k = kernel("for (uint i = e / C; i < 4; ++i) { out[e] += simd_sum(inp[i]); }");
  EXPECT_TRUE(contains(k.source, "region_row_column<uint>(alloy_g, alloy_tid, alloy_lid, C)")) << k.source;
}

// A macro that names a local of the body would use it where the region's
// own text does not load it: such a kernel is no regions kernel (the
// macro's body is read from the lexed code), whether or not the region
// text alone shows the value living across the call (dflash-mlx: `scale`
// below is named after the barrier only through the macro).
TEST(MslTranslate, AMacroNamingALocalKeepsRegionsOff) {
  KernelSpec s = spec("#define PLUS_V(a) ((a) + v)\n"
                      "uint i = thread_position_in_grid.x;\n"
                      "float v = inp[i];\n"
                      "float t = simd_sum(v);\n"
                      "out[i] = PLUS_V(t);\n");
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(k.cpu_threads, "coroutines: not regions, as a macro names `v`, a local of the body, in a region that does not declare it") << k.source;
  s.source = "uint tid = thread_position_in_threadgroup.x;\nint scale = int(tid) + 1;\n"
             "threadgroup float buf[32];\n#define STAGE(slot) { buf[(slot)] = float(scale) * inp[(slot)]; }\n"
             "threadgroup_barrier(mem_flags::mem_threadgroup);\nSTAGE(tid);\nout[tid] = buf[tid];\n";
  EXPECT_EQ(translate(s, Target::Cpp).cpu_threads, "coroutines: not regions, as a macro names `scale`, a local of the body, in a region that does not "
            "declare it");
  s.source = "#define TWICE(a) ((a) * 2)\nuint i = thread_position_in_grid.x;\nfloat v = inp[i];\n"
             "float t = simd_sum(v);\nout[i] = TWICE(t) + v;\n";
  EXPECT_EQ(translate(s, Target::Cpp).cpu_threads, "regions");
}

// A SIMD-group call written with its namespace (mlx-vlm's FP8 round trip:
// `metal::max(metal::simd_max(metal::abs(value)), 1e-4f)`) is split like an
// unqualified one, the qualifier moving with the call.
// A region kernel's tests of plain comparisons evaluate every operand (`&`),
// so g++ can unswitch its loop on them; a test that indexes, calls, divides
// or is not made of comparisons keeps its `&&` (stopping early matters).
TEST(MslTranslate, RegionConditionsOfComparisonsEvaluateEveryOperand) {
  KernelSpec s = spec("uint i = thread_position_in_grid.x;\n"
                      "int n = inp_shape[0], x = int(i) - 3, y = x * 2;\n"
                      "float v = 0;\n"
                      "if (x >= 0 && (x < n - 1) && !(y == 4)) v += 1;\n"
                      "if (x >= 0 && inp[x] > 0) v += 2;\n"
                      "if (n && x) v += 4;\n"
                      "if (x > 0 && n / x > 1) v += 8;\n"
                      "if (x > 0 && metal::abs(y) < n) v += 16;\n"
                      "if (x > 0 && AT_X > 0) v += 32;\n"
                      "if (x > 0 && x < LIMIT) v += 64;\n"
                      "if (x > 0 && *(inp + x) > 0) v += 128;\n"
                      "out[i] = simd_sum(v);\n",
                      "#define AT_X inp[x]\n#define LIMIT 100\n");
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  TranslatedKernel k = translate(s, Target::Cpp);
  ASSERT_EQ(k.cpu_threads, "regions") << k.source;
  EXPECT_TRUE(contains(k.source, "if (x >= 0 & (x < n - 1) & !(y == 4))")) << k.source;
  EXPECT_TRUE(contains(k.source, "if (x >= 0 && inp")) << k.source;
  EXPECT_TRUE(contains(k.source, "if (n && x)")) << k.source;
  EXPECT_TRUE(contains(k.source, "if (x > 0 && n / x > 1)")) << k.source;
  EXPECT_TRUE(contains(k.source, "if (x > 0 && metal::abs(y) < n)")) << k.source;
  // A macro may hide an index (or a call): its test stops early; one of a number does not.
  EXPECT_TRUE(contains(k.source, "if (x > 0 && AT_X > 0)")) << k.source;
  EXPECT_TRUE(contains(k.source, "if (x > 0 & x < LIMIT)")) << k.source;
  EXPECT_TRUE(contains(k.source, "if (x > 0 && *(inp + x) > 0)")) << k.source;  // a dereference
  EXPECT_TRUE(contains(k.source, "if (x >= 0 & (x < n - 1) & !(y == 4))")) << k.source;  // `*` of values stays fine
  EXPECT_EQ(k.cpu_flags, (std::vector<std::string>{"--param=max-unswitch-level=4", "--param=max-unswitch-insns=400"}));
}

TEST(MslTranslate, RegionsTakeQualifiedSimdCalls) {
  KernelSpec s = spec("uint i = thread_position_in_grid.x;\n"
                      "float m = metal::max(metal::simd_max(metal::abs(inp[i])), 1e-4f);\n"
                      "float t = ::metal::simd_sum(inp[i]);\n"
                      "out[i] = m + t;\n");
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
  EXPECT_TRUE(contains(k.source, "region_deposit(alloy_fv.alloy_deposits.slot[0], alloy_tid, metal :: simd_max ("))
      << k.source;
  EXPECT_TRUE(contains(k.source, "metal::max(::alloy_msl::cpu::region_result(alloy_g, 0, alloy_fv.alloy_deposits.slot[0], "
                                 "alloy_tid, metal"))
      << k.source;
  EXPECT_TRUE(contains(k.source, "region_deposit(alloy_fv.alloy_deposits.slot[4], alloy_tid, :: metal :: simd_sum ("))
      << k.source;
  // The deposits live in the frame, beside the values that live across regions.
  EXPECT_TRUE(contains(k.source, "float m[::alloy_msl::cpu::kRegionMaxThreads]; ::alloy_msl::cpu::RegionDeposits "
                                 "alloy_deposits; }"))
      << k.source;
}

// Consecutive SIMD-group statements whose calls do not read what the ones
// before them assign share one exchange (one region deposits every call's
// argument, the next reads every result); anything that might let a later
// argument see an earlier statement's effect keeps them apart.
TEST(MslTranslate, ConsecutiveSimdStatementsShareAnExchangeWhereNothingOrdersThem) {
  auto translated = [](const std::string& body) {
    KernelSpec s = spec("uint i = thread_position_in_grid.x;\nfloat x = inp[i], y = inp[i + 1], a = 0, b = 0;\n" +
                        body + "out[i] = a + b;\n");
    s.inputs = {param("inp", "float")};
    s.outputs = {param("out", "float")};
    return translate(s, Target::Cpp);
  };
  auto exchanges = [&](const std::string& body) {
    TranslatedKernel k = translated(body);
    EXPECT_EQ(k.cpu_threads, "regions") << body << k.source;
    std::size_t n = 0;
    for (std::size_t at = k.source.find("region_exchange("); at != std::string::npos;
         at = k.source.find("region_exchange(", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(exchanges("a = simd_sum(x);\nb = simd_max(y);\n"), 1u);
  EXPECT_EQ(exchanges("a += simd_sum(x) * 2;\nfloat c = simd_min(y);\nb = c + simd_sum(x);\n"), 1u);
  EXPECT_EQ(exchanges("a = simd_sum(x);\nb = simd_sum(a);\n"), 2u);            // reads what the first assigns
  EXPECT_EQ(exchanges("out[i] = simd_sum(x);\nb = simd_sum(y);\n"), 2u);       // the first writes memory
  EXPECT_EQ(exchanges("a = metal::abs(simd_sum(x));\nb = simd_sum(y);\n"), 2u);  // a call outside its arguments
  EXPECT_EQ(exchanges("a = simd_sum(x), b = 1;\nb = simd_sum(y);\n"), 2u);    // a second effect
  EXPECT_EQ(exchanges("thread float* p = &a;\na = simd_sum(x);\nb = simd_sum(*p);\n"), 2u);  // its address taken
  // A reference: apart, `r` would live across the first exchange, which
  // regions refuse (coroutines run it); sharing it would read `a` too early.
  EXPECT_EQ(translated("thread float& r = a;\na = simd_sum(x);\nb = simd_sum(r);\n").cpu_threads,
            "coroutines: not regions, as 'r' is a reference and lives across a barrier");
  // Four calls to an exchange at most.
  EXPECT_EQ(exchanges("a = simd_sum(x);\nb = simd_sum(y);\nfloat c = simd_max(x);\nfloat d = simd_min(y);\n"
                      "float e = simd_sum(y);\nout[i + 2] = c + d + e;\n"),
            2u);
}

TEST(MslTranslate, SyncSelectsTheCoroutineOrFiberRun) {
  for (KernelSpec s : {test::threadgroup_reduce(), test::grid_sample_grad()}) {
    TranslatedKernel k = translate(s, Target::Cpp);
    EXPECT_TRUE(contains(k.source, "alloy_msl::cpu::run_regions(L,")) << k.source;
    EXPECT_EQ(k.cpu_threads, "regions");
    EXPECT_EQ(k.cpu_optimization, 3);
    s.cpu_sync = KernelSpec::CpuSync::Coroutines;
    k = translate(s, Target::Cpp);
    EXPECT_TRUE(contains(k.source, "alloy_msl::cpu::run_coroutines(L,")) << k.source;
    EXPECT_EQ(k.cpu_threads, "coroutines");
    EXPECT_EQ(k.cpu_optimization, 2);
    s.cpu_sync = KernelSpec::CpuSync::Fibers;
    k = translate(s, Target::Cpp);
    EXPECT_TRUE(contains(k.source, "alloy_msl::cpu::run</*uses_sync=*/true>"));
    EXPECT_FALSE(contains(k.source, "co_await"));
    EXPECT_EQ(k.cpu_threads, "fibers: fibers were asked for (ALLOY_CPU_SYNC=fibers)");
  }
  // A kernel without sync runs as plain loops, unless its threads come in
  // rows (the seed's forward: `elem / C`), which one region runs.
  EXPECT_TRUE(contains(translate(test::header_helpers(), Target::Cpp).source,
                       "alloy_msl::cpu::run</*uses_sync=*/false>"));
  TranslatedKernel forward = translate(test::grid_sample(), Target::Cpp);
  EXPECT_TRUE(contains(forward.source, "alloy_msl::cpu::run_regions(L,")) << forward.source;
  EXPECT_TRUE(contains(forward.source, "region_for_rows<uint>(alloy_g, C,")) << forward.source;
  EXPECT_EQ(forward.cpu_threads, "regions");
  KernelSpec checked = test::grid_sample();
  checked.bounds_check = true;  // (no shared declarations, no rows)
  EXPECT_TRUE(contains(translate(checked, Target::Cpp).source, "alloy_msl::cpu::run</*uses_sync=*/false>"));
  // On CUDA a kernel with sync keeps one threadgroup per block.
  TranslatedKernel grad = translate(test::grid_sample_grad(), Target::Cuda);
  EXPECT_EQ(cuda_threadgroups_per_block(grad.analysis), 1);
  EXPECT_TRUE(contains(grad.source, "if (!alloy_msl::cuda::thread_ids(d, t)) return;"));
  EXPECT_EQ(cuda_threadgroups_per_block(translate(test::grid_sample(), Target::Cuda).analysis), 4);
}

TEST(MslTranslate, TemplateValuesInTheCall) {
  KernelSpec s = test::header_helpers();
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_TRUE(contains(k.source, "template <typename T, int K, bool USE_BIAS>\nALLOY_KERNEL_FN"));
  EXPECT_TRUE(contains(k.source, k.kernel_name + "<float, -3, true>(\n"));
}

TEST(MslTranslate, BadSpecsAreRejected) {
  auto rejects = [](KernelSpec s, const std::string& part) {
    try {
      translate(s, Target::Cpp);
      ADD_FAILURE() << "no error for " << part;
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), part)) << e.what();
    }
  };
  KernelSpec s = spec("out[0] = 0;");
  s.inputs[0].name = "in put";
  rejects(s, "'in put'");
  s = spec("out[0] = 0;");
  s.outputs.clear();
  rejects(s, "no outputs");
  s = spec("out[0] = 0;");
  s.template_args = {{"N", TemplateArg::Int, "4.5"}};
  rejects(s, "'4.5'");
  s = spec("out[0] = 0;");
  s.outputs.push_back(param("inp", "float"));
  rejects(s, "twice");
}

// translate() lexes the source and the header once each, whatever the
// target and dialect: every pass reads the tokens it hands them.
TEST(MslTranslate, LexesEachTextOnce) {
  KernelSpec cuda_body = spec("out[0] = inp[0];", "#define N 1\n");
  cuda_body.dialect = Dialect::Cuda;
  const std::pair<KernelSpec, Target> cases[] = {
      {test::header_helpers(), Target::Cpp},  // a header with macros, a body that uses them
      {test::header_helpers(), Target::Cuda},
      {test::header_helpers(), Target::Metal},
      {cuda_body, Target::Cuda}};
  for (const auto& [s, target] : cases) {
    const std::size_t before = lex_count();
    translate(s, target);
    EXPECT_EQ(lex_count() - before, 2u) << "target " << static_cast<int>(target);
  }
}

}  // namespace
}  // namespace alloy::msl

namespace alloy::msl {
namespace {
// A 0x02 byte of the user's own text (the fuzzer's) is written as it is:
// only a well-formed line marker becomes a `#line` directive.
TEST(MslWriter, StrayMarkerBytesAreUserText) {
  Writer w;
  w.user_token(std::string("a\x02" "b\x02x\x02"), 1, 5);
  EXPECT_EQ(w.take_text(), std::string("a\x02" "b\x02x\x02"));
  Writer m;
  m.user_token("x " + Writer::line_marker(7) + "int k;" + Writer::line_marker_back() + "y", 1, 1);
  EXPECT_NE(m.take_text().find("#line 7 \"source\"\nint k;"), std::string::npos);
}
}  // namespace
}  // namespace alloy::msl

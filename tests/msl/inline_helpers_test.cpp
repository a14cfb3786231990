// A helper of the header that synchronises, written out at its calls for
// the CPU's regions (msl/cpu_inline_helpers.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "alloy/msl/translate.h"
#include "msl/cpu_inline_helpers.h"
#include "msl/lexer.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// mlx-lm's block_sum_once (mlx_lm/kernels/norm_add_norm.py), as its header writes it.
const char* kBlockSum = R"(
template <int TG>
inline float block_sum_once(float v, threadgroup float* buf, uint lane, uint sg) {
    v = simd_sum(v);
    if (TG > 32) {
        if (lane == 0) {
            buf[sg] = v;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        v = simd_sum(lane < TG / 32 ? buf[lane] : 0.0f);
    }
    return v;
}
)";

// A body calling it twice, in a declaration and in an assignment.
const char* kTwoCalls = R"(
threadgroup float buf[2][32];
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
uint i = thread_position_in_grid.x;
float s = inp[i];
float total = block_sum_once<TG>(s * s, buf[0], lane, sg) / 2.0f;
s = 1.0f + block_sum_once<TG>(total, buf[1], lane, sg);
out[i] = s;
)";

KernelSpec with_helper(const std::string& body, const std::string& header) {
  KernelSpec s = test::kernel(body, header);
  TemplateArg tg;
  tg.name = "TG";
  tg.kind = TemplateArg::Int;
  tg.value = "64";
  s.template_args = {tg};
  return s;
}

TEST(MslInlineHelpers, AHelperThatSynchronisesIsWrittenOutAtItsCalls) {
  const KernelSpec s = with_helper(kTwoCalls, kBlockSum);
  const TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
  EXPECT_EQ(k.cpu_inlined, "block_sum_once is written out at its 2 calls in the body (a region cannot end inside a call)");
  EXPECT_TRUE(contains(k.source, "\n// " + k.cpu_inlined + ".\n")) << k.source;
  EXPECT_FALSE(contains(k.source, "block_sum_once (")) << k.source;  // no call is left
  EXPECT_TRUE(contains(k.source, "alloy_inline_2")) << k.source;
  // Other targets, and a thread model asked for, keep the call.
  EXPECT_TRUE(contains(translate(s, Target::Cuda).source, "block_sum_once")) ;
  KernelSpec fibers = s;
  fibers.cpu_sync = KernelSpec::CpuSync::Fibers;
  const TranslatedKernel f = translate(fibers, Target::Cpp);
  EXPECT_TRUE(f.cpu_inlined.empty()) << f.cpu_inlined;
  EXPECT_EQ(f.cpu_threads.rfind("fibers", 0), 0u) << f.cpu_threads;
}

TEST(MslInlineHelpers, TheTextsKeepTheirLines) {
  const KernelSpec s = with_helper(kTwoCalls, kBlockSum);
  const LexedKernel lexed = lex_kernel(s);
  const auto inlined = inline_sync_helpers(s, lexed);
  ASSERT_TRUE(inlined);
  auto lines = [](const std::string& t) { return std::count(t.begin(), t.end(), '\n'); };
  EXPECT_EQ(lines(inlined->source), lines(s.source));
  EXPECT_EQ(lines(inlined->header), lines(s.header));
  EXPECT_EQ(inlined->header.find_first_not_of(" \n"), std::string::npos) << inlined->header;
  // Each call's line holds its helper, then the statement with its result.
  const std::string source = inlined->source;
  const std::size_t first = source.find("float alloy_inline_1;");
  ASSERT_NE(first, std::string::npos) << source;
  const std::size_t line_end = source.find('\n', first);
  EXPECT_NE(source.substr(first, line_end - first).find("float total = alloy_inline_1 / 2.0f;"), std::string::npos)
      << source;
  EXPECT_NE(source.find("alloy_inline_1_v = (simd_sum"), 0u);
  EXPECT_TRUE(contains(source, "float alloy_inline_1_v = (s * s);")) << source;
  EXPECT_TRUE(contains(source, "threadgroup float * alloy_inline_2_buf = (buf [ 1 ]);")) << source;
  EXPECT_TRUE(contains(source, "if ( (TG) > 32 )")) << source;
  EXPECT_TRUE(contains(source, "s = 1.0f + alloy_inline_2;")) << source;
}

TEST(MslInlineHelpers, AVoidHelperAndATypeParameter) {
  const std::string header = R"(
template <typename U>
void add_lanes(U v, device U* out, uint i) {
    U s = simd_sum(v);
    out[i] = s;
}
)";
  KernelSpec s = test::kernel("uint i = thread_position_in_grid.x;\nadd_lanes<float>(inp[i], out, i);\n", header);
  const TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
  EXPECT_EQ(k.cpu_inlined.rfind("add_lanes is written out at its call in the body", 0), 0u) << k.cpu_inlined;
  const auto inlined = inline_sync_helpers(s, lex_kernel(s));
  ASSERT_TRUE(inlined);
  EXPECT_TRUE(contains(inlined->source, "{ float alloy_inline_1_v = (inp [ i ]); device float * alloy_inline_1_out = (out);"))
      << inlined->source;
  EXPECT_TRUE(contains(inlined->source, "float s = simd_sum ( alloy_inline_1_v ) ;")) << inlined->source;
}

// Forms the rewrite does not take: the kernel runs on fibers, as before.
TEST(MslInlineHelpers, FormsNotTakenKeepTheKernelAsItWas) {
  const std::string sum = "float sum_of(float v) {\n  return simd_sum(v);\n}\n";
  const std::string body_start = "uint i = thread_position_in_grid.x;\nfloat x = inp[i];\n";
  struct Case {
    std::string header, body, why;  // why: what the refusal says
  };
  const Case cases[] = {
      {"void sum_into(thread float& v) {\n  v = simd_sum(v);\n}\n", body_start + "sum_into(x);\nout[i] = x;\n",
       "parameter `v` of `sum_into` is not a value or a pointer"},
      {"float sum_of(float v) {\n  if (v > 0.0f) return v;\n  return simd_sum(v);\n}\n",
       body_start + "out[i] = sum_of(x);\n", "`sum_of` returns before its last statement (line 2)"},
      {sum, body_start + "while (sum_of(x) > 1.0f) x *= 0.5f;\nout[i] = x;\n",
       "the call of `sum_of` on line 3 is in a loop's or a branch's header, or in a braceless branch"},
      {sum, body_start + "if (i > 3) x = sum_of(x);\nout[i] = x;\n",
       "the call of `sum_of` on line 3 is in a loop's or a branch's header, or in a braceless branch"},
      {sum, body_start + "out[i] = i > 3 ? sum_of(x) : x;\n",
       "the call of `sum_of` on line 3 is in a statement that may not evaluate it (`?`, `&&`, `||`, `,`)"},
      {sum, body_start + "bool b = i > 3 && sum_of(x) > 0.0f;\nout[i] = b;\n",
       "the call of `sum_of` on line 3 is in a statement that may not evaluate it (`?`, `&&`, `||`, `,`)"},
      {sum, body_start + "out[i] = sum_of(sum_of(x));\n", "the call of `sum_of` on line 3 is in another's arguments"},
      {sum + "float twice(float v) {\n  return 2.0f * sum_of(v);\n}\n", body_start + "out[i] = twice(x);\n",
       "the header names `sum_of` on line 5"},
      {"constant float scale = 2.0f;\nfloat scaled_sum(float v) {\n  return scale * simd_sum(v);\n}\n",
       body_start + "float scale = 3.0f;\nout[i] = scaled_sum(x) * scale;\n",
       "`scaled_sum` names `scale`, which the kernel declares too"},
      {"float scaled_sum(float v) {\n  return inp[0] * simd_sum(v);\n}\n", body_start + "out[i] = scaled_sum(x);\n",
       "`scaled_sum` names `inp`, which the kernel declares too"},
      {"constant float scale = 2.0f;\nfloat scaled_sum(float v) {\n  return scale * simd_sum(v);\n}\n",
       "#define scale 3.0f\n" + body_start + "out[i] = scaled_sum(x);\n",
       "`scaled_sum` names `scale`, which the kernel declares too"},
      {"template <typename U>\nU sum_of(U v) {\n  return simd_sum(v);\n}\n", body_start + "out[i] = sum_of(x);\n",
       "the call of `sum_of` on line 3 does not give every template parameter"},
      {sum, body_start + "float alloy_inline_1 = sum_of(x);\nout[i] = alloy_inline_1;\n",
       "the kernel names `alloy_inline_1`, a name of the rewrite's own"},
      {sum + "#define SUM(v) sum_of(v)\n", body_start + "out[i] = SUM(x);\n", "a macro of the header calls a helper"},
      {sum, "#define SUM(v) sum_of(v)\n" + body_start + "out[i] = SUM(x);\n", "a macro of the body calls a helper"},
      {sum + "float sum_of(float v, float w) {\n  return simd_sum(v) + w;\n}\n", body_start + "out[i] = sum_of(x);\n",
       "`sum_of` is defined twice (overloads are not told apart)"},
      {"#define RED(v) simd_sum(v)\n" + sum, body_start + "out[i] = sum_of(x) + RED(x);\n",
       "a macro of the header synchronises"},
      {"template <typename U, int N>\nU sum_of(U v) {\n  return simd_sum(v) * N;\n}\n",
       "template <typename A, int B> struct pair_of { typedef A type; };\n" + body_start +
           "out[i] = sum_of<pair_of<float, 2>::type, 3>(x);\n",
       "the call of `sum_of` on line 4 has `<` or `>` in its arguments"},
      {"float sum_if(float v, bool b) {\n  return simd_sum(b ? v : 0.0f);\n}\n",
       body_start + "out[i] = sum_if(x, x > 0.0f);\n", "the call of `sum_if` on line 3 has `<` or `>` in its arguments"},
      {"template <typename U, int N = 4>\nU sum_of(U v) {\n  return simd_sum(v) * N;\n}\n",
       body_start + "out[i] = sum_of<float, 2>(x);\n", "the template parameters of `sum_of` are not a plain list"},
  };
  for (const Case& c : cases) {
    const KernelSpec s = test::kernel(c.body, c.header);
    std::string why;
    EXPECT_FALSE(inline_sync_helpers(s, lex_kernel(s), &why)) << c.why;
    EXPECT_EQ(why, c.why);
    const TranslatedKernel k = translate(s, Target::Cpp);
    // (A synchronising macro is expanded first, where it can be: this one,
    // in an expression, cannot, and that is what the note gives.)
    const bool macro_first = c.why == "a macro of the header synchronises";
    EXPECT_EQ(k.cpu_inlined, macro_first ? "The header's synchronising macros are not written out in the body: the call "
                                           "of `RED` on line 3 does not begin a statement (a braceless branch, or in "
                                           "an expression)"
                                         : "The header's synchronising helpers are not written out in the body: " + c.why);
    EXPECT_EQ(k.cpu_threads.rfind("fibers", 0), 0u) << c.why << ": " << k.cpu_threads;
  }
  // A helper that does not synchronise stays a call, whatever its form.
  const KernelSpec other = test::kernel(body_start + "x = sum_of(x);\nout[i] = scaled<float, 2>(x);\n",
                                        "template <typename U, int N = 4>\nU scaled(U v) { return v * N; }\n" + sum);
  const auto with_other = inline_sync_helpers(other, lex_kernel(other));
  ASSERT_TRUE(with_other);
  EXPECT_TRUE(contains(with_other->source, "scaled<float, 2>(x)")) << with_other->source;
  EXPECT_TRUE(contains(with_other->header, "U scaled(U v) { return v * N; }")) << with_other->header;
  // A helper that synchronises and is not called is left out, whatever its
  // form; one called is written out.
  const std::string by_reference = "void sum_into(thread float& v) {\n  v = simd_sum(v);\n}\n";
  const KernelSpec uncalled = test::kernel(body_start + "out[i] = x;\n", by_reference);
  const TranslatedKernel u = translate(uncalled, Target::Cpp);
  EXPECT_EQ(u.cpu_threads, "") << u.source;  // it does not synchronise: plain loops
  EXPECT_TRUE(contains(u.source, "run</*uses_sync=*/false>(")) << u.source;
  EXPECT_EQ(u.cpu_inlined, "sum_into, not called, is left out (it would keep the kernel on fibers)");
  const KernelSpec both = test::kernel(body_start + "x = sum_of(x);\nout[i] = x;\n", by_reference + sum);
  const TranslatedKernel b = translate(both, Target::Cpp);
  EXPECT_EQ(b.cpu_threads, "regions") << b.source;
  EXPECT_EQ(b.cpu_inlined, "sum_of is written out at its call in the body; sum_into, not called, is left out "
                           "(a region cannot end inside a call)");
  // The same helper in a statement of its own is taken.
  const KernelSpec taken = test::kernel(body_start + "x = sum_of(x);\nout[i] = x;\n", sum);
  EXPECT_TRUE(inline_sync_helpers(taken, lex_kernel(taken)));
  EXPECT_EQ(translate(taken, Target::Cpp).cpu_threads, "regions");
}

}  // namespace
}  // namespace alloy::msl

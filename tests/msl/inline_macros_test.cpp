// A function-like macro of the header that synchronises, expanded at its
// calls for the CPU's regions (msl/cpu_inline_macros.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "alloy/msl/translate.h"
#include "msl/cpu_inline_macros.h"
#include "msl/lexer.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '\n') out.emplace_back();
    else out.back().push_back(c);
  }
  return out;
}

// A group sum into buf[0], written as ZMLX writes its reductions.
const char* kGroupTotal =
    "#define GROUP_TOTAL(buf, val, tid) \\\n"
    "    do { \\\n"
    "        float part_ = simd_sum(val); \\\n"
    "        if ((tid) % 32u == 0u) (buf)[(tid) / 32u] = part_; \\\n"
    "        threadgroup_barrier(mem_flags::mem_threadgroup); \\\n"
    "        for (uint s_ = 1u; s_ > 0u; s_ >>= 1u) { \\\n"
    "            if ((tid) < s_) (buf)[(tid)] += (buf)[(tid) + s_]; \\\n"
    "            threadgroup_barrier(mem_flags::mem_threadgroup); \\\n"
    "        } \\\n"
    "    } while (0)\n"
    "#define TWICE(v) ((v) + (v))\n";

const std::string kBodyStart =
    "threadgroup float buf[32];\nuint tid = thread_position_in_threadgroup.x;\nuint i = thread_position_in_grid.x;\n"
    "float x = inp[i];\n";

TEST(MslInlineMacros, ASynchronisingMacroIsExpandedAtItsCallsOnTheirLines) {
  const std::string body = kBodyStart + "GROUP_TOTAL(buf, x * x, // the squares\n            tid);\nx = TWICE(buf[0]);\n"
                                        "threadgroup_barrier(mem_flags::mem_threadgroup);\nGROUP_TOTAL(buf, x, tid);\n"
                                        "out[i] = buf[0];\n";
  const KernelSpec s = test::kernel(body, kGroupTotal);
  const auto written = inline_sync_macros(s, lex_kernel(s));
  ASSERT_TRUE(written);
  const std::vector<std::string> in = lines_of(body), out = lines_of(written->source);
  ASSERT_EQ(out.size(), in.size()) << written->source;  // every line keeps its number
  // Line 5: the expansion, `do ... while (0)` as a block, the arguments' text
  // in place of the parameters; line 6, where the call went on, is blank.
  EXPECT_EQ(out[4],
            "{ float part_ = simd_sum ( x * x ) ; if ( ( tid ) % 32u == 0u ) ( buf ) [ ( tid ) / 32u ] = part_ ; "
            "threadgroup_barrier ( mem_flags :: mem_threadgroup ) ; for ( uint s_ = 1u ; s_ > 0u ; s_ >>= 1u ) { "
            "if ( ( tid ) < s_ ) ( buf ) [ ( tid ) ] += ( buf ) [ ( tid ) + s_ ] ; threadgroup_barrier ( mem_flags :: "
            "mem_threadgroup ) ; } }");
  EXPECT_EQ(out[5], ";");
  EXPECT_EQ(out[6], in[6]);  // TWICE does not synchronise: left to the preprocessor
  EXPECT_TRUE(contains(out[8], "simd_sum ( x )")) << out[8];
  // The definition is blank lines; the other macro stays.
  const std::vector<std::string> header = lines_of(written->header), was = lines_of(kGroupTotal);
  ASSERT_EQ(header.size(), was.size());
  for (std::size_t k = 0; k < 10; ++k) EXPECT_EQ(header[k].find_first_not_of(' '), std::string::npos) << header[k];
  EXPECT_EQ(header[10], "#define TWICE(v) ((v) + (v))");
  EXPECT_EQ(written->note,
            "GROUP_TOTAL, a macro, is expanded at its 2 calls in the body (a region cannot end inside a macro's call)");

  const TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
  EXPECT_EQ(k.cpu_inlined, written->note);
  // The CUDA translation keeps the macro.
  EXPECT_TRUE(contains(translate(s, Target::Cuda).source, "GROUP_TOTAL(buf, x, tid)"));
}

TEST(MslInlineMacros, AnUncalledSynchronisingMacroIsLeftOut) {
  const KernelSpec s = test::kernel("uint i = thread_position_in_grid.x;\nout[i] = inp[i];\n", kGroupTotal);
  const TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_EQ(k.cpu_inlined, "GROUP_TOTAL, a macro not called, is left out (it would keep the kernel on fibers)");
  EXPECT_EQ(k.cpu_threads, "");  // nothing synchronises: plain loops
}

TEST(MslInlineMacros, FormsNotTakenSayWhy) {
  struct Case {
    std::string header, body, why;
  };
  const std::string red = "#define RED(v) v = simd_sum(v)\n";
  const std::vector<Case> cases = {
      {red, kBodyStart + "out[i] = 2.0f * RED(x);\n",
       "the call of `RED` on line 5 does not begin a statement (a braceless branch, or in an expression)"},
      {red, kBodyStart + "if (i > 0) RED(x);\nout[i] = x;\n",
       "the call of `RED` on line 5 does not begin a statement (a braceless branch, or in an expression)"},
      {red, kBodyStart + "RED(x), x += 1.0f;\nout[i] = x;\n", "the call of `RED` on line 5 is not a statement of its own"},
      {red, kBodyStart + "RED(x, x);\nout[i] = x;\n", "the call of `RED` on line 5 gives 2 arguments for 1 parameters"},
      {red, kBodyStart + "RED(\n#if 1\nx\n#endif\n);\nout[i] = x;\n",
       "the call of `RED` on line 5 has a preprocessor line among its arguments"},
      // The preprocessor splits at commas outside parentheses only: braces do not group.
      {"#define RED2(a, b) a = simd_sum(b)\n", kBodyStart + "RED2(x, float2{x, x}.x);\nout[i] = x;\n",
       "the call of `RED2` on line 5 gives 3 arguments for 2 parameters"},
      {"#define RED(...) simd_sum(__VA_ARGS__)\n", kBodyStart + "x = x;\nRED(x);\nout[i] = x;\n",
       "the macro `RED` on line 1 takes `...`"},
      {"#define RED(v) v = simd_sum(v); float v##_copy = v\n", kBodyStart + "RED(x);\nout[i] = x;\n",
       "the macro `RED` uses `#` or `##`"},
      {red + "#undef RED\n" + red, kBodyStart + "RED(x);\nout[i] = x;\n", "the header defines `RED` more than once"},
      {red + "#undef RED\n", kBodyStart + "RED(x);\nout[i] = x;\n", "a directive on line 2 of the header names `RED`"},
      {red, "#ifdef RED\n#define HAVE 1\n#endif\n" + kBodyStart + "RED(x);\nout[i] = x;\n",
       "a directive on line 1 of the body names `RED`"},
      {red + "float twice_red(float v) { RED(v); return 2.0f * v; }\n", kBodyStart + "RED(x);\nout[i] = x;\n",
       "the header names `RED` on line 2"},
      {red, "#define RED_IT RED(x)\n" + kBodyStart + "RED_IT;\nout[i] = x;\n", "a directive on line 1 of the body names `RED`"},
      {red + "#define RED_TWICE(v) RED(v); RED(v)\n", kBodyStart + "RED(x);\nout[i] = x;\n",
       "a directive on line 2 of the header names `RED`"},
      {"#define RED(v) do { v = simd_sum(v); if (v > 0.0f) break; } while (0)\n", kBodyStart + "RED(x);\nout[i] = x;\n",
       "the macro `RED` leaves its `do ... while (0)` by `break`"},
  };
  for (const Case& c : cases) {
    const KernelSpec s = test::kernel(c.body, c.header);
    std::string why;
    EXPECT_FALSE(inline_sync_macros(s, lex_kernel(s), &why)) << c.why;
    EXPECT_EQ(why, c.why);
    const TranslatedKernel k = translate(s, Target::Cpp);
    EXPECT_EQ(k.cpu_inlined, "The header's synchronising macros are not written out in the body: " + c.why);
    EXPECT_EQ(k.cpu_threads.rfind("fibers", 0), 0u) << c.why << ": " << k.cpu_threads;
  }
  // A header without synchronising macros: nothing to do, and nothing said.
  const KernelSpec plain = test::kernel(kBodyStart + "out[i] = TWICE(x);\n", "#define TWICE(v) ((v) + (v))\n");
  std::string why;
  EXPECT_FALSE(inline_sync_macros(plain, lex_kernel(plain), &why));
  EXPECT_EQ(why, "");
}

}  // namespace
}  // namespace alloy::msl

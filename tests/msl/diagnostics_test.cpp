// map_diagnostics: compiler logs made to point at the user's lines. The logs
// below have the exact shape g++ 12 and NVRTC (CUDA 13) print for a
// translation's #line-mapped code.
#include <gtest/gtest.h>

#include <algorithm>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

KernelSpec bad_kernel() {
  KernelSpec s;
  s.name = "bad";
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  s.header = "inline float helper(float x) {\n  return x + undefined_in_header;\n}\n";
  s.source = "\n  uint i = thread_position_in_grid.x;\n"
             "  half h = 1.0h; float y = undefined_thing + h;\n"
             "\tout[i] = y + v.xy.x + missing;\n";
  return s;
}

// The generated line and column of `what` on user line `line` of `origin`.
std::pair<int, int> generated_position(const TranslatedKernel& k, Origin origin, int line,
                                       const std::string& what) {
  int g = k.lines.generated_line(origin, line);
  std::size_t start = 0;
  for (int l = 1; l < g; ++l) start = k.source.find('\n', start) + 1;
  std::string text = k.source.substr(start, k.source.find('\n', start) - start);
  return {g, static_cast<int>(text.find(what)) + 1};
}

std::string generated_line_text(const TranslatedKernel& k, int g) {
  std::size_t start = 0;
  for (int l = 1; l < g; ++l) start = k.source.find('\n', start) + 1;
  return k.source.substr(start, k.source.find('\n', start) - start);
}

TEST(MslDiagnostics, GccLogPointsAtTheUsersColumn) {
  KernelSpec s = bad_kernel();
  TranslatedKernel k = translate(s, Target::Cpp);
  // `1.0h` became `half(1.0)`: the compiler's column is 5 further right.
  int col = generated_position(k, Origin::Source, 3, "undefined_thing").second;
  ASSERT_EQ(col, 33);
  std::string log =
      "header: In function \xE2\x80\x98" "float helper(float)\xE2\x80\x99:\n"
      "header:2:14: error: \xE2\x80\x98undefined_in_header\xE2\x80\x99 was not declared in this scope\n"
      "source: In function \xE2\x80\x98void custom_kernel_bad_float_float(const float*, float*, "
      "metal::uint3)\xE2\x80\x99:\n"
      "source:3:33: error: \xE2\x80\x98undefined_thing\xE2\x80\x99 was not declared in this scope\n";
  EXPECT_EQ(map_diagnostics(k, log, s),
            "header: In function \xE2\x80\x98" "float helper(float)\xE2\x80\x99:\n"
            "header:2:14: error: \xE2\x80\x98undefined_in_header\xE2\x80\x99 was not declared in "
            "this scope\n"
            "     2 |   return x + undefined_in_header;\n"
            "       |              ^\n"
            "source: In function \xE2\x80\x98void custom_kernel_bad_float_float(const float*, "
            "float*, metal::uint3)\xE2\x80\x99:\n"
            "source:3:28: error: \xE2\x80\x98undefined_thing\xE2\x80\x99 was not declared in this "
            "scope\n"
            "     3 |   half h = 1.0h; float y = undefined_thing + h;\n"
            "       |                            ^\n");
}

TEST(MslDiagnostics, GccSnippetsAreReplacedByTheUsersLine) {
  KernelSpec s = bad_kernel();
  TranslatedKernel k = translate(s, Target::Cpp);
  auto [g, col] = generated_position(k, Origin::Source, 4, "missing");
  std::string gen = generated_line_text(k, g);
  std::string log = "source:4:" + std::to_string(col) +
                    ": error: 'missing' was not declared in this scope\n"
                    "    4 | " + gen + "\n"
                    "      |                                               ^~~~~~~\n"
                    "1 error generated.\n";
  EXPECT_EQ(map_diagnostics(k, log, s),
            "source:4:24: error: 'missing' was not declared in this scope\n"
            "     4 | \tout[i] = y + v.xy.x + missing;\n"
            "       | \t                      ^\n"
            "1 error generated.\n");
}

TEST(MslDiagnostics, NvrtcLogGetsAColumnFromItsCaret) {
  KernelSpec s = bad_kernel();
  TranslatedKernel k = translate(s, Target::Cuda);
  auto [g, col] = generated_position(k, Origin::Source, 4, "missing");
  std::string gen = generated_line_text(k, g);
  // NVRTC echoes the generated line indented by two spaces, tabs kept, and
  // puts a caret under the column.
  std::string caret = "  \t" + std::string(col - 2, ' ') + "^";
  std::string log = "source(4): error: identifier \"missing\" is undefined\n"
                    "  " + gen + "\n" + caret + "\n"
                    "\n"
                    "1 error detected in the compilation of \"alloy_kernel.cu\".\n";
  EXPECT_EQ(map_diagnostics(k, log, s),
            "source:4:24: error: identifier \"missing\" is undefined\n"
            "     4 | \tout[i] = y + v.xy.x + missing;\n"
            "       | \t                      ^\n"
            "\n"
            "1 error detected in the compilation of \"alloy_kernel.cu\".\n");
}

TEST(MslDiagnostics, NvrtcWithoutEchoStillQuotesTheLine) {
  KernelSpec s = bad_kernel();
  TranslatedKernel k = translate(s, Target::Cuda);
  std::string log = "header(2): warning #177-D: variable \"q\" was declared but never referenced\n";
  EXPECT_EQ(map_diagnostics(k, log, s),
            "header:2: warning #177-D: variable \"q\" was declared but never referenced\n"
            "     2 |   return x + undefined_in_header;\n");
}

// A static_assert of the runtime (Metal 4's matmul2d on a type combination
// it lacks): NVRTC names the user's line only in its template context.
TEST(MslDiagnostics, NvrtcInstantiationContextQuotesTheUsersLine) {
  KernelSpec s = bad_kernel();
  TranslatedKernel k = translate(s, Target::Cuda);
  std::string log =
      "metal_tensor.h(311): error: static assertion failed with \"not supported\"\n"
      "        detected during instantiation of \"void f<T>() [with T=float]\" at line 3 of source\n";
  EXPECT_EQ(map_diagnostics(k, log, s),
            "metal_tensor.h(311): error: static assertion failed with \"not supported\"\n"
            "        detected during instantiation of \"void f<T>() [with T=float]\" at line 3 of source\n"
            "source:3: note: the instantiation above comes from here\n"
            "     3 |   half h = 1.0h; float y = undefined_thing + h;\n");
}

TEST(MslDiagnostics, GeneratedLinesQuoteTheTranslation) {
  KernelSpec s = bad_kernel();
  TranslatedKernel k = translate(s, Target::Cpp);
  // A glue line, e.g. a runtime API mismatch.
  std::size_t at = k.source.find("  alloy_msl::cpu::run");
  int g = 1 + static_cast<int>(std::count(k.source.begin(), k.source.begin() + at, '\n'));
  ASSERT_EQ(k.lines.lines[g - 1].origin, Origin::Generated);
  std::string log = "generated:" + std::to_string(g) + ":14: error: 'run' is not a member\n";
  std::string got = map_diagnostics(k, log, s);
  EXPECT_NE(got.find("generated:" + std::to_string(g) + ":14: error: 'run' is not a member\n"),
            std::string::npos)
      << got;
  EXPECT_NE(got.find(" |   alloy_msl::cpu::run</*uses_sync=*/false>"), std::string::npos) << got;
  EXPECT_NE(got.find(" |              ^\n"), std::string::npos) << got;
}

TEST(MslDiagnostics, OtherLinesPassThrough) {
  KernelSpec s = bad_kernel();
  TranslatedKernel k = translate(s, Target::Cpp);
  std::string log =
      "In file included from /tmp/alloy/abc/kernel.cc:3:\n"
      "metal_cpu.h:10:3: note: candidate: 'template<class T> T metal::exp(T)'\n"
      "   10 |   T exp(T x);\n"
      "      |   ^~~\n"
      "kernel.cc(7): error: something in a file we do not know\n"
      "compilation terminated.\n";
  EXPECT_EQ(map_diagnostics(k, log, s), log);
}

}  // namespace
}  // namespace alloy::msl

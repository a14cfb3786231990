// Function constants in whole programs, in the front end alone: found with
// their types and indices, specialised in place (line numbers kept), and
// is_function_constant_defined resolved.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "alloy/msl/program.h"
#include "alloy/msl/translate.h"

namespace alloy::msl {
namespace {

const char* kProgram =
    "constant bool flag [[function_constant(0)]];\n"
    "constant unsigned int count [[function_constant(3)]];\n"
    "constant bool has_count = is_function_constant_defined(count);\n"
    "kernel void k(device float* o [[buffer(0)]]) { o[0] = flag ? count : 0; }\n";

TEST(MslFunctionConstants, FoundWithTypesAndIndices) {
  auto found = find_function_constants(kProgram);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].type, "bool");
  EXPECT_EQ(found[0].name, "flag");
  EXPECT_EQ(found[0].index, 0);
  EXPECT_EQ(found[1].type, "unsigned int");
  EXPECT_EQ(found[1].index, 3);
  EXPECT_EQ(found[1].line, 2);
  EXPECT_EQ(parse_program(kProgram).function_constants.size(), 2u);
}

TEST(MslFunctionConstants, SpecialisedInPlace) {
  std::string s = specialize_function_constants(kProgram, {{"flag", "true"}});
  EXPECT_NE(s.find("constant bool flag = static_cast<bool>(true);"), std::string::npos) << s;
  EXPECT_NE(s.find("constant unsigned int count = static_cast<unsigned int>(unsigned int());"), std::string::npos)
      << s;
  EXPECT_NE(s.find("has_count = false;"), std::string::npos) << s;
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), std::count(kProgram, kProgram + std::strlen(kProgram), '\n'));
  s = specialize_function_constants(kProgram, {{"count", "7ll"}});
  EXPECT_NE(s.find("has_count = true;"), std::string::npos) << s;
}

TEST(MslFunctionConstants, BadDeclarationsQuoteTheLine) {
  try {
    find_function_constants("kernel void k() {}\nconstant int n [[function_constant(x)]];\n");
    FAIL() << "accepted";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(std::string(e.what()).find("takes an index"), std::string::npos) << e.what();
  }
  EXPECT_THROW(find_function_constants("constant int a [[function_constant(1)]];\nconstant int a [[function_constant(2)]];"),
               CompileError);
}

TEST(MslFunctionConstants, AKernelHeadersConstantsGetNoValues) {
  // A metal_kernel's header declares them (MLX's quantized.h); no kernel
  // parameter gives values, so each is T() and undefined in either text.
  const std::string header = "constant bool align_M [[function_constant(200)]];\n";
  const std::string source = "out[0] = is_function_constant_defined(align_M) ? 1.0f : 0.0f;\n";
  auto [h, s] = specialize_kernel_function_constants(header, source);
  EXPECT_EQ(h, "constant bool align_M = static_cast<bool>(bool());\n");
  EXPECT_EQ(s, "out[0] = false ? 1.0f : 0.0f;\n");
  try {
    specialize_kernel_function_constants(header, "float x = 0;\nbool b = is_function_constant_defined(other);\n");
    FAIL() << "accepted";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 2);  // the body's own line
    EXPECT_NE(std::string(e.what()).find("metal_kernel"), std::string::npos) << e.what();
  }
  // No function constants: both texts as they were.
  EXPECT_EQ(specialize_kernel_function_constants("int a;", source).second, source);
}

TEST(MslFunctionConstants, AnIncludedMlxHeadersConstantsGetNoValues) {
  // quantized.h, read from the installed mlx package: its constants get T(),
  // and is_function_constant_defined of one an include declared (this one or
  // an earlier one) is false; a name none declared is left to the kernel's
  // own header (which comes after the includes).
  std::map<std::string, bool> declared;
  const std::string first = "constant bool align_M [[function_constant(200)]];\n";
  EXPECT_EQ(specialize_included_function_constants(first, "a.h", declared),
            "constant bool align_M = static_cast<bool>(bool());\n");
  const std::string second =
      "constant int n [[function_constant(7)]];\n"
      "bool f() { return is_function_constant_defined(align_M) || is_function_constant_defined(mine); }\n";
  EXPECT_EQ(specialize_included_function_constants(second, "b.h", declared),
            "constant int n = static_cast<int>(int());\n"
            "bool f() { return false || is_function_constant_defined(mine); }\n");
  EXPECT_EQ(declared.size(), 2u);
  // A malformed declaration names the header and its line.
  try {
    specialize_included_function_constants("int x;\nconstant int bad [[function_constant(x)]];\n", "c.h", declared);
    FAIL() << "accepted";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_NE(std::string(e.what()).find("c.h"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace alloy::msl

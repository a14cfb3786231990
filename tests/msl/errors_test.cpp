// Errors the front end finds itself: CompileError naming the user's file,
// line and column, and quoting the line with a caret.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

KernelSpec spec(std::string source, std::string header = "") { return test::kernel(std::move(source), std::move(header)); }

// Translates for both C++ targets; returns the error (the same for both).
CompileError error_of(const KernelSpec& s) {
  std::optional<CompileError> first;
  for (Target t : {Target::Cpp, Target::Cuda}) {
    try {
      translate(s, t);
      ADD_FAILURE() << "no CompileError";
    } catch (const CompileError& e) {
      if (first) EXPECT_STREQ(e.what(), first->what());
      else first = e;
    }
  }
  return first.value_or(CompileError("none", "", 0, 0));
}

TEST(MslErrors, InvalidVectorWidthQuotesTheLine) {
  CompileError e = error_of(spec("\n  uint i = thread_position_in_grid.x;\n  half8 v = half8(0);\n"));
  EXPECT_EQ(e.file(), "source");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 3);
  EXPECT_EQ(std::string(e.what()),
            "[msl::translate] source:3:3: error: invalid vector type 'half8': Metal vectors have "
            "2, 3 or 4 components, not 8\n"
            "     3 |   half8 v = half8(0);\n"
            "       |   ^\n");
}

TEST(MslErrors, InvalidWidthsInEveryForm) {
  struct Case {
    std::string code;
    int col;
    std::string name;
  };
  for (const Case& c : std::vector<Case>{{"float5 a;", 1, "float5"},
                                        {"uint x = 0; packed_float8 b;", 13, "packed_float8"},
                                        {"auto m = float2x5(0);", 10, "float2x5"},
                                        {"int a = sizeof(metal::ushort5);", 23, "ushort5"},
                                        {"vec<float, 4> ok; bfloat1 one;", 19, "bfloat1"}}) {
    CompileError e = error_of(spec(c.code));
    EXPECT_EQ(e.line(), 1) << c.code;
    EXPECT_EQ(e.column(), c.col) << c.code;
    EXPECT_NE(std::string(e.what()).find("'" + c.name + "'"), std::string::npos) << e.what();
  }
}

TEST(MslErrors, ValidAndUserDeclaredNamesPass) {
  // Metal's own widths and matrices, bit-width lookalikes, and names the user declares.
  for (const std::string& code :
       {std::string("float4 a; packed_half3 b; float3x4 m; ushort2 u; bool4 q; uint8_t c;"),
        std::string("int int8 = 0; int uint16 = int8;"),
        std::string("out[0] = 0;  // half8 in a comment, \"float5\" in a string")}) {
    EXPECT_NO_THROW(translate(spec(code), Target::Cpp)) << code;
  }
  EXPECT_NO_THROW(translate(spec("half8 v; v.lo = 0;", "struct half8 { half4 lo, hi; };"),
                            Target::Cpp));
  EXPECT_NO_THROW(translate(spec("float8 v = make8();", "typedef vec<float, 8> float8;\n"
                                                        "inline float8 make8() { return {}; }"),
                            Target::Cpp));
  EXPECT_NO_THROW(translate(spec("#define half8 vec<half, 8>\nhalf8 v;"), Target::Cpp));
}

TEST(MslErrors, InvalidWidthInTheHeader) {
  CompileError e = error_of(spec("out[0] = 0;", "inline float f() {\n\tfloat16 x = 0;\n\treturn x; }"));
  EXPECT_EQ(e.file(), "header");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.column(), 2);
  // The caret keeps the tab so it lines up under the name.
  EXPECT_NE(std::string(e.what()).find("     2 | \tfloat16 x = 0;\n       | \t^\n"),
            std::string::npos)
      << e.what();
}

TEST(MslErrors, UnbalancedBraces) {
  CompileError e = error_of(spec("\n  if (inp[0] > 0) {\n    out[0] = 1;\n  }\n  }\n"));
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.column(), 3);
  EXPECT_NE(std::string(e.what()).find("source:5:3: error: unmatched '}'\n"
                                       "     5 |   }\n"
                                       "       |   ^\n"),
            std::string::npos)
      << e.what();

  e = error_of(spec("for (int i = 0; i < 4; ++i) {\n  out[i] = inp[i];\n"));
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.column(), 29);
  EXPECT_NE(std::string(e.what()).find("unclosed '{'"), std::string::npos);

  e = error_of(spec("out[0] = (inp[0] + 1];"));
  EXPECT_EQ(e.column(), 21);
  EXPECT_NE(std::string(e.what()).find("']' does not close the '(' opened at source:1:10"),
            std::string::npos)
      << e.what();

  e = error_of(spec("out[0] = 0;", "inline float f() { return 0; "));
  EXPECT_EQ(e.file(), "header");
  EXPECT_EQ(e.column(), 18);
}

TEST(MslErrors, BracketsInsideCommentsStringsAndBalancedMacrosAreFine) {
  EXPECT_NO_THROW(translate(spec("// }\nout[0] = '}' + \"{\"[0]; /* ( */\n"
                                 "#define APPLY(x) do { (x) += 1; } while (0)\nAPPLY(out[0]);"),
                            Target::Cpp));
  // A macro that opens what the code closes cannot be checked: no false error.
  EXPECT_NO_THROW(translate(spec("#define LOOP(n) for (int i = 0; i < n; ++i) {\n"
                                 "LOOP(4) out[i] = 0; }"),
                            Target::Cpp));
}

TEST(MslErrors, LexErrorsNameTheirPlace) {
  CompileError e = error_of(spec("out[0] = 0;\n  /* not closed"));
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.column(), 3);
  EXPECT_NE(std::string(e.what()).find("[msl::lex] source:2:3: error: unterminated /* comment"),
            std::string::npos)
      << e.what();
}

}  // namespace
}  // namespace alloy::msl

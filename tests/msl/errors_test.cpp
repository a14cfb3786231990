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

// Variables Metal keeps constant: mutable ones at program scope, `static`
// ones in a function and thread_local ones are errors naming the variable;
// constant, constexpr and const ones, struct members, functions, macros
// and what an `#if` may drop are not.
TEST(MslErrors, MutableStorageOutsideThreads) {
  CompileError g = error_of(spec("out[0] = g;", "struct S { int n; };\nfloat g = 1;"));
  EXPECT_EQ(g.file(), "header");
  EXPECT_EQ(g.line(), 2);
  EXPECT_EQ(g.column(), 7);
  EXPECT_NE(std::string(g.what()).find("program-scope variable 'g' must be declared in the constant address space"),
            std::string::npos);
  CompileError st = error_of(spec("static int calls = 0; calls += 1; out[0] = calls;"));
  EXPECT_EQ(st.column(), 12);
  EXPECT_NE(std::string(st.what()).find("static variable 'calls' must be constant"), std::string::npos);
  CompileError tl = error_of(spec("out[0] = 1;", "inline float f() { thread_local float t = 0; return t; }"));
  EXPECT_NE(std::string(tl.what()).find("no thread_local"), std::string::npos);
  CompileError sv = error_of(spec("out[0] = 1;", "struct S { float v; } s;"));
  EXPECT_NE(std::string(sv.what()).find("variable 's'"), std::string::npos);
  for (const char* ok : {"constant float g = 1; constexpr int n = 2; const int m = 3; static constant float h[2] = {1, 2};",
                         "struct S { float a; static constexpr int k = 4; float f() const { return a; } };",
                         "namespace q { constant int z = 1; inline int f(int x) { static constexpr int c = 2; "
                         "int y = x; return y + c; } }",
                         "template <class T> struct W { T v; }; using I = int; typedef float F; enum E { A, B };",
                         "#if 0\nfloat dropped = 0;\n#endif\nDEFINE_THING int x;",
                         "inline float g(float x) { auto l = [&](float y) { float t = y; return t; }; return l(x); }"}) {
    EXPECT_NO_THROW(translate(spec("out[0] = 1;", ok), Target::Cpp)) << ok;
  }
}

// C++ that Metal leaves out is refused at its word, in the body and the
// header, on both targets; `= delete`, `operator new`, names that only
// contain the words, strings and what an `#if` may drop are not.
TEST(MslErrors, CppFeaturesMetalLacks) {
  struct Case {
    std::string source, header;
    int line, col;
    std::string what;
  };
  for (const Case& c : std::vector<Case>{
           {"float x = 1;\n  double d = x;\n  out[0] = d;", "", 2, 3, "no 'double' type"},
           {"out[0] = 1;", "inline long double f(float x) { return x; }", 1, 13, "no 'double' type"},
           {"uint i = thread_position_in_grid.x;\nif (i > 0) goto done;\nout[i] = 1;\ndone:;", "", 2, 12, "no 'goto'"},
           {"out[0] = 1;", "struct B {\n  virtual float f() { return 1; }\n};", 2, 3, "no virtual functions"},
           {"out[0] = 1;", "struct B { float f() { return dynamic_cast<B*>(this) ? 1 : 0; } };", 1, 31, "dynamic_cast"},
           {"auto p = new float[4];\nout[0] = p[0];", "", 1, 10, "no 'new'"},
           {"float* p = nullptr; delete p; out[0] = 1;", "", 1, 21, "no 'delete'"},
           {"out[0] = 1;", "inline float f(float x) { if (x < 0) throw 1; return x; }", 1, 38, "no exceptions ('throw')"},
       }) {
    CompileError e = error_of(spec(c.source, c.header));
    EXPECT_EQ(e.file(), c.header.empty() ? "source" : "header") << c.source << c.header;
    EXPECT_EQ(e.line(), c.line) << c.source << c.header;
    EXPECT_EQ(e.column(), c.col) << c.source << c.header;
    EXPECT_NE(std::string(e.what()).find(c.what), std::string::npos) << e.what();
  }
  for (const char* ok : {"struct N { N(const thread N&) = delete; float doubled; };",
                         "constant char* label = \"double goto new\";",
                         "#if 0\ninline double f() { return 0; }\n#endif",
                         "#define TWICE(x) (2 * (x))\ninline float renew(float try_again) { return TWICE(try_again); }"}) {
    EXPECT_NO_THROW(translate(spec("out[0] = 1;", ok), Target::Cpp)) << ok;
  }
}

// Overloads on address spaces alone are one C++ function: identical
// bodies are kept once, different ones are an error at the repeat's name.
TEST(MslErrors, OverloadsOnAddressSpacesAlone) {
  CompileError e = error_of(spec("out[0] = 1;", "inline float ld(const device float* p) { return p[0]; }\n"
                                                "inline float ld(const threadgroup float* p) { return p[1]; }"));
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.column(), 14);
  EXPECT_NE(std::string(e.what()).find("'ld' is defined again for another address space"), std::string::npos);
  for (const char* ok : {"inline float ld(const device float* p) { return p[0]; }\n"
                         "inline float ld(const threadgroup float* p) { return p[0]; }",
                         "#if A\ninline float f(device float* p) { return 1; }\n#else\n"
                         "inline float f(threadgroup float* p) { return 2; }\n#endif"}) {
    EXPECT_NO_THROW(translate(spec("out[0] = 1;", ok), Target::Cpp)) << ok;
  }
  // MLX's _NoMask: operator bool() for thread, and const for three spaces.
  const std::string src =
      translate(spec("out[0] = 1;", "struct M { bool operator bool() thread { return true; } bool operator bool() "
                                    "const device { return true; } bool operator bool() const constant { return "
                                    "true; } };"),
                Target::Cpp)
          .source;
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = src.find(what); at != std::string::npos; at = src.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("operator bool() const"), 1u);
  EXPECT_EQ(count("operator bool()"), 2u);
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

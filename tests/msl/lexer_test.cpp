// The lexer: token kinds, exact token boundaries and positions.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "msl/lexer.h"

namespace alloy::msl {
namespace {

std::vector<std::string> texts(const std::vector<Token>& toks) {
  std::vector<std::string> out;
  for (const Token& t : toks) out.push_back(t.text);
  return out;
}

TEST(MslLexer, NumbersWithSuffixesAreSingleTokens) {
  auto toks = lex("1.0h 1.0f 0x1Fu 1e-3 1.5E+10f .5 1'000 42ul 0.5H 3");
  ASSERT_EQ(toks.size(), 10u);
  for (const Token& t : toks) EXPECT_EQ(t.kind, TokenKind::Number) << t.text;
  EXPECT_EQ(texts(toks), (std::vector<std::string>{"1.0h", "1.0f", "0x1Fu", "1e-3", "1.5E+10f",
                                                   ".5", "1'000", "42ul", "0.5H", "3"}));
}

TEST(MslLexer, ExponentSignOnlyAfterExponentLetter) {
  // `a-1` is three tokens; `1-1` too: the sign belongs to a number only after e/E/p/P.
  EXPECT_EQ(texts(lex("1-1 a-1 2e-1")),
            (std::vector<std::string>{"1", "-", "1", "a", "-", "1", "2e-1"}));
}

TEST(MslLexer, LongestMatchPunctuators) {
  EXPECT_EQ(texts(lex("a <<= b >>= c :: d -> e ... f <=> g && h || i ++ j != k")),
            (std::vector<std::string>{"a", "<<=", "b", ">>=", "c", "::", "d", "->", "e", "...",
                                      "f", "<=>", "g", "&&", "h", "||", "i", "++", "j", "!=",
                                      "k"}));
}

TEST(MslLexer, AttributeBracketsOnlyForAttributes) {
  EXPECT_EQ(texts(lex("[[kernel]] void f(uint3 p [[thread_position_in_grid]])")),
            (std::vector<std::string>{"[[", "kernel", "]]", "void", "f", "(", "uint3", "p", "[[",
                                      "thread_position_in_grid", "]]", ")"}));
  // Nested subscripts close with two separate `]`.
  EXPECT_EQ(texts(lex("x[idx[i]] = y[a[b[c]]];")),
            (std::vector<std::string>{"x", "[", "idx", "[", "i", "]", "]", "=", "y", "[", "a",
                                      "[", "b", "[", "c", "]", "]", "]", ";"}));
  // A subscript inside an attribute argument does not end the attribute early.
  EXPECT_EQ(texts(lex("[[deprecated(a[0])]]")),
            (std::vector<std::string>{"[[", "deprecated", "(", "a", "[", "0", "]", ")", "]]"}));
}

TEST(MslLexer, StringsAndCharsWithEscapesAndPrefixes) {
  auto toks = lex(R"(f("a\"b", 'c', '\'', u8"x", R"d(raw ) " text)d"))");
  std::vector<std::string> want = {"f",   "(",      "\"a\\\"b\"", ",", "'c'", ",",
                                   "'\\''", ",",    "u8\"x\"",    ",", "R\"d(raw ) \" text)d\"",
                                   ")"};
  EXPECT_EQ(texts(toks), want);
  EXPECT_EQ(toks[2].kind, TokenKind::String);
  EXPECT_EQ(toks[4].kind, TokenKind::Char);
  EXPECT_EQ(toks[10].kind, TokenKind::String);
}

TEST(MslLexer, CommentsSkippedOrKept) {
  const char* src = "a // line comment\n/* block\n comment */ b";
  EXPECT_EQ(texts(lex(src)), (std::vector<std::string>{"a", "b"}));
  LexOptions keep;
  keep.keep_comments = true;
  auto toks = lex(src, keep);
  ASSERT_EQ(toks.size(), 4u);
  EXPECT_EQ(toks[1].kind, TokenKind::Comment);
  EXPECT_EQ(toks[1].text, "// line comment");
  EXPECT_EQ(toks[2].text, "/* block\n comment */");
  EXPECT_EQ(toks[2].line, 2);
  EXPECT_EQ(toks[3].line, 3);
  EXPECT_EQ(toks[3].col, 13);
}

TEST(MslLexer, PositionsAreLineAndByteColumn) {
  auto toks = lex("uint a;\n\tfloat  b = 1.0h;\n");
  ASSERT_EQ(toks.size(), 8u);
  EXPECT_EQ(toks[3].text, "float");
  EXPECT_EQ(toks[3].line, 2);
  EXPECT_EQ(toks[3].col, 2);  // after a tab, counted as one byte
  EXPECT_EQ(toks[4].col, 9);
  EXPECT_EQ(toks[6].text, "1.0h");
  EXPECT_EQ(toks[6].col, 13);
  EXPECT_EQ(toks[6].begin, 20u);
  EXPECT_EQ(toks[6].end, 24u);
}

TEST(MslLexer, PreprocessorLinesAreSingleTokens) {
  auto toks = lex("  #define SQ(x) \\\n   ((x) * (x))\nint y = a # b;\n#include <metal_stdlib>\n");
  ASSERT_GE(toks.size(), 2u);
  EXPECT_EQ(toks[0].kind, TokenKind::Directive);
  EXPECT_EQ(toks[0].text, "#define SQ(x) \\\n   ((x) * (x))");
  EXPECT_EQ(toks[0].col, 3);
  EXPECT_EQ(directive_name(toks[0]), "define");
  // `#` in the middle of a line is a punctuator, not a directive.
  EXPECT_EQ(toks[4].text, "a");
  EXPECT_EQ(toks[5].text, "#");
  EXPECT_EQ(toks[5].kind, TokenKind::Punct);
  EXPECT_EQ(toks.back().kind, TokenKind::Directive);
  EXPECT_EQ(toks.back().text, "#include <metal_stdlib>");
  EXPECT_EQ(toks.back().line, 4);
}

TEST(MslLexer, DefineBodyIsFoundAfterNameAndParameters) {
  std::string src = "#define SQ(x) ((x)*(x))\n#define N 32\n#define F (1)\n#define EMPTY\n";
  auto toks = lex(src);
  ASSERT_EQ(toks.size(), 4u);
  TextRange r;
  ASSERT_TRUE(define_body(src, toks[0], r));
  EXPECT_EQ(src.substr(r.begin, r.end - r.begin), "((x)*(x))");
  EXPECT_EQ(r.col, 15);
  ASSERT_TRUE(define_body(src, toks[1], r));
  EXPECT_EQ(src.substr(r.begin, r.end - r.begin), "32");
  ASSERT_TRUE(define_body(src, toks[2], r));  // `(` after a space: object-like macro
  EXPECT_EQ(src.substr(r.begin, r.end - r.begin), "(1)");
  ASSERT_TRUE(define_body(src, toks[3], r));
  EXPECT_EQ(r.begin, r.end);
}

TEST(MslLexer, MacroBodiesBecomeCodeTokens) {
  auto toks = lex_text("#define IDX thread_position_in_grid.x\n#pragma once\nint a;", "source").code;
  EXPECT_EQ(texts(toks),
            (std::vector<std::string>{"thread_position_in_grid", ".", "x", "int", "a", ";"}));
  EXPECT_EQ(toks[0].line, 1);
  EXPECT_EQ(toks[0].col, 13);
}

TEST(MslLexer, UnterminatedCommentNamesItsStart) {
  try {
    LexOptions o;
    o.file = "header";
    lex("int a;\n  /* never closed\n", o);
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.file(), "header");
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 3);
    EXPECT_NE(std::string(e.what()).find("unterminated /* comment"), std::string::npos);
  }
}

TEST(MslLexer, UnterminatedStringNamesItsStart) {
  try {
    lex("float x;\nauto s = \"abc\n;");
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 10);
  }
}

// What translate() hands the passes: the tokens lex() gives and the code
// with macro bodies in place, each at the user's own line and column; an
// error names the file it was lexed as.
TEST(MslLexer, LexedTextHoldsTokensAndCode) {
  const std::string src = "a /* c */ b\n#define SQ(x) x*x\nSQ(c)";
  LexedText t = lex_text(src, "header");
  EXPECT_EQ(texts(t.tokens), texts(lex(src)));
  EXPECT_EQ(texts(t.tokens), (std::vector<std::string>{"a", "b", "#define SQ(x) x*x", "SQ", "(", "c", ")"}));
  EXPECT_EQ(texts(t.code), (std::vector<std::string>{"a", "b", "x", "*", "x", "SQ", "(", "c", ")"}));
  EXPECT_EQ(t.code[2].line, 2);
  EXPECT_EQ(t.code[2].col, 15);
  for (const char* file : {"source", "header"}) {
    try {
      lex_text("a /* open", file);
      ADD_FAILURE() << "no error for " << file;
    } catch (const CompileError& e) {
      EXPECT_EQ(e.file(), file);
    }
  }
}

}  // namespace
}  // namespace alloy::msl

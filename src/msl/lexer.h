// Tokens of MSL (C++14-like) source with their positions. Everything the
// front end decides is decided on these tokens, never on substrings.
#pragma once

#include <cstddef>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace alloy::msl {

struct KernelSpec;

enum class TokenKind {
  Identifier,  // also keywords: the front end tells them apart by text
  Number,      // a C++ pp-number: 1, 1.0h, 0x1Fu, 1e-3, 2.5f
  String,      // "..." with any prefix, raw strings included
  Char,        // 'a'
  Punct,       // operators and punctuators, longest match; `[[` and `]]` of attributes
  Comment,     // only with LexOptions::keep_comments
  Directive    // a whole preprocessor line, continuations included, no newline
};

struct Token {
  TokenKind kind = TokenKind::Punct;
  std::string text;
  int line = 1;            // 1-based
  int col = 1;             // 1-based, in bytes
  std::size_t begin = 0;   // byte offsets of the token in the lexed text
  std::size_t end = 0;

  bool is(std::string_view s) const { return text == s; }
  bool is_ident(std::string_view s) const { return kind == TokenKind::Identifier && text == s; }
  bool is_punct(std::string_view s) const { return kind == TokenKind::Punct && text == s; }
};

struct LexOptions {
  bool keep_comments = false;
  bool directives = true;      // false inside a #define body: `#` is the stringize operator
  std::string file = "source"; // named by errors
};

// Lexes `text`; throws CompileError on an unterminated comment, string or char.
std::vector<Token> lex(std::string_view text, const LexOptions& options = {});

// Lexes text[begin, end), where offset `begin` is at (line, col); positions
// and offsets stay those of the whole text.
std::vector<Token> lex_range(std::string_view text, std::size_t begin, std::size_t end, int line,
                             int col, const LexOptions& options);

// A preprocessor directive's name: "define" for "#  define X 1"; "" for a null directive.
std::string directive_name(const Token& directive);

// How a token changes the nesting of conditional blocks: +1 for #if,
// #ifdef and #ifndef, -1 for #endif, 0 for anything else.
int conditional_nesting(const Token& token);

// The part of a #define directive after its name and parameter list, as
// [begin, end) offsets with the position of `begin`. For `#define SQ(x) ((x)*(x))`
// it is `((x)*(x))`. Returns false for other directives.
struct TextRange {
  std::size_t begin = 0, end = 0;
  int line = 1, col = 1;
};
// `name`, when given, receives the macro's name.
bool define_body(std::string_view text, const Token& directive, TextRange& body, std::string* name = nullptr);

// A function-like #define's parameter list as written, `...` included
// (`#define SQ(x) ...` gives {"x"}, `#define F() ...` none); nullopt for
// other directives and object-like macros.
std::optional<std::vector<std::string>> macro_parameters(std::string_view text, const Token& directive);

// How many texts lex() has lexed on this thread: tests check with it that a
// translation lexes each of its texts once.
std::size_t lex_count();

// One of the user's texts lexed once for a whole translation: the passes
// read these tokens instead of lexing the text again.
struct LexedText {
  std::string_view text;      // the user's text, which must outlive this
  std::string file;           // "source" or "header", named by errors
  std::vector<Token> tokens;  // lex(text) as `file`: code and directives, no comments
  // The code, with the bodies of the #define directives lexed into tokens
  // and put in place of each directive, so that analysis sees what macros
  // use. Comments and other directives are left out.
  std::vector<Token> code;
  // The macros whose bodies contain an identifier (a value a macro may
  // compute from anything, a thread's position included).
  std::set<std::string> macros_naming_anything;
};

// Throws CompileError as lex() does, or for a #define body that does not lex.
LexedText lex_text(std::string_view text, const std::string& file);

// A kernel's source and header, lexed in that order (so a lex error in the
// source is the one reported). The spec must outlive it.
// One of MLX's kernel headers the kernel includes (msl/includes.h): its
// path as written, e.g. "mlx/backend/metal/kernels/steel/gemm/mma.h", its
// text and its tokens.
struct IncludedFile {
  std::string path;
  std::unique_ptr<std::string> text;  // owned here: `lexed` points into it
  LexedText lexed;
};

// `includes`: the MLX headers the source and header include, dependencies
// first, each once.
struct LexedKernel {
  LexedText source, header;
  std::vector<IncludedFile> includes;
};
LexedKernel lex_kernel(const KernelSpec& spec);

}  // namespace alloy::msl

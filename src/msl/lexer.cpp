#include "msl/lexer.h"
#include "msl/includes.h"

#include <array>
#include <cctype>

#include "alloy/msl/translate.h"
#include "msl/source_text.h"

namespace alloy::msl {
namespace {

constexpr std::string_view kWhere = "msl::lex";

// Longest first within each length, so the first match is the longest.
constexpr std::string_view kPuncts[] = {
    "<=>", "<<=", ">>=", "...", "->*",  //
    "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=",
    "/=", "%=", "&=", "|=", "^=", ".*", "##",  //
    "{", "}", "(", ")", "[", "]", ";", ":", ",", ".", "+", "-", "*", "/", "%", "<", ">"};

// kPuncts by first byte, in kPuncts' order: a lexer looks at the few that
// can match instead of all of them.
const std::vector<std::string_view>& puncts_starting_with(char c) {
  static const auto by_first = [] {
    std::array<std::vector<std::string_view>, 256> t;
    for (std::string_view p : kPuncts) t[static_cast<unsigned char>(p[0])].push_back(p);
    return t;
  }();
  return by_first[static_cast<unsigned char>(c)];
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

bool string_prefix(std::string_view s) {
  return s == "u8" || s == "u" || s == "U" || s == "L" || s == "R" || s == "u8R" || s == "uR" ||
         s == "UR" || s == "LR";
}

class Lexer {
 public:
  Lexer(std::string_view text, std::size_t begin, std::size_t end, int line, int col,
        const LexOptions& options)
      : text_(text), pos_(begin), end_(end), line_(line), col_(col), opt_(options) {
    // A #define body starts mid-line: `#` there is not a directive.
    at_line_start_ = options.directives && (begin == 0 || text[begin - 1] == '\n');
  }

  std::vector<Token> run() {
    while (true) {
      skip_space();
      if (pos_ >= end_) break;
      lex_one();
    }
    return std::move(tokens_);
  }

 private:
  char at(std::size_t i) const { return i < end_ ? text_[i] : '\0'; }

  void advance(std::size_t n = 1) {
    for (std::size_t k = 0; k < n && pos_ < end_; ++k) {
      if (text_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
      ++pos_;
    }
  }

  // Whitespace and line splices; comments too unless they are kept.
  void skip_space() {
    while (pos_ < end_) {
      char c = text_[pos_];
      if (c == '\n') {
        advance();
        at_line_start_ = opt_.directives;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else if (c == '\\' && (at(pos_ + 1) == '\n' ||
                               (at(pos_ + 1) == '\r' && at(pos_ + 2) == '\n'))) {
        advance(at(pos_ + 1) == '\n' ? 2 : 3);
      } else if (c == '/' && (at(pos_ + 1) == '/' || at(pos_ + 1) == '*') && !opt_.keep_comments) {
        skip_comment();
      } else {
        return;
      }
    }
  }

  void skip_comment() {
    int line = line_, col = col_;
    if (at(pos_ + 1) == '/') {
      while (pos_ < end_ && text_[pos_] != '\n') advance();
      return;
    }
    advance(2);
    while (pos_ < end_ && !(text_[pos_] == '*' && at(pos_ + 1) == '/')) advance();
    if (pos_ >= end_)
      throw_compile_error(kWhere, opt_.file, text_, line, col, "unterminated /* comment");
    advance(2);
  }

  void push(TokenKind kind, std::size_t begin, int line, int col) {
    Token t;
    t.kind = kind;
    t.text = std::string(text_.substr(begin, pos_ - begin));
    t.line = line;
    t.col = col;
    t.begin = begin;
    t.end = pos_;
    tokens_.push_back(std::move(t));
  }

  void lex_one() {
    std::size_t b = pos_;
    int line = line_, col = col_;
    char c = text_[pos_];
    bool line_start = at_line_start_;
    at_line_start_ = false;

    if (c == '/' && (at(pos_ + 1) == '/' || at(pos_ + 1) == '*')) {
      skip_comment();
      push(TokenKind::Comment, b, line, col);
    } else if (c == '#' && line_start) {
      lex_directive();
      push(TokenKind::Directive, b, line, col);
    } else if (ident_start(c)) {
      std::size_t e = pos_ + 1;
      while (e < end_ && ident_char(text_[e])) ++e;
      col_ += static_cast<int>(e - pos_);  // identifiers hold no newline
      pos_ = e;
      std::string_view word = text_.substr(b, pos_ - b);
      if ((at(pos_) == '"' || at(pos_) == '\'') && string_prefix(word)) {
        bool raw = word.back() == 'R';
        char quote = at(pos_);
        if (raw && quote == '"') {
          lex_raw_string(line, col);
        } else {
          lex_quoted(quote, line, col);
        }
        push(quote == '"' ? TokenKind::String : TokenKind::Char, b, line, col);
      } else {
        push(TokenKind::Identifier, b, line, col);
      }
    } else if (digit(c) || (c == '.' && digit(at(pos_ + 1)))) {
      lex_number();
      push(TokenKind::Number, b, line, col);
    } else if (c == '"' || c == '\'') {
      lex_quoted(c, line, col);
      push(c == '"' ? TokenKind::String : TokenKind::Char, b, line, col);
    } else {
      lex_punct();
      push(TokenKind::Punct, b, line, col);
    }
  }

  // A pp-number: digits, letters, `_`, `.`, digit separators and signed exponents.
  void lex_number() {
    advance();
    while (pos_ < end_) {
      char c = text_[pos_];
      char n = at(pos_ + 1);
      if ((c == 'e' || c == 'E' || c == 'p' || c == 'P') && (n == '+' || n == '-')) {
        advance(2);
      } else if (ident_char(c) || c == '.') {
        advance();
      } else if (c == '\'' && ident_char(n)) {
        advance(2);
      } else {
        break;
      }
    }
  }

  void lex_quoted(char quote, int line, int col) {
    advance();  // opening quote
    while (true) {
      char c = at(pos_);
      if (pos_ >= end_ || c == '\n')
        throw_compile_error(kWhere, opt_.file, text_, line, col,
                            quote == '"' ? "unterminated string literal"
                                         : "unterminated character literal");
      if (c == '\\') {
        advance(2);
      } else if (c == quote) {
        advance();
        return;
      } else {
        advance();
      }
    }
  }

  void lex_raw_string(int line, int col) {
    advance();  // "
    std::size_t d = pos_;
    while (pos_ < end_ && text_[pos_] != '(' && text_[pos_] != '\n') advance();
    if (at(pos_) != '(')
      throw_compile_error(kWhere, opt_.file, text_, line, col, "malformed raw string literal");
    std::string close(1, ')');
    close.append(text_.substr(d, pos_ - d));
    close.push_back('"');
    std::size_t found = text_.substr(0, end_).find(close, pos_);
    if (found == std::string_view::npos)
      throw_compile_error(kWhere, opt_.file, text_, line, col, "unterminated raw string literal");
    advance(found + close.size() - pos_);
  }

  // The rest of a preprocessor line: continuations, comments and strings in it.
  void lex_directive() {
    while (pos_ < end_) {
      char c = text_[pos_];
      if (c == '\n') break;
      if (c == '\\' && (at(pos_ + 1) == '\n' || (at(pos_ + 1) == '\r' && at(pos_ + 2) == '\n'))) {
        advance(at(pos_ + 1) == '\n' ? 2 : 3);
      } else if (c == '/' && at(pos_ + 1) == '*') {
        skip_comment();  // may span lines and still belong to the directive
      } else if (c == '/' && at(pos_ + 1) == '/') {
        while (pos_ < end_ && text_[pos_] != '\n') advance();
      } else if (c == '"' || c == '\'') {
        // `#include <a'b>` or an apostrophe in #error text must not fail the lex.
        std::size_t save = pos_;
        int l = line_, co = col_;
        std::size_t close = text_.find(c, pos_ + 1);
        std::size_t nl = text_.find('\n', pos_ + 1);
        if (close != std::string_view::npos && close < end_ && (nl == std::string_view::npos ||
                                                                close < nl)) {
          lex_quoted(c, l, co);
        } else {
          pos_ = save;
          advance();
        }
      } else {
        advance();
      }
    }
  }

  void lex_punct() {
    // Attributes: `[[` opens one; `]]` closes it only while one is open, so
    // that `a[b[c]]` stays two `]`.
    if (text_[pos_] == '[' && at(pos_ + 1) == '[') {
      attr_depth_.push_back(0);
      advance(2);
      return;
    }
    if (!attr_depth_.empty()) {
      if (text_[pos_] == '[') ++attr_depth_.back();
      if (text_[pos_] == ']') {
        if (attr_depth_.back() == 0 && at(pos_ + 1) == ']') {
          attr_depth_.pop_back();
          advance(2);
          return;
        }
        if (attr_depth_.back() > 0) --attr_depth_.back();
      }
    }
    std::string_view rest = text_.substr(pos_, end_ - pos_);
    for (std::string_view p : puncts_starting_with(rest[0])) {
      if (rest.starts_with(p)) {
        advance(p.size());
        return;
      }
    }
    advance();  // one character: = & | ^ ~ ! ? # or a byte the compiler will name
  }

  std::string_view text_;
  std::size_t pos_, end_;
  int line_, col_;
  const LexOptions& opt_;
  bool at_line_start_ = true;
  std::vector<int> attr_depth_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_range(std::string_view text, std::size_t begin, std::size_t end, int line,
                             int col, const LexOptions& options) {
  return Lexer(text, begin, end, line, col, options).run();
}

namespace {
thread_local std::size_t lexes = 0;  // see lex_count()
}  // namespace

std::vector<Token> lex(std::string_view text, const LexOptions& options) {
  ++lexes;
  return lex_range(text, 0, text.size(), 1, 1, options);
}

std::size_t lex_count() { return lexes; }

std::string directive_name(const Token& directive) {
  const std::string& t = directive.text;
  std::size_t i = 1;  // after '#'
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
  std::size_t b = i;
  while (i < t.size() && ident_char(t[i])) ++i;
  return t.substr(b, i - b);
}

int conditional_nesting(const Token& token) {
  if (token.kind != TokenKind::Directive) return 0;
  const std::string word = directive_name(token);
  if (word == "if" || word == "ifdef" || word == "ifndef") return 1;
  return word == "endif" ? -1 : 0;
}

bool define_body(std::string_view text, const Token& directive, TextRange& body, std::string* name) {
  if (directive.kind != TokenKind::Directive || directive_name(directive) != "define") return false;
  // Lex the directive's own text after '#' (no directives inside) to find the name.
  LexOptions opt;
  opt.directives = false;
  std::vector<Token> toks = lex_range(text, directive.begin + 1, directive.end, directive.line,
                                      directive.col + 1, opt);
  // toks[0] = define, toks[1] = NAME, then `(` params `)` only if `(` touches the name.
  if (name) *name = toks.size() >= 2 ? toks[1].text : std::string();
  if (toks.size() < 2) {
    body = {directive.end, directive.end, directive.line, directive.col};
    return true;
  }
  std::size_t k = 2;
  if (k < toks.size() && toks[k].is_punct("(") && toks[k].begin == toks[1].end) {
    while (k < toks.size() && !toks[k].is_punct(")")) ++k;
    ++k;
  }
  if (k >= toks.size()) {
    body = {directive.end, directive.end, directive.line, directive.col};
    return true;
  }
  body = {toks[k].begin, directive.end, toks[k].line, toks[k].col};
  return true;
}

std::optional<std::vector<std::string>> macro_parameters(std::string_view text, const Token& directive) {
  TextRange body;
  if (!define_body(text, directive, body)) return std::nullopt;
  LexOptions opt;
  opt.directives = false;
  std::vector<Token> head = lex_range(text, directive.begin + 1, body.begin, directive.line, directive.col + 1, opt);
  // `define`, the name, then `(` touching the name for a function-like macro.
  if (head.size() < 3 || !head[2].is_punct("(") || head[2].begin != head[1].end) return std::nullopt;
  std::vector<std::string> params;
  for (std::size_t k = 3; k < head.size() && !head[k].is_punct(")"); ++k)
    if (!head[k].is_punct(",")) params.push_back(head[k].text);
  return params;
}

LexedText lex_text(std::string_view text, const std::string& file) {
  LexedText out{text, file};
  LexOptions opt;
  opt.file = file;
  out.tokens = lex(text, opt);
  LexOptions inner = opt;
  inner.directives = false;
  for (const Token& t : out.tokens) {
    if (t.kind != TokenKind::Directive) {
      out.code.push_back(t);
      continue;
    }
    TextRange body;
    std::string name;
    if (!define_body(text, t, body, &name)) continue;
    for (Token& m : lex_range(text, body.begin, body.end, body.line, body.col, inner)) {
      if (m.kind == TokenKind::Identifier && !name.empty()) out.macros_naming_anything.insert(name);
      out.code.push_back(std::move(m));
    }
  }
  return out;
}

LexedKernel lex_kernel(const KernelSpec& spec) {
  // A braced list is evaluated in order: the source is lexed first.
  LexedKernel k{lex_text(spec.source, "source"), lex_text(spec.header, "header"), {}};
  k.includes = resolve_mlx_includes({&k.header, &k.source});
  return k;
}

}  // namespace alloy::msl

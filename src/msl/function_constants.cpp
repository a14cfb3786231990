// Metal function constants in whole programs: program-scope
// `constant T name [[function_constant(index)]];` declarations, given their
// values per kernel (Metal sets them when it makes the pipeline's function).
// Specialising rewrites the program's text in place, on one line, so every
// later stage (and every error) sees the user's line numbers.
#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "alloy/msl/program.h"
#include "msl/lexer.h"
#include "msl/source_text.h"

namespace alloy::msl {
namespace {

struct Found {
  FunctionConstant constant;
  std::size_t attribute_begin = 0, attribute_end = 0;  // the `[[function_constant(i)]]` bytes
};

// `where` and `file` name the op and the text in errors ("metal_library",
// "source"; "metal_kernel", "header").
std::vector<Found> scan(const std::string& source, const std::vector<Token>& toks, std::string_view where,
                        const std::string& file) {
  std::vector<Found> out;
  int braces = 0;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.is_punct("{")) ++braces;
    if (t.is_punct("}")) --braces;
    // `[[ function_constant ( N ) ]]` after `constant <type...> name`, at program scope.
    if (!t.is_ident("function_constant") || i < 3 || !toks[i - 1].is_punct("[[")) continue;
    // A kernel parameter with [[function_constant(name)]] (an optional argument) is not a declaration.
    if (braces != 0) continue;
    auto bad = [&](const std::string& what) {
      throw_compile_error(where, file, source, t.line, t.col, what);
    };
    const Token& name = toks[i - 2];
    if (name.kind != TokenKind::Identifier) bad("a function constant is declared `constant T name [[function_constant(index)]];`");
    std::size_t k = i - 3;
    while (k > 0 && !toks[k].is_ident("constant") && !toks[k].is_punct(";") && !toks[k].is_punct("}")) --k;
    if (!toks[k].is_ident("constant") || k + 1 >= i - 2) {
      bad("a function constant is declared `constant T name [[function_constant(index)]];`");
    }
    std::string type;
    for (std::size_t j = k + 1; j < i - 2; ++j) type += (type.empty() ? "" : " ") + toks[j].text;
    // The closing `]]` (one token, or two `]`).
    std::size_t close = i + 4;
    const bool one = close < toks.size() && toks[close].is_punct("]]");
    const bool two = close + 1 < toks.size() && toks[close].is_punct("]") && toks[close + 1].is_punct("]");
    if (i + 3 >= toks.size() || !toks[i + 1].is_punct("(") || toks[i + 2].kind != TokenKind::Number ||
        !toks[i + 3].is_punct(")") || !(one || two)) {
      bad("function_constant takes an index: [[function_constant(0)]]");
    }
    if (two) ++close;
    if (close + 1 >= toks.size() || !toks[close + 1].is_punct(";")) {
      bad("a function constant has no initializer: its value is given when the kernel is made");
    }
    Found f;
    f.constant.type = type;
    f.constant.name = name.text;
    // Metal numbers function constants with 16 bits.
    const std::optional<long long> index = integer_literal(toks[i + 2].text, 65535);
    if (!index) bad("function_constant takes an index from 0 to 65535");
    f.constant.index = static_cast<int>(*index);
    f.constant.line = name.line;
    f.attribute_begin = toks[i - 1].begin;
    f.attribute_end = toks[close].end;
    for (const Found& g : out) {
      if (g.constant.index == f.constant.index || g.constant.name == f.constant.name) {
        bad("function constant '" + f.constant.name + "' (index " + std::to_string(f.constant.index) +
            ") repeats the index or name of '" + g.constant.name + "' (line " + std::to_string(g.constant.line) + ")");
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

std::vector<FunctionConstant> find_function_constants(const std::string& source) {
  std::vector<FunctionConstant> out;
  for (Found& f : scan(source, lex(source), "metal_library", "source")) out.push_back(std::move(f.constant));
  return out;
}

namespace {

using Edits = std::vector<std::tuple<std::size_t, std::size_t, std::string>>;  // (begin, end, text)

// Each `is_function_constant_defined(name)` of `text` becomes true or false
// (a name not in `defined` is an error, unless `others_left` leaves it).
void resolve_defined(const std::string& text, const std::vector<Token>& toks, const std::map<std::string, bool>& defined,
                     std::string_view where, const std::string& file, Edits& edits, bool others_left = false) {
  for (std::size_t i = 0; i + 3 < toks.size(); ++i) {
    if (!toks[i].is_ident("is_function_constant_defined") || !toks[i + 1].is_punct("(") ||
        toks[i + 2].kind != TokenKind::Identifier || !toks[i + 3].is_punct(")"))
      continue;
    auto it = defined.find(toks[i + 2].text);
    if (it == defined.end() && others_left) continue;
    if (it == defined.end()) {
      throw_compile_error(where, file, text, toks[i + 2].line, toks[i + 2].col,
                          "'" + toks[i + 2].text + "' is not a function constant");
    }
    edits.emplace_back(toks[i].begin, toks[i + 3].end, it->second ? "true" : "false");
  }
}

// The declarations of `found` given `values` (a constant without one: T()).
void give_values(const std::vector<Found>& found, const std::map<std::string, std::string>& values, Edits& edits) {
  for (const Found& f : found) {
    auto it = values.find(f.constant.name);
    const std::string value = it != values.end() ? it->second : f.constant.type + "()";
    edits.emplace_back(f.attribute_begin, f.attribute_end, "= static_cast<" + f.constant.type + ">(" + value + ")");
  }
}

// `text` with `edits` made, back to front.
std::string edited(std::string text, Edits edits) {
  std::sort(edits.begin(), edits.end(), [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
  for (const auto& [begin, end, what] : edits) text.replace(begin, end - begin, what);
  return text;
}

}  // namespace

std::string specialize_function_constants(const std::string& source, const std::map<std::string, std::string>& values) {
  const std::vector<Token> toks = lex(source);
  const std::vector<Found> found = scan(source, toks, "metal_library", "source");
  if (found.empty()) return source;
  std::map<std::string, bool> defined;
  for (const Found& f : found) defined[f.constant.name] = values.count(f.constant.name) > 0;
  Edits edits;
  give_values(found, values, edits);
  resolve_defined(source, toks, defined, "metal_library", "source", edits);
  return edited(source, std::move(edits));
}

std::pair<std::string, std::string> specialize_kernel_function_constants(const std::string& header,
                                                                         const std::string& source) {
  const std::vector<Token> header_toks = lex(header);
  const std::vector<Found> found = scan(header, header_toks, "metal_kernel", "header");
  if (found.empty()) return {header, source};
  std::map<std::string, bool> defined;
  for (const Found& f : found) defined[f.constant.name] = false;
  Edits header_edits, source_edits;
  give_values(found, {}, header_edits);
  resolve_defined(header, header_toks, defined, "metal_kernel", "header", header_edits);
  resolve_defined(source, lex(source), defined, "metal_kernel", "source", source_edits);
  return {edited(header, std::move(header_edits)), edited(source, std::move(source_edits))};
}

std::string specialize_included_function_constants(const std::string& text, const std::string& file,
                                                   std::map<std::string, bool>& declared) {
  const std::vector<Token> toks = lex(text);
  const std::vector<Found> found = scan(text, toks, "metal_kernel", file);
  for (const Found& f : found) declared[f.constant.name] = false;
  Edits edits;
  give_values(found, {}, edits);
  // A name no include declared may be the kernel's own (its header comes after).
  resolve_defined(text, toks, declared, "metal_kernel", file, edits, /*others_left=*/true);
  return edits.empty() ? text : edited(text, std::move(edits));
}

}  // namespace alloy::msl

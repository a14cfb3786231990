// expand_kernel_macros (alloy/msl/program.h): a whole program's macros that
// write kernels, written out at their calls.
#include <algorithm>
#include <iterator>
#include <map>

#include "alloy/msl/program.h"
#include "msl/lexer.h"
#include "msl/macro_calls.h"

namespace alloy::msl {

std::string expand_kernel_macros(const std::string& source) {
  using namespace macro_calls;
  if (source.find("define") == std::string::npos) return source;
  std::vector<Token> t;
  try {
    t = lex(source);
  } catch (const std::exception&) {
    return source;
  }
  std::map<std::string, int> defined;
  std::map<std::string, Macro> macros;  // those that write kernels
  for (const Token& d : t) {
    if (d.kind != TokenKind::Directive || directive_name(d) != "define") continue;
    TextRange body;
    std::string name;
    define_body(source, d, body, &name);
    ++defined[name];
    try {
      std::optional<Macro> m = function_like(source, d);
      if (!m) continue;
      const auto names = [&](const char* what) {
        return std::any_of(m->body.begin(), m->body.end(), [&](const Token& b) { return b.text == what; });
      };
      if (names("kernel") && !names("#") && !names("##")) macros[name] = std::move(*m);
    } catch (const NotTaken&) {
    }
  }
  for (auto it = macros.begin(); it != macros.end();) it = defined[it->first] == 1 ? std::next(it) : macros.erase(it);
  if (macros.empty()) return source;
  std::vector<Call> calls;
  int braces = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    braces += t[i].is_punct("{") - t[i].is_punct("}");
    if (braces != 0 || t[i].kind != TokenKind::Identifier || !macros.count(t[i].text)) continue;
    try {
      calls.push_back(find_call(t, i, macros.at(t[i].text)));
      i = calls.back().close;
    } catch (const NotTaken&) {
    }
  }
  return expand_calls(source, t, calls, false);
}

}  // namespace alloy::msl

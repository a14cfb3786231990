#include "msl/cpu_inline_macros.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <vector>

#include "msl/cpu_threads.h"
#include "msl/macro_calls.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

using Toks = std::vector<Token>;
using namespace macro_calls;

// Whether the macro's body makes a synchronising call.
bool synchronises(const Macro& m) {
  for (std::size_t k = 0; k < m.body.size(); ++k)
    if (is_sync_use(m.body, k)) return true;
  return false;
}

std::optional<InlinedHelpers> inline_macros(const KernelSpec& spec, const LexedKernel& lexed) {
  const Toks& h = lexed.header.tokens;
  const Toks& s = lexed.source.tokens;
  std::map<std::string, Macro> macros;  // the synchronising ones
  std::map<std::string, int> defined;
  for (const Token& d : h) {
    if (d.kind != TokenKind::Directive) continue;
    const std::string directive = directive_name(d);
    if (directive == "define") {
      TextRange body;
      std::string name;
      define_body(lexed.header.text, d, body, &name);
      ++defined[name];
    }
    if (std::optional<Macro> m = function_like(lexed.header.text, d); m && synchronises(*m)) macros[m->name] = std::move(*m);
  }
  if (macros.empty()) return std::nullopt;
  for (const auto& [name, m] : macros)
    require(defined[name] == 1, "the header defines `" + name + "` more than once");
  // Another directive naming it (`#undef`, `#ifdef`, `defined(...)`) would
  // see it gone once its definition is blank.
  for (const Toks* text : {&h, &s})
    for (const Token& d : *text) {
      if (d.kind != TokenKind::Directive) continue;
      LexOptions opt;
      opt.directives = false;
      const std::string where = "a directive on line " + std::to_string(d.line) + " of the " +
                                (text == &h ? "header" : "body");
      Toks words;
      try {
        words = lex(std::string_view(d.text).substr(1), opt);
      } catch (const std::exception&) {
        require(false, where + " does not lex");  // (`#error don't`)
      }
      for (const auto& [name, m] : macros)
        if (&d != m.directive)
          for (const Token& w : words) require(!w.is_ident(name), where + " names `" + name + "`");
    }
  for (const auto& [name, m] : macros) {
    for (const Token& t : m.body)
      require(!t.is_punct("#") && !t.is_punct("##"), "the macro `" + name + "` uses `#` or `##`");
    // Its name in the header's functions (other macros are directives)
    // would call it where no expansion is.
    for (const Token& t : h)
      require(!t.is_ident(name), "the header names `" + name + "` on line " + std::to_string(t.line));
  }
  std::vector<Call> calls;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].kind == TokenKind::Identifier && macros.count(s[i].text)) calls.push_back(find_call(s, i, macros.at(s[i].text)));
  for (const Call& a : calls)
    for (const Call& b : calls)
      require(&a == &b || b.name < a.name || b.name > a.close,
              "the call of `" + b.macro->name + "` on line " + std::to_string(s[b.name].line) +
                  " is in another's arguments");

  InlinedHelpers out;
  out.source = expand_calls(spec.source, s, calls, true);
  out.header = spec.header;
  for (const auto& [name, m] : macros)
    for (std::size_t k = m.directive->begin; k < m.directive->end; ++k)
      if (out.header[k] != '\n') out.header[k] = ' ';
  std::map<std::string, int> count;
  for (const Call& c : calls) ++count[c.macro->name];
  for (const auto& [name, m] : macros) {
    const int n = count[name];
    out.note += (out.note.empty() ? "" : "; ") + name +
                (n == 0 ? ", a macro not called, is left out"
                        : ", a macro, is expanded at " + (n == 1 ? std::string("its call") : "its " + std::to_string(n) + " calls") +
                              " in the body");
  }
  out.note += calls.empty() ? " (it would keep the kernel on fibers)" : " (a region cannot end inside a macro's call)";
  return out;
}

}  // namespace

std::optional<InlinedHelpers> inline_sync_macros(const KernelSpec& spec, const LexedKernel& lexed,
                                                 std::string* why_not) {
  try {
    return inline_macros(spec, lexed);
  } catch (const NotTaken& e) {
    if (why_not) *why_not = e.why;
    return std::nullopt;
  }
}

}  // namespace alloy::msl

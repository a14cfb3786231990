#include "msl/cpu_inline_helpers.h"

#include <algorithm>
#include <map>
#include <set>

#include "msl/builtins.h"
#include "msl/cpu_regions_syntax.h"
#include "msl/cpu_threads.h"
#include "msl/cpu_uniform_loops.h"
#include "msl/rewrite.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

using Toks = std::vector<Token>;

constexpr const char* kPrefix = "alloy_inline_";

// Thrown where a helper or a call is of a form this does not take.
struct NotTaken {
  std::string why;
};

void require(bool ok, const std::string& why) {
  if (!ok) throw NotTaken{why};
}

// The `}` closing the header's `{` at `open`.
std::size_t matching_brace(const Toks& t, std::size_t open) {
  const std::size_t close = matching_bracket(t, open);
  require(close < t.size(), "the header's brackets do not match");
  return close;
}

std::string joined(const Toks& t, std::size_t b, std::size_t e) {
  std::string s;
  for (std::size_t k = b; k < e; ++k) s += (s.empty() ? "" : " ") + t[k].text;
  return s;
}

// A name the texts may rename or replace: an identifier neither a member
// (`a.v`) nor qualified (`metal::v`, `mem_flags::x`).
bool plain_name(const Toks& t, std::size_t k) {
  return t[k].kind == TokenKind::Identifier && !is_member_access(t, k) && !(k > 0 && t[k - 1].is_punct("::")) &&
         !(k + 1 < t.size() && t[k + 1].is_punct("::"));
}

struct Helper {
  std::string name;
  std::size_t name_token = 0;
  std::size_t def_begin = 0, def_end = 0;  // the definition's tokens, `template` to `}`
  struct TemplateParam {
    std::string name;
    bool type = false;  // typename/class: replaced as written, a value in parentheses
  };
  std::vector<TemplateParam> template_params;
  std::size_t ret_b = 0, ret_e = 0;                           // the return type
  std::vector<std::pair<std::size_t, std::size_t>> params;    // each parameter's tokens; its name is the last
  std::size_t body_open = 0, body_close = 0;                  // its braces
  std::size_t ret = 0;                                        // its last statement's `return`; 0 when void
  bool syncs = false;
  std::string not_taken;  // found while reading the header: why it cannot be written out
};

// Every function defined at the header's scope.
std::vector<Helper> header_functions(const Toks& h) {
  std::vector<Helper> found;
  std::size_t start = 0;
  for (std::size_t i = 0; i < h.size();) {
    const Token& t = h[i];
    if (t.kind == TokenKind::Directive || t.is_punct(";")) {
      start = ++i;
      continue;
    }
    if (t.is_punct("{")) {  // a struct, namespace or initialiser: not looked into
      i = matching_brace(h, i) + 1;
      if (i < h.size() && h[i].is_punct(";")) ++i;
      start = i;
      continue;
    }
    if (!t.is_punct("(")) {
      ++i;
      continue;
    }
    const std::size_t close = matching_paren(h, i);
    require(close < h.size(), "the header's parentheses do not match");
    if (i == start || h[i - 1].kind != TokenKind::Identifier || close + 1 >= h.size() ||
        !h[close + 1].is_punct("{")) {
      i = close + 1;
      continue;
    }
    Helper f;
    f.name = h[i - 1].text;
    f.def_begin = start;
    f.body_open = close + 1;
    f.body_close = matching_brace(h, f.body_open);
    f.def_end = f.body_close + 1;
    std::size_t k = start;
    if (h[k].is_ident("template")) {
      // (A form not taken matters only for a helper that synchronises.)
      std::size_t angle = k + 1 < i && h[k + 1].is_punct("<") ? closing_angle(h, k + 1) : 0;
      if (angle <= k + 1 || angle >= i) {
        f.not_taken = "the template parameters of `" + f.name + "` are not a plain list";
        angle = i - 1;
      } else {
        for (auto [b, e] : top_level_parts(h, k + 2, angle, false)) {
          bool plain = e > b && h[e - 1].kind == TokenKind::Identifier;
          for (std::size_t j = b; j < e; ++j) plain = plain && !h[j].is_punct("=") && !h[j].is_punct("...");
          if (!plain) f.not_taken = "the template parameters of `" + f.name + "` are not a plain list";
          if (plain) f.template_params.push_back({h[e - 1].text, h[b].is_ident("typename") || h[b].is_ident("class")});
        }
      }
      k = angle + 1;
    }
    static const std::set<std::string> specifiers = {"inline", "static", "METAL_FUNC", "constexpr"};
    while (k < i - 1 && h[k].kind == TokenKind::Identifier && specifiers.count(h[k].text)) ++k;
    f.ret_b = k;
    f.ret_e = i - 1;
    f.name_token = i - 1;
    // (Its parameters, body and return are checked where it synchronises.)
    auto groups = top_level_parts(h, i + 1, close, false);
    if (!(groups.size() == 1 && groups[0].second == groups[0].first + 1 && h[groups[0].first].is_ident("void")))
      f.params = groups;
    found.push_back(f);
    i = f.def_end;
    start = i;
  }
  return found;
}

// A synchronising helper's form (the file's comment), its `return` found.
void check_helper(const Toks& h, Helper& f) {
  const std::string name = "`" + f.name + "`";
  require(f.not_taken.empty(), f.not_taken);
  require(f.ret_e > f.ret_b, name + " has no return type");
  for (std::size_t k = f.ret_b; k < f.ret_e; ++k)
    require(!h[k].is_ident("auto") && !h[k].is_punct("[["), name + "'s return type is deduced or has attributes");
  for (auto [b, e] : f.params) {
    require(e >= b + 2 && h[e - 1].kind == TokenKind::Identifier, "a parameter of " + name + " has no name");
    for (std::size_t k = b; k < e; ++k)
      require(!h[k].is_punct("&") && !h[k].is_punct("&&") && !h[k].is_punct("[") && !h[k].is_punct("=") &&
                  !h[k].is_punct("<") && !h[k].is_punct("..."),
              "parameter `" + h[e - 1].text + "` of " + name + " is not a value or a pointer");
  }
  const bool is_void = f.ret_e == f.ret_b + 1 && h[f.ret_b].is_ident("void");
  int depth = 0;
  for (std::size_t k = f.body_open + 1; k < f.body_close; ++k) {
    require(h[k].kind != TokenKind::Directive, name + " has a preprocessor line");
    require(!h[k].is_ident("threadgroup"), name + " names `threadgroup` in its body");
    if (h[k].is_punct("{")) ++depth;
    if (h[k].is_punct("}")) --depth;
    if (!h[k].is_ident("return")) continue;
    // The last statement, at the body's own level: `return e ;` before `}`.
    const std::string early = name + " returns before its last statement (line " + std::to_string(h[k].line) + ")";
    require(!is_void && f.ret == 0 && depth == 0 && h[k - 1].kind == TokenKind::Punct &&
                (h[k - 1].is("{") || h[k - 1].is(";") || h[k - 1].is("}")),
            early);
    for (std::size_t j = k + 1; j + 1 < f.body_close; ++j) require(!h[j].is_punct(";"), early);
    require(h[f.body_close - 1].is_punct(";") && f.body_close - 1 > k + 1, early);
    f.ret = k;
  }
  require(is_void || f.ret != 0, name + " does not end in a return");
}

struct Call {
  const Helper* helper = nullptr;
  std::size_t name = 0, open = 0, close = 0;  // the name, the argument list's parentheses
  std::vector<std::string> template_args;
  std::size_t statement = 0;  // the first token of the statement it is in
};

// The call of a synchronising helper at source token `i` (its name), in a
// statement that can take the helper's body before it.
Call find_call(const Toks& s, std::size_t i, const Helper& f, const std::vector<int>& depth) {
  Call c;
  c.helper = &f;
  c.name = i;
  const std::string where = "the call of `" + f.name + "` on line " + std::to_string(s[i].line);
  std::size_t k = i + 1;
  // (An argument list with `<` or `>` is not split: a template argument
  // list's commas cannot be told from the list's own.)
  auto no_angles = [&](std::size_t b, std::size_t e) {
    for (std::size_t j = b; j < e; ++j)
      require(!s[j].is_punct("<") && !s[j].is_punct(">") && !s[j].is_punct(">>") && !s[j].is_punct("<<"),
              where + " has `<` or `>` in its arguments");
  };
  if (k < s.size() && s[k].is_punct("<")) {
    const std::size_t angle = closing_angle(s, k);
    require(angle > k, where + " has no closing `>`");
    no_angles(k + 1, angle);
    for (auto [b, e] : top_level_parts(s, k + 1, angle, false)) c.template_args.push_back(joined(s, b, e));
    k = angle + 1;
  }
  require(k < s.size() && s[k].is_punct("("), "`" + f.name + "` is named on line " + std::to_string(s[i].line) +
                                                   " other than in a call");
  require(c.template_args.size() == f.template_params.size(), where + " does not give every template parameter");
  c.open = k;
  c.close = matching_paren(s, k);
  require(c.close < s.size(), where + " has no closing `)`");
  no_angles(c.open + 1, c.close);
  require(top_level_parts(s, c.open + 1, c.close, false).size() == f.params.size(),
          where + " does not give one argument for each parameter");
  // The statement: back to a `;`, `{`, `}` or directive outside parentheses.
  std::size_t b = i;
  while (b > 0) {
    const Token& p = s[b - 1];
    if (depth[b - 1] == 0 &&
        (p.kind == TokenKind::Directive || p.is_punct(";") || p.is_punct("{") || p.is_punct("}")))
      break;
    --b;
  }
  static const std::set<std::string> not_simple = {"if",   "else", "for",   "while",    "do", "switch",
                                                   "case", "default", "goto", "break", "continue"};
  require(depth[b] == 0 && !(s[b].kind == TokenKind::Identifier && not_simple.count(s[b].text)),
          where + " is in a loop's or a branch's header, or in a braceless branch");
  std::size_t e = i;
  while (e < s.size() && !(depth[e] == 0 && s[e].is_punct(";"))) ++e;
  require(e < s.size(), where + " is in no statement");
  for (std::size_t j = b; j < e; ++j) {
    const Token& t = s[j];
    require(!t.is_punct("?") && !t.is_punct("&&") && !t.is_punct("||") &&
                !(depth[j] == 0 && (t.is_punct(",") || t.is_punct(":"))),
            where + " is in a statement that may not evaluate it (`?`, `&&`, `||`, `,`)");
    require(!t.is_punct("{") && !t.is_punct("}"), where + " is in a statement with braces");
  }
  // A void helper is a statement of its own.
  if (f.ret == 0) require(b == i && c.close + 1 == e, where + " is not a statement of its own");
  c.statement = b;
  return c;
}

// The helper written out for call number `n`: its result's declaration and
// a block of its parameters and body.
std::string written_out(const Toks& h, const Toks& s, const Call& c, int n) {
  const Helper& f = *c.helper;
  const std::string result = kPrefix + std::to_string(n);
  std::map<std::string, std::string> replaced;
  for (std::size_t j = 0; j < f.template_params.size(); ++j)
    replaced[f.template_params[j].name] =
        f.template_params[j].type ? c.template_args[j] : "(" + c.template_args[j] + ")";
  for (auto [b, e] : f.params) replaced[h[e - 1].text] = result + "_" + h[e - 1].text;
  auto text = [&](std::size_t b, std::size_t e) {
    std::string out;
    for (std::size_t k = b; k < e; ++k) {
      auto it = plain_name(h, k) ? replaced.find(h[k].text) : replaced.end();
      out += (out.empty() ? "" : " ") + (it != replaced.end() ? it->second : h[k].text);
    }
    return out;
  };
  std::string w;
  if (f.ret != 0) w += text(f.ret_b, f.ret_e) + " " + result + "; ";
  w += "{ ";
  const auto args = top_level_parts(s, c.open + 1, c.close, false);
  for (std::size_t j = 0; j < f.params.size(); ++j) {
    auto [b, e] = f.params[j];
    w += text(b, e) + " = (" + joined(s, args[j].first, args[j].second) + "); ";
  }
  if (f.ret == 0) {
    w += text(f.body_open + 1, f.body_close);
  } else {
    w += text(f.body_open + 1, f.ret);
    w += " " + result + " = (" + text(f.ret + 1, f.body_close - 1) + ");";
  }
  return w + " } ";
}

// The names a helper's text takes from its own scope (neither its
// parameters, template parameters nor locals): they must mean the same at
// the call.
std::set<std::string> outer_names(const Toks& h, const Helper& f) {
  std::set<std::string> own;
  for (const auto& p : f.template_params) own.insert(p.name);
  for (auto [b, e] : f.params) own.insert(h[e - 1].text);
  try {
    for (const std::string& n : body_names(h, regions::parse_statements(h, f.body_open + 1, f.body_close)).body_locals)
      own.insert(n);
  } catch (const regions::NotRegions& e) {
    throw NotTaken{"`" + f.name + "`'s body: " + e.why};
  }
  std::set<std::string> outer;
  auto add = [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k)
      if (plain_name(h, k) && !own.count(h[k].text)) outer.insert(h[k].text);
  };
  add(f.ret_b, f.ret_e);
  for (auto [b, e] : f.params) add(b, e - 1);
  add(f.body_open + 1, f.body_close);
  return outer;
}

// The names the body sees that a helper's own could not: what it declares
// (macros included), the kernel's parameters and template constants,
// Metal's attributes.
std::set<std::string> kernel_names(const KernelSpec& spec, const LexedText& source) {
  std::set<std::string> names = user_declared_names(source);
  for (const auto* list : {&spec.inputs, &spec.outputs})
    for (const ParamSpec& p : *list)
      for (const char* suffix : {"", "_shape", "_strides", "_ndim"}) names.insert(p.name + suffix);
  for (const TemplateArg& a : spec.template_args) names.insert(a.name);
  for (const AttributeInfo& a : metal_attributes()) names.insert(std::string(a.name));
  return names;
}

std::optional<InlinedHelpers> inline_helpers(const KernelSpec& spec, const LexedKernel& lexed) {
  const Toks& h = lexed.header.tokens;
  const Toks& s = lexed.source.tokens;
  std::vector<Helper> functions = header_functions(h);
  std::map<std::string, Helper*> helpers;  // the synchronising ones
  for (Helper& f : functions) {
    for (std::size_t k = f.body_open; k < f.body_close && !f.syncs; ++k) f.syncs = is_sync_use(h, k);
    if (f.syncs) {
      require(!helpers.count(f.name), "`" + f.name + "` is defined twice (overloads are not told apart)");
      helpers[f.name] = &f;
    }
  }
  if (helpers.empty()) return std::nullopt;
  // Every synchronising use of the header is in one of them, none in a
  // macro (whose bodies are in `code`, not in `tokens`) or an included
  // header; the header names them only where it defines them.
  auto uses = [&](const Toks& t, auto&& is_use) {
    std::size_t n = 0;
    for (std::size_t k = 0; k < t.size(); ++k) n += is_use(t, k);
    return n;
  };
  auto sync_use = [](const Toks& t, std::size_t k) { return is_sync_use(t, k); };
  auto helper_name = [&](const Toks& t, std::size_t k) {
    return t[k].kind == TokenKind::Identifier && helpers.count(t[k].text) > 0;
  };
  require(uses(lexed.header.code, sync_use) == uses(h, sync_use), "a macro of the header synchronises");
  require(uses(lexed.header.code, helper_name) == uses(h, helper_name), "a macro of the header calls a helper");
  for (std::size_t k = 0; k < h.size(); ++k) {
    if (helper_name(h, k))
      require(helpers.at(h[k].text)->name_token == k,
              "the header names `" + h[k].text + "` on line " + std::to_string(h[k].line));
    if (!sync_use(h, k)) continue;
    require(std::any_of(helpers.begin(), helpers.end(),
                        [&](const auto& f) { return k > f.second->body_open && k < f.second->body_close; }),
            "the header's line " + std::to_string(h[k].line) + " synchronises outside a function");
  }
  for (const IncludedFile& inc : lexed.includes)
    for (std::size_t k = 0; k < inc.lexed.code.size(); ++k)
      require(!is_sync_use(inc.lexed.code, k), "an included header synchronises");
  for (const auto* text : {&lexed.source.code, &lexed.header.code})
    for (const Token& t : *text)
      require(t.text.rfind(kPrefix, 0) != 0, "the kernel names `" + t.text + "`, a name of the rewrite's own");
  // A macro of the source naming a helper would call it where no rewrite is.
  std::size_t named_in_code = 0, named_in_tokens = 0;
  for (const Token& t : lexed.source.code) named_in_code += t.kind == TokenKind::Identifier && helpers.count(t.text);
  for (const Token& t : s) named_in_tokens += t.kind == TokenKind::Identifier && helpers.count(t.text);
  require(named_in_code == named_in_tokens, "a macro of the body calls a helper");

  // The calls, and the names they must not see otherwise than the helper does.
  std::vector<int> depth(s.size() + 1, 0);
  for (std::size_t k = 0; k < s.size(); ++k)
    depth[k + 1] = depth[k] + (s[k].is_punct("(") || s[k].is_punct("[")) - (s[k].is_punct(")") || s[k].is_punct("]"));
  // (Only a helper the body calls is checked: the others are left out.)
  std::set<std::string> called;
  for (const Token& t : s)
    if (t.kind == TokenKind::Identifier && helpers.count(t.text) && called.insert(t.text).second)
      check_helper(h, *helpers.at(t.text));
  std::vector<Call> calls;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].kind == TokenKind::Identifier && helpers.count(s[i].text)) {
      require(plain_name(s, i), "the body names `" + s[i].text + "` as a member or qualified");
      calls.push_back(find_call(s, i, *helpers.at(s[i].text), depth));
    }
  for (const Call& a : calls)
    for (const Call& b : calls)
      require(&a == &b || b.name < a.open || b.name > a.close,
              "the call of `" + b.helper->name + "` on line " + std::to_string(s[b.name].line) +
                  " is in another's arguments");
  const std::set<std::string> seen = kernel_names(spec, lexed.source);
  for (const std::string& name : called)
    for (const std::string& n : outer_names(h, *helpers.at(name)))
      require(!seen.count(n), "`" + name + "` names `" + n + "`, which the kernel declares too");

  // The texts: each call's helper before its statement, the call its result.
  // Edits go from the end of the text back, so that each one's offsets
  // still hold: at one offset, a call's replacement (when the call begins
  // its statement) before the insertions, and the later call's insertion
  // first, so that the helpers stand in the calls' order.
  struct Edit {
    std::size_t at, erase;
    std::string text;
    int order;
  };
  std::vector<Edit> edits;
  for (std::size_t j = 0; j < calls.size(); ++j) {
    const Call& c = calls[j];
    const int n = static_cast<int>(j + 1);
    edits.push_back({s[c.name].begin, s[c.close].end - s[c.name].begin,
                     c.helper->ret != 0 ? kPrefix + std::to_string(n) : "", -1});
    edits.push_back({s[c.statement].begin, 0, written_out(h, s, c, n), n});
  }
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
    return a.at != b.at ? a.at > b.at : (a.order < 0) != (b.order < 0) ? a.order < 0 : a.order > b.order;
  });
  InlinedHelpers out;
  out.source = spec.source;
  for (const Edit& e : edits) out.source.replace(e.at, e.erase, e.text);
  out.header = spec.header;
  for (auto& [name, f] : helpers)
    for (std::size_t b = h[f->def_begin].begin; b < h[f->def_end - 1].end; ++b)
      if (out.header[b] != '\n') out.header[b] = ' ';
  std::map<std::string, int> count;
  for (const Call& c : calls) ++count[c.helper->name];
  for (const auto& [name, n] : count)
    out.note += (out.note.empty() ? "" : "; ") + name + " is written out at " +
                (n == 1 ? std::string("its call") : "its " + std::to_string(n) + " calls") + " in the body";
  for (const auto& [name, f] : helpers)
    if (!called.count(name)) out.note += (out.note.empty() ? "" : "; ") + name + ", not called, is left out";
  out.note += calls.empty() ? " (it would keep the kernel on fibers)" : " (a region cannot end inside a call)";
  return out;
}

}  // namespace

std::optional<InlinedHelpers> inline_sync_helpers(const KernelSpec& spec, const LexedKernel& lexed,
                                                  std::string* why_not) {
  try {
    return inline_helpers(spec, lexed);
  } catch (const NotTaken& e) {
    if (why_not) *why_not = e.why;
    return std::nullopt;
  }
}

}  // namespace alloy::msl

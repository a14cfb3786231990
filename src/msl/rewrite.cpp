#include "msl/rewrite.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "msl/address_space_overloads.h"
#include "msl/builtins.h"
#include "msl/conditionals.h"
#include "msl/converged_calls.h"
#include "msl/features.h"
#include "msl/includes.h"
#include "msl/private_adds.h"
#include "msl/lexer.h"
#include "msl/source_text.h"
#include "msl/token_rules.h"
#include "msl/vector_casts.h"

namespace alloy::msl {
namespace {

constexpr std::string_view kWhere = "msl::translate";

using Out = std::vector<std::optional<std::string>>;  // nullopt: the token as written

// `xy` -> "0,1"; nullopt unless 2-4 letters all from xyzw or all from rgba.
std::optional<std::string> swizzle_indices(const std::string& name) {
  if (name.size() < 2 || name.size() > 4) return std::nullopt;
  for (std::string_view set : {std::string_view("xyzw"), std::string_view("rgba")}) {
    std::string idx;
    bool ok = true;
    for (char c : name) {
      std::size_t k = set.find(c);
      if (k == std::string_view::npos) {
        ok = false;
        break;
      }
      if (!idx.empty()) idx += ',';
      idx += static_cast<char>('0' + k);
    }
    if (ok) return idx;
  }
  return std::nullopt;
}

bool is_hex(const std::string& n) { return n.size() > 1 && n[0] == '0' && (n[1] == 'x' || n[1] == 'X'); }

// `1.0h` -> `half(1.0)`, `0x1.8p1h` -> `half(0x1.8p1)` (the literal's value
// rounded once, to half); nullopt for any other number.
std::optional<std::string> half_literal(const std::string& n) {
  if (n.size() < 2 || (n.back() != 'h' && n.back() != 'H')) return std::nullopt;
  std::string value = n.substr(0, n.size() - 1);
  if (is_hex(n)) {
    if (value.find_first_of("pP") == std::string::npos) return std::nullopt;  // 0x1h: not a float
    for (char c : value.substr(2))
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'p' || c == 'P' || c == '+' ||
            c == '-' || c == '\''))
        return std::nullopt;
    return "half(" + value + ")";
  }
  for (char c : value)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
          c == '+' || c == '-' || c == '\''))
      return std::nullopt;
  return "half(" + value + ")";
}

// `0.5` -> `0.5f`: MSL has no double, an unsuffixed floating literal is a
// float (C++'s would be a double: `x * 0.3` rounded differently, `x == 0.1`
// false for the float 0.1f, `f(1.0)` ambiguous between float and half
// overloads). nullopt for integers and suffixed literals.
std::optional<std::string> float_literal(const std::string& n) {
  if (n.empty()) return std::nullopt;
  const char last = n.back();
  if (!std::isdigit(static_cast<unsigned char>(last)) && last != '.') return std::nullopt;
  if (is_hex(n)) {
    if (n.find_first_of("pP") == std::string::npos) return std::nullopt;
  } else if (n.find_first_of(".eE") == std::string::npos) {
    return std::nullopt;
  }
  return n + "f";
}

bool is_keyword_before_expression(const std::string& s) {
  static const std::set<std::string> kw = {"return", "else", "case",  "do",     "throw",
                                           "sizeof", "new",  "delete", "co_return", "goto"};
  return kw.count(s) > 0;
}

class Rewriter {
 public:
  Rewriter(const LexedText& lexed, Origin origin, const std::set<std::string>& user_names,
           Writer& w, KernelSpec::ThreadgroupStorage storage, bool whole_program,
           std::vector<std::string>* checked = nullptr, const CpuThreadsPlan* threads = nullptr,
           const std::set<std::string>* macros = nullptr, bool races = false, bool names_only = false)
      : checked_(checked),
        races_(races),
        names_only_(names_only),
        threads_(threads && (threads->coroutines || threads->regions) && origin == Origin::Source ? threads : nullptr),
        private_adds_(threads && origin == Origin::Source ? &threads->private_adds : nullptr),
        lexed_(lexed),
        text_(lexed.text),
        origin_(origin),
        program_(whole_program),
        storage_(origin == Origin::Source ? storage : KernelSpec::ThreadgroupStorage::Static),
        file_(lexed.file),
        user_names_(user_names),
        macros_(macros ? *macros : user_names),
        w_(w) {}

  int run() {
    if (checked_) {
      for (std::size_t k = 0; k < checked_->size(); ++k) slots_[(*checked_)[k]] = static_cast<int>(k);
      buffer_slots_ = static_cast<int>(checked_->size());
    }
    emit(lexed_.tokens, 0, text_.size(), /*in_define=*/false);
    return placed_;
  }

 private:
  // Writes tokens with the user text between them, from `from` to `to`.
  void emit(const std::vector<Token>& toks, std::size_t from, std::size_t to, bool in_define) {
    Out out = decide(toks, in_define);
    std::size_t pos = from;
    for (std::size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      w_.user_verbatim(text_.substr(pos, t.begin - pos));
      pos = t.end;
      TextRange body;
      if (!out[i] && define_body(text_, t, body)) {
        // `#define NAME(args)` as written, then the body translated like code.
        w_.user_verbatim(text_.substr(t.begin, body.begin - t.begin));
        LexOptions opt;
        opt.file = file_;
        opt.directives = false;
        emit(lex_range(text_, body.begin, body.end, body.line, body.col, opt), body.begin,
             body.end, /*in_define=*/true);
      } else if (out[i]) {
        // A dropped token takes the spaces after it along: `const device T*`
        // becomes `const T*`, not `const  T*`.
        std::size_t skip = 0;
        if (out[i]->empty() && t.kind != TokenKind::Directive)
          while (pos + skip < to && (text_[pos + skip] == ' ' || text_[pos + skip] == '\t')) ++skip;
        w_.user_token(*out[i], t.col, static_cast<int>(t.end - t.begin + skip));
        pos += skip;
      } else {
        w_.user_verbatim(t.text);
      }
    }
    w_.user_verbatim(text_.substr(pos, to - pos));
  }

  Out decide(const std::vector<Token>& toks, bool in_define) {
    Out out(toks.size());
    drop_attributes(toks, out);
    drop_repeated_specializations(toks, out);
    if (!in_define)
      for (const auto& [first, last] : address_space_repeats(lexed_, toks))
        for (std::size_t k = first; k <= last; ++k) out[k] = "";
    static_members_of_generic_parameters(toks, out);
    if (program_ && !in_define) drop_explicit_instantiations(toks, out);
    std::vector<bool> namespace_scopes;  // per open brace: is it a namespace's
    int parens = 0;
    int braces = 0;  // in the body: 0 is the kernel function's own scope
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (out[i]) continue;
      const Token& t = toks[i];
      switch (t.kind) {
        case TokenKind::Directive: {
          conditionals_ = std::max(0, conditionals_ + conditional_nesting(t));
          // MLX's headers are emitted before the header (msl/includes.h);
          // `#pragma once` and Metal's internal pragmas mean nothing here.
          if (is_metal_include(t.text) || mlx_include_path(t) || is_dropped_pragma(t)) out[i] = "";
          else if (auto unroll = loop_unroll_pragma(t)) out[i] = *unroll;
          break;
        }
        case TokenKind::Number:
          if (auto h = half_literal(t.text)) out[i] = *h;
          else if (auto f = float_literal(t.text)) out[i] = *f;
          break;
        case TokenKind::Punct:
          // `x##h` in a macro pastes a half literal (`H(1.5)` is `1.5h`),
          // which C++ has not: `(half(x))` has its value (the argument is a
          // float literal by then, `1.5f`, exact or within a tie of it).
          if (in_define && t.is("##") && i > 0 && toks[i - 1].kind == TokenKind::Identifier && !out[i - 1] &&
              i + 1 < toks.size() && (toks[i + 1].is_ident("h") || toks[i + 1].is_ident("H"))) {
            out[i - 1] = "(::metal::half(" + toks[i - 1].text + "))";
            out[i] = out[i + 1] = "";
          }
          if (t.is("{")) namespace_scopes.push_back(opens_namespace(toks, i));
          if (t.is("}") && !namespace_scopes.empty()) namespace_scopes.pop_back();
          if (t.is("{")) ++braces;
          if (t.is("}")) --braces;
          if (t.is("(") || t.is("[")) ++parens;
          if ((t.is(")") || t.is("]")) && parens > 0) --parens;
          break;
        case TokenKind::Identifier: {
          bool program_scope = (origin_ == Origin::Header || program_) && !in_define && parens == 0;
          for (bool ns : namespace_scopes) program_scope = program_scope && ns;
          if (program_ && program_scope && t.is("kernel")) {
            // A whole program's entry point: a function the glue calls.
            out[i] = "ALLOY_KERNEL_FN";
            break;
          }
          if (storage_ != KernelSpec::ThreadgroupStorage::Static && !in_define && braces == 0 && parens == 0 &&
              t.is("threadgroup") && declares_threadgroup_storage(toks, i) && place_threadgroup(toks, i, out)) {
            ++placed_;
            break;
          }
          identifier(toks, i, out, program_scope);
          break;
        }
        default: break;
      }
    }
    rewrite_vector_casts(toks, out);
    if ((origin_ == Origin::Header || program_) && !in_define) swizzle_named_fields(toks, out);
    multi_index_subscripts(toks, out);
    if (checked_) check_subscripts(toks, out);
    poll_loops(toks, out);
    if (private_adds_ && !private_adds_->empty() && !in_define) rewrite_private_adds(*private_adds_, toks, out);
    if (threads_ && !in_define) {
      if (threads_->regions) split_regions(*threads_->regions, toks, out);
      else await_sync_calls(*threads_, toks, out);
    }
    if (origin_ == Origin::Source && !program_ && !in_define) reconverge_before_simd_calls(toks, out);
    wrap_conditionals(toks, out);
    return out;
  }

  // Whether a reconverged statement toks[b, e) may mark its lanes: no `?:`,
  // `&&` or `||` that could put its calls in a branch of its own, and every
  // call of a builtin (a SIMD-group or math function, a scalar or vector
  // type, a cast). A function or macro of the kernel's own (or a call
  // through an expression) may make SIMD-group calls under a branch of its
  // own, which a marked lane would make with every lane present, waiting for
  // lanes that never come.
  static bool may_mark(const std::vector<Token>& toks, std::size_t b, std::size_t e) {
    auto builtin = [](const std::string& name) {
      return is_sync_function(name) || is_math_function_name(name) || find_scalar_type(name) ||
             is_vector_type_name(name) || name == "static_cast" || name == "as_type" || name == "sizeof" ||
             name == "reinterpret_cast" || name == "const_cast" || name == "bit_cast";
    };
    for (std::size_t k = b; k < e; ++k) {
      if (toks[k].is_punct("?") || toks[k].is_punct("&&") || toks[k].is_punct("||")) return false;
      if (!toks[k].is_punct("(") || k == b) continue;
      std::size_t callee = k - 1;
      if (toks[callee].is_punct(">")) {  // f<T>(...): the name before the matching `<`
        int depth = 0;
        for (;; --callee) {
          if (toks[callee].is_punct(">")) ++depth;
          else if (toks[callee].is_punct("<") && --depth == 0) break;
          if (callee == b) return false;
        }
        if (callee == b) return false;
        --callee;
      }
      const Token& t = toks[callee];
      if (t.kind == TokenKind::Identifier) {
        if (!builtin(t.text)) return false;
      } else if (t.is_punct(")") || t.is_punct("]")) {
        return false;  // a call through an expression
      }
    }
    return true;
  }

  // Metal runs a SIMD-group function over the threads active at the call.
  // Where every lane present reaches it together (converged_calls.h), CUDA
  // does not promise that lanes which left a loop or a branch at different
  // times are together again, so the statement gets
  // `::alloy_msl::simd_reconverge();` first, a warp barrier over the lanes
  // present that also marks the lane until `::alloy_msl::simd_converged_end();`
  // after it: a marked lane's calls name every lane present, and a *_sync
  // intrinsic so named waits for them all (runtime/cuda_sync.h). A run of
  // such statements, one after another, shares one barrier and mark. A
  // statement that may not mark (may_mark) gets the barrier alone
  // (`simd_reconverge_only();`), which brings the lanes together in
  // practice, not by contract. The CPU's threads (threads_: regions or
  // coroutines, which rewrote the statements) need neither: their prefix is
  // a no-op kept for one translation shape.
  void reconverge_before_simd_calls(const std::vector<Token>& toks, Out& out) const {
    const std::vector<ConvergedStatement> stmts = converged_simd_statements(toks, macros_);
    std::vector<char> marked(stmts.size());
    for (std::size_t i = 0; i < stmts.size(); ++i) marked[i] = !threads_ && may_mark(toks, stmts[i].begin, stmts[i].end);
    // Whether statement i goes on the run of marks of the one before it.
    auto continues = [&](std::size_t i) {
      return i > 0 && i < stmts.size() && marked[i] && marked[i - 1] && !stmts[i].lone_loop_body &&
             !stmts[i - 1].lone_loop_body && stmts[i - 1].end == stmts[i].begin;
    };
    for (std::size_t i = 0; i < stmts.size(); ++i) {
      const ConvergedStatement& s = stmts[i];
      const char* barrier = marked[i] || threads_ ? "::alloy_msl::simd_reconverge(); "
                                                  : "::alloy_msl::simd_reconverge_only(); ";
      if (!continues(i)) out[s.begin] = std::string(s.lone_loop_body ? "{ " : "") + barrier + written(toks, out, s.begin);
      out[s.end - 1] = written(toks, out, s.end - 1) +
                       (marked[i] && !continues(i + 1) ? " ::alloy_msl::simd_converged_end();" : "") +
                       (s.lone_loop_body ? " }" : "");
    }
  }

  // A struct's field named like a swizzle (`uint rgba;`, `float2 xy;`) is
  // reached as `s.rgba`, which member access turns into
  // `s.template swizzle<0,1,2,3>()` (nothing here knows `s` is no vector):
  // such a struct, where member templates are allowed (the header's or a
  // whole program's, not one local to a function: the body's structs are
  // the kernel function's), gets swizzle<I...>() and swizzle_ref<I...>()
  // that return the field of those indices (piet-metal's `stroke->rgba`).
  static void swizzle_named_fields(const std::vector<Token>& toks, Out& out) {
    std::vector<char> scopes;  // per open brace: 'n' namespace, 's' class, 'o' other
    std::vector<std::pair<std::size_t, std::vector<std::string>>> classes;  // open classes: brace, fields
    for (std::size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      if (t.is_punct("{")) {
        char kind = opens_namespace(toks, i) ? 'n' : 'o';
        // `struct Name {`, `struct Name : Base {`, `struct alignas(16) Name {`.
        for (std::size_t k = i; k-- > 0;) {
          if (toks[k].is_ident("struct") || toks[k].is_ident("class")) {
            kind = 's';
            break;
          }
          if (toks[k].is_punct(";") || toks[k].is_punct("{") || toks[k].is_punct("}") || toks[k].is_punct("=") ||
              toks[k].is_punct("(") || toks[k].kind == TokenKind::Directive)
            break;
        }
        bool allowed = true;  // no enclosing function body or block
        for (char c : scopes) allowed = allowed && c != 'o';
        scopes.push_back(kind == 's' && !allowed ? 'o' : kind);
        if (scopes.back() == 's') classes.push_back({i, {}});
        continue;
      }
      if (t.is_punct("}")) {
        if (!scopes.empty() && scopes.back() == 's' && !classes.empty()) {
          const std::vector<std::string>& fields = classes.back().second;
          if (!fields.empty()) {
            std::string m =
                " template <int... alloy_i> ALLOY_FUNC constexpr auto& swizzle() { return alloy_field(::alloy_msl::"
                "swizzle_tag<alloy_i...>{}); } template <int... alloy_i> ALLOY_FUNC constexpr const auto& swizzle() "
                "const { return alloy_field(::alloy_msl::swizzle_tag<alloy_i...>{}); } template <int... alloy_i> "
                "ALLOY_FUNC constexpr auto& swizzle_ref() { return alloy_field(::alloy_msl::swizzle_tag<alloy_i...>{}); }";
            for (const std::string& f : fields) {
              const std::string tag = "::alloy_msl::swizzle_tag<" + *swizzle_indices(f) + ">";
              m += " ALLOY_FUNC constexpr auto& alloy_field(" + tag + ") { return " + f + "; } ALLOY_FUNC constexpr const "
                   "auto& alloy_field(" + tag + ") const { return " + f + "; }";
            }
            out[i] = m + " " + written(toks, out, i);
          }
          classes.pop_back();
        }
        if (!scopes.empty()) scopes.pop_back();
        continue;
      }
      // A field of the innermost open class: a name at its own brace level
      // ending a declarator.
      if (t.kind == TokenKind::Identifier && !classes.empty() && !scopes.empty() && scopes.back() == 's' &&
          i + 1 < toks.size() && swizzle_indices(t.text) && !is_member_access(toks, i) &&
          (toks[i + 1].is_punct(";") || toks[i + 1].is_punct(",") || toks[i + 1].is_punct("[") ||
           toks[i + 1].is_punct("=") || toks[i + 1].is_punct(":"))) {
        std::vector<std::string>& fields = classes.back().second;
        if (std::find(fields.begin(), fields.end(), t.text) == fields.end()) fields.push_back(t.text);
      }
    }
  }

  // Metal 4's subscript with several indices, `t[i, j]` (tensors): C++20 has
  // none, so `t[ ::alloy_msl::subscript(i, j)]` (runtime/metal_base.h). A
  // subscript follows a name, `]` or `)`; `auto [a, b]`, a lambda's captures
  // and attributes are left alone.
  static void multi_index_subscripts(const std::vector<Token>& toks, Out& out) {
    static const std::set<std::string> not_operands = {"auto", "return", "operator", "new", "delete", "throw",
                                                       "case", "else", "do", "co_return", "co_yield"};
    for (std::size_t i = 1; i < toks.size(); ++i) {
      const Token& before = toks[i - 1];
      if (!toks[i].is_punct("[")) continue;
      if (!((before.kind == TokenKind::Identifier && !not_operands.count(before.text)) || before.is_punct("]") ||
            before.is_punct(")")))
        continue;
      const std::size_t close = closing(toks, i, "]");
      if (close == 0) continue;
      bool several = false;
      int depth = 0;
      for (std::size_t k = i + 1; k < close && !several; ++k) {
        if (opens_bracket(toks[k])) ++depth;
        if (closes_bracket(toks[k])) --depth;
        several = depth == 0 && toks[k].is_punct(",");
      }
      if (!several) continue;
      out[i] = written(toks, out, i) + " ::alloy_msl::subscript(";
      out[close] = ")" + written(toks, out, close);
    }
  }

  // Bounds checks: `name[i][j]` -> `name[(::alloy_msl::bounds_index<decltype(
  // name), 0>)(alloy_bc, slot, line, write, (i))][...<..., 1>)(..., (j))]` for
  // the buffers and the threadgroup arrays the body declares (registered as
  // their declarations are met, so a declarator's own `[N]` is left alone).
  void check_subscripts(const std::vector<Token>& toks, Out& out) {
    for (std::size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      if (!names_only_ && t.is_ident("threadgroup") && declares_threadgroup_storage(toks, i)) {
        i = register_threadgroup_arrays(toks, i);
        continue;
      }
      if (t.kind != TokenKind::Identifier || i + 1 >= toks.size() || !toks[i + 1].is_punct("[")) continue;
      auto slot = slots_.find(t.text);
      if (slot == slots_.end()) continue;
      if (i > 0 && (toks[i - 1].is_punct(".") || toks[i - 1].is_punct("->") || toks[i - 1].is_punct("::"))) continue;
      std::vector<std::pair<std::size_t, std::size_t>> subscripts;
      std::size_t k = i + 1;
      while (k < toks.size() && toks[k].is_punct("[")) {
        std::size_t close = closing(toks, k, "]");
        if (close == 0) break;
        subscripts.emplace_back(k, close);
        k = close + 1;
      }
      auto steps = [&](std::size_t at) { return at < toks.size() && (toks[at].is_punct("++") || toks[at].is_punct("--")); };
      const bool write = (k < toks.size() && is_assignment(toks[k])) || steps(k) || (i > 0 && steps(i - 1));
      for (std::size_t d = 0; d < subscripts.size(); ++d) {
        auto [open, close] = subscripts[d];
        // The template-id in parentheses: its comma must not split a macro argument.
        out[open] = written(toks, out, open) + "(::alloy_msl::bounds_index<decltype(" + t.text + "), " +
                    std::to_string(d) + ">)(alloy_bc, " + std::to_string(slot->second) + ", " +
                    std::to_string(t.line) + ", " + (write ? "1" : "0") + ", (";
        out[close] = "))" + written(toks, out, close);
      }
      // A threadgroup array's element, whole: `(*race_access(..., &(a[i][j]), a))`,
      // the same lvalue, seen by the race check on its way.
      if (races_ && slot->second >= buffer_slots_ && !subscripts.empty()) {
        const std::size_t last = subscripts.back().second;
        out[i] = "(*::alloy_msl::race_access(alloy_bc, " + std::to_string(slot->second) + ", " +
                 std::to_string(t.line) + ", " + (write ? "1" : "0") + ", &(" + written(toks, out, i);
        out[last] = written(toks, out, last) + "), (const void*)(" + t.text + ")))";
      }
    }
  }

  // Runaway loops can be stopped (runtime keep_going(), docs/design/faults.md):
  // `while (c)` -> `while ((c) && ::alloy_msl::keep_going())` (do-while too),
  // `for (i; ; s)` -> `for (i; ::alloy_msl::keep_going(); s)` and `for (i; c; )`
  // -> `for (i; (c) && ::alloy_msl::keep_going(); )`. Counted loops (a
  // condition and a step) and `while (0)` are left alone, so they still
  // unroll or fold away; the poll comes after the condition.
  static void poll_loops(const std::vector<Token>& toks, Out& out) {
    constexpr const char* kPoll = "::alloy_msl::keep_going()";
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
      const bool is_while = toks[i].is_ident("while"), is_for = toks[i].is_ident("for");
      if (!(is_while || is_for) || !toks[i + 1].is_punct("(") || out[i]) continue;
      const std::size_t close = closing(toks, i + 1, ")");
      if (close == 0 || close == i + 2) continue;
      // `do { ... } while (0)` (macro bodies) runs once.
      if (is_while && close == i + 3 && (toks[i + 2].is("0") || toks[i + 2].is_ident("false"))) continue;
      if (is_while) {
        out[i + 1] = written(toks, out, i + 1) + "(";
        out[close] = ") && " + std::string(kPoll) + written(toks, out, close);
        continue;
      }
      std::size_t semis[2] = {0, 0};
      int n = 0, depth = 0;
      for (std::size_t k = i + 2; k < close && n < 3; ++k) {
        if (opens_bracket(toks[k])) ++depth;
        if (closes_bracket(toks[k])) --depth;
        if (depth == 0 && toks[k].is_punct(";")) {
          if (n < 2) semis[n] = k;
          ++n;
        }
      }
      if (n != 2) continue;  // a range-for, or not a loop header we know
      if (semis[1] == semis[0] + 1) {
        out[semis[0]] = written(toks, out, semis[0]) + " " + kPoll;
      } else if (close == semis[1] + 1) {
        out[semis[0]] = written(toks, out, semis[0]) + " (";
        out[semis[1]] = ") && " + std::string(kPoll) + written(toks, out, semis[1]);
      }
    }
  }

  // The `)` or `]` (`closer`) closing the bracket at `open`; 0 when unclosed.
  static std::size_t closing(const std::vector<Token>& toks, std::size_t open, const char* closer) {
    int depth = 0;
    for (std::size_t k = open; k < toks.size(); ++k) {
      if (opens_bracket(toks[k])) ++depth;
      if (closes_bracket(toks[k]) && --depth == 0) return toks[k].is_punct(closer) ? k : 0;
    }
    return 0;
  }

  // Gives each array declared by the `threadgroup` declaration at `i` a slot;
  // returns the index of the declaration's `;` (or of its last token).
  std::size_t register_threadgroup_arrays(const std::vector<Token>& toks, std::size_t i) {
    int depth = 0;
    std::size_t k = i + 1;
    for (; k < toks.size(); ++k) {
      const Token& t = toks[k];
      if (opens_bracket(t) || t.is_punct("<")) ++depth;
      if (closes_bracket(t) || t.is_punct(">")) --depth;
      if (depth == 0 && t.is_punct(";")) break;
      if (depth == 0 && t.kind == TokenKind::Identifier && k + 1 < toks.size() && toks[k + 1].is_punct("[") &&
          !slots_.count(t.text)) {
        slots_[t.text] = static_cast<int>(checked_->size());
        checked_->push_back(t.text);
      }
    }
    return k < toks.size() ? k : toks.size() - 1;
  }

  void identifier(const std::vector<Token>& toks, std::size_t i, Out& out, bool program_scope) {
    const Token& t = toks[i];
    if (is_member_access(toks, i)) {
      // (`s.xy()` calls a struct's member function: a swizzle is no function)
      const bool called = i + 1 < toks.size() && toks[i + 1].is_punct("(");
      if (auto idx = called ? std::nullopt : swizzle_indices(t.text)) {
        bool assigned = i + 1 < toks.size() && is_assignment(toks[i + 1]);
        out[i] = std::string("template ") + (assigned ? "swizzle_ref<" : "swizzle<") + *idx + ">()";
      }
      return;
    }
    if (t.is("char") && names_data_char(toks, i)) {
      out[i] = "int8_t";
    } else if (t.is("device") || t.is("thread")) {
      out[i] = "";
    } else if (t.is("constant")) {
      if (program_scope && !qualifies_pointee(toks, i)) {
        out[i] = "ALLOY_PROGRAM_CONSTANT";
        drop_const_specifiers(toks, i, out);
      } else {
        // Constant memory is read-only: `constant float& s` must stay const.
        out[i] = has_const_specifier(toks, i) ? "" : "const";
      }
    } else if (t.is("threadgroup")) {
      out[i] = declares_threadgroup_storage(toks, i) ? "ALLOY_THREADGROUP" : "";
    } else if (conditionals_ == 0 && !user_names_.count(t.text) && !(i > 0 && toks[i - 1].is_punct("::") && i > 1 &&
                                               toks[i - 2].kind == TokenKind::Identifier &&
                                               user_names_.count(toks[i - 2].text))) {
      if (auto why = invalid_vector_type(t.text))
        throw_compile_error(kWhere, file_, text_, t.line, t.col, *why);
    }
  }

  // `threadgroup T name[N]...;` at the kernel's own scope, placed by
  // storage_ (a CUDA kernel over 48 KB of threadgroup memory):
  //  - StaticKept: static storage, then `alloy_msl::cuda::keep_threadgroup(
  //    &name);` so that ptxas counts the array even if it is never read;
  //  - Dynamic: a reference into the dynamic buffer at the next offset,
  //    `T (&name)[N] = *alloy_msl::cuda::threadgroup_take<T[N]>(
  //    alloy_tg_cursor);`. These declarations run once, in order, so the
  //    offsets fold to constants.
  // False (plain static storage) for forms it does not take: several
  // declarators or an initializer.
  bool place_threadgroup(const std::vector<Token>& toks, std::size_t i, Out& out) const {
    std::size_t end = i + 1, name = 0;
    int depth = 0;
    for (; end < toks.size(); ++end) {
      const Token& t = toks[end];
      if (t.is_punct("[") || t.is_punct("(") || t.is_punct("<")) ++depth;
      if (t.is_punct("]") || t.is_punct(")") || t.is_punct(">")) --depth;
      if (depth == 0 && (t.is_punct(",") || t.is_punct("=") || t.is_punct("{"))) return false;
      if (depth == 0 && t.is_punct(";")) break;
      // The declarator: the last identifier before the dimensions (or `;`).
      if (depth == 0 && t.kind == TokenKind::Identifier && end + 1 < toks.size() &&
          (toks[end + 1].is_punct("[") || toks[end + 1].is_punct(";")))
        name = end;
    }
    if (end >= toks.size() || name == 0 || name == i + 1) return false;
    if (storage_ == KernelSpec::ThreadgroupStorage::StaticKept) {
      out[i] = "ALLOY_THREADGROUP";
      out[end] = "; alloy_msl::cuda::keep_threadgroup(&" + toks[name].text + ");";
      return true;
    }
    std::string type, dims;
    for (std::size_t k = i + 1; k < name; ++k) type += (k > i + 1 ? " " : "") + toks[k].text;
    for (std::size_t k = name + 1; k < end; ++k) dims += toks[k].text;
    out[i] = "";
    out[name] = "(&" + toks[name].text + ")";
    out[end] = " = *alloy_msl::cuda::threadgroup_take<" + type + dims + ">(alloy_tg_cursor);";
    return true;
  }

  // Whether the type that `constant` at `i` qualifies already says `const`
  // (`const constant T*`, `constant T const&`).
  static bool has_const_specifier(const std::vector<Token>& toks, std::size_t i) {
    for (std::size_t k = i; k-- > 0;) {
      if (toks[k].is_ident("const")) return true;
      if (toks[k].kind != TokenKind::Identifier && !toks[k].is_punct("::")) break;
    }
    int angles = 0;
    for (std::size_t k = i + 1; k < toks.size(); ++k) {
      const Token& t = toks[k];
      if (t.is_ident("const") && angles == 0) return true;
      if (t.is_punct("<")) ++angles;
      else if (t.is_punct(">")) --angles;
      else if (t.is_punct(">>")) angles -= 2;
      else if (angles <= 0 && t.kind != TokenKind::Identifier && !t.is_punct("::")) break;
    }
    return false;
  }

  // `#pragma once`, `#pragma METAL internals : enable`.
  static bool is_dropped_pragma(const Token& t) {
    if (directive_name(t) != "pragma") return false;
    std::size_t p = t.text.find("pragma") + 6;
    std::size_t b = t.text.find_first_not_of(" \t", p);
    if (b == std::string::npos) return false;
    std::string_view rest = std::string_view(t.text).substr(b);
    return rest.substr(0, 4) == "once" || rest.substr(0, 5) == "METAL";
  }

  // `#pragma clang loop unroll(full|enable|disable)` and `unroll_count(N)`,
  // which Metal's compiler (clang) takes and NVRTC ignores, become the
  // targets' own unrolling (ALLOY_LOOP_UNROLL..., runtime preludes): a full
  // unroll is what keeps a loop over a cooperative tensor's elements in
  // registers rather than in local memory.
  static std::optional<std::string> loop_unroll_pragma(const Token& t) {
    if (directive_name(t) != "pragma") return std::nullopt;
    std::string words;  // the pragma's text without blanks
    for (char c : std::string_view(t.text).substr(t.text.find("pragma") + 6))
      if (c != ' ' && c != '\t') words += c;
    if (words.rfind("clangloop", 0) != 0) return std::nullopt;
    if (words == "clangloopunroll(full)" || words == "clangloopunroll(enable)") return "ALLOY_LOOP_UNROLL";
    if (words == "clangloopunroll(disable)") return "ALLOY_LOOP_UNROLL_BY(1)";
    const std::string count = "clangloopunroll_count(";
    if (words.rfind(count, 0) == 0 && words.back() == ')') {
      const std::string n = words.substr(count.size(), words.size() - count.size() - 1);
      if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos) return "ALLOY_LOOP_UNROLL_BY(" + n + ")";
    }
    return std::nullopt;
  }

  // Metal's `char` is one type with int8_t (an int8 input is `int8_t*`);
  // C++'s `char` is a third type beside signed and unsigned char. A plain
  // `char` becomes `int8_t` (one word: `char(x)` is a cast), except in the
  // constant address space,
  // where MSL keeps its strings (`constant char*`: MLX's os_log("mlx", ...)).
  static bool names_data_char(const std::vector<Token>& toks, std::size_t i) {
    if (i > 0 && (toks[i - 1].is_ident("signed") || toks[i - 1].is_ident("unsigned"))) return false;
    for (std::size_t k = i; k-- > 0 && (toks[k].is_ident("const") || toks[k].is_ident("constant"));)
      if (toks[k].is_ident("constant")) return false;
    return true;
  }

  // `f<i.value, j.value>()` where i and j are generic lambda parameters
  // (`[&](auto i) {...}`, MLX's steel const_for_loop), read in a nested
  // lambda through its reference capture: g++ takes the static member, but
  // NVRTC's front end refuses a captured reference in a constant expression.
  // A function parameter is never a constant, so `.value` in a template
  // argument can only be a static member: `decltype(i)::value` says so.
  void static_members_of_generic_parameters(const std::vector<Token>& toks, Out& out) {
    std::set<std::string> generic;
    for (std::size_t i = 1; i + 2 < toks.size(); ++i)
      if ((toks[i - 1].is_punct("(") || toks[i - 1].is_punct(",")) && toks[i].is_ident("auto") &&
          toks[i + 1].kind == TokenKind::Identifier && (toks[i + 2].is_punct(")") || toks[i + 2].is_punct(",")))
        generic.insert(toks[i + 1].text);
    if (generic.empty()) return;
    for (std::size_t i = 1; i + 3 < toks.size(); ++i)
      if ((toks[i - 1].is_punct("<") || toks[i - 1].is_punct(",")) && toks[i].kind == TokenKind::Identifier &&
          generic.count(toks[i].text) && toks[i + 1].is_punct(".") && toks[i + 2].is_ident("value") &&
          (toks[i + 3].is_punct(",") || toks[i + 3].is_punct(">")) && in_template_arguments(toks, i) && !out[i] &&
          !out[i + 1]) {
        out[i] = "::metal::remove_reference_t<decltype(" + toks[i].text + ")>";
        out[i + 1] = "::";
      }
  }

  // Whether token i is inside a template argument list: the nearest
  // bracket open before it is a `<` (nested `<...>` and brackets skipped).
  static bool in_template_arguments(const std::vector<Token>& toks, std::size_t i) {
    int depth = 0, angles = 0;
    while (i-- > 0) {
      const Token& t = toks[i];
      if (t.is_punct(")") || t.is_punct("]") || t.is_punct("}")) ++depth;
      else if (t.is_punct("(") || t.is_punct("[") || t.is_punct("{")) {
        if (depth == 0) return false;
        --depth;
      } else if (depth == 0 && t.is_punct(">")) ++angles;
      else if (depth == 0 && t.is_punct("<")) {
        if (angles == 0) return true;
        --angles;
      } else if (depth == 0 && t.is_punct(";")) return false;
    }
    return false;
  }

  // `template <class T> struct pointer_element<threadgroup T*> {...};` after
  // `...<device T*>` (MLX's steel type traits): once address spaces are
  // dropped the two are one specialization, defined twice. The later ones
  // are dropped; `constant` stays apart, as `const`.
  void drop_repeated_specializations(const std::vector<Token>& toks, Out& out) {
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
      if (!toks[i].is_ident("template") || !toks[i + 1].is_punct("<")) continue;
      std::size_t j = closing_angle(toks, i + 1);
      if (j == 0 || j + 3 >= toks.size() || !(toks[j + 1].is_ident("struct") || toks[j + 1].is_ident("class")) ||
          toks[j + 2].kind != TokenKind::Identifier || !toks[j + 3].is_punct("<"))
        continue;
      std::size_t k = closing_angle(toks, j + 3);
      if (k == 0 || k + 1 >= toks.size() || !toks[k + 1].is_punct("{")) continue;
      std::string key = toks[j + 2].text;
      bool spaced = false;
      for (std::size_t m = j + 4; m < k; ++m) {
        const Token& t = toks[m];
        if (t.is_ident("device") || t.is_ident("thread") || t.is_ident("threadgroup")) {
          spaced = true;
          continue;
        }
        if (t.is_ident("constant")) out[m] = "const";  // never a program-scope constant here
        key += " " + (t.is_ident("constant") ? std::string("const") : t.text);
      }
      if (!spaced || specializations_.insert(key).second) continue;
      int depth = 0;
      std::size_t e = k + 1;
      for (; e < toks.size(); ++e) {
        if (toks[e].is_punct("{")) ++depth;
        if (toks[e].is_punct("}") && --depth == 0) break;
      }
      if (e + 1 < toks.size() && toks[e + 1].is_punct(";")) ++e;
      if (e >= toks.size()) continue;
      for (std::size_t m = i; m <= e; ++m) out[m] = "";
      i = e;
    }
  }

  // `template [[host_name("f_f32")]] kernel void f<float>(...);`: the glue
  // names the instantiation it calls, so these go (and with them the
  // question of explicit instantiation of device functions under NVRTC).
  static void drop_explicit_instantiations(const std::vector<Token>& toks, Out& out) {
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
      if (!toks[i].is_ident("template") || toks[i + 1].is_punct("<") || !at_statement_start(toks, i)) continue;
      std::size_t e = i;
      int depth = 0;
      for (; e < toks.size(); ++e) {
        if (opens_bracket(toks[e])) ++depth;
        if (closes_bracket(toks[e])) --depth;
        if (depth == 0 && toks[e].is_punct(";")) break;
      }
      if (e >= toks.size()) return;
      for (std::size_t k = i; k <= e; ++k) out[k] = "";
      i = e;
    }
  }

  // `[[kernel]]`, `[[maybe_unused]]`, ... are dropped with everything inside.
  static void drop_attributes(const std::vector<Token>& toks, Out& out) {
    for (std::size_t i = 0; i < toks.size(); ++i) {
      if (!toks[i].is_punct("[[")) continue;
      int depth = 0;
      std::size_t j = i;
      for (; j < toks.size(); ++j) {
        if (toks[j].is_punct("[[")) ++depth;
        if (toks[j].is_punct("]]") && --depth == 0) break;
      }
      for (std::size_t k = i; k < toks.size() && k <= j; ++k) out[k] = "";
      i = j;
    }
  }

  static bool opens_namespace(const std::vector<Token>& toks, std::size_t brace) {
    if (brace >= 2 && toks[brace - 1].kind == TokenKind::String && toks[brace - 2].is("extern"))
      return true;  // extern "C" { ... }
    for (std::size_t k = brace; k-- > 0;) {
      const Token& t = toks[k];
      if (t.is_ident("namespace")) return true;
      if (t.kind != TokenKind::Identifier && !t.is_punct("::")) return false;
    }
    return false;
  }

  // `constant` at program scope that qualifies what a pointer or reference
  // points to, not a variable of its own: a function's return type
  // (`const constant size_t* shape_of(...)`) or an alias (`using P = const
  // constant size_t*;`), as AIX's shader library writes them. A `*` or `&`
  // before the declaration's name, initializer or parameter list.
  static bool qualifies_pointee(const std::vector<Token>& toks, std::size_t i) {
    int angles = 0;
    for (std::size_t j = i + 1; j < toks.size(); ++j) {
      const Token& t = toks[j];
      if (t.is_punct("<")) ++angles;
      if (t.is_punct(">")) --angles;
      if (t.is_punct(">>")) angles -= 2;
      if (angles > 0) continue;
      if (t.is_punct("*") || t.is_punct("&")) return true;
      if (t.is_punct("=") || t.is_punct(";") || t.is_punct("{") || t.is_punct("(") || t.is_punct("[") ||
          t.is_punct(","))
        return false;
    }
    return false;
  }

  // ALLOY_PROGRAM_CONSTANT carries its own constness: drop `const` and
  // `constexpr` among the declaration's specifiers (not after a `*`).
  static void drop_const_specifiers(const std::vector<Token>& toks, std::size_t i, Out& out) {
    std::size_t s = i;
    while (s > 0) {
      const Token& p = toks[s - 1];
      if (p.kind == TokenKind::Directive || p.is_punct(";") || p.is_punct("{") ||
          p.is_punct("}"))
        break;
      --s;
    }
    int angles = 0;
    for (std::size_t j = s; j < toks.size(); ++j) {
      const Token& t = toks[j];
      if (t.is_punct("<")) ++angles;
      if (t.is_punct(">")) --angles;
      if (t.is_punct(">>")) angles -= 2;
      if (angles > 0) continue;
      if (t.is_punct("=") || t.is_punct(";") || t.is_punct("{") || t.is_punct("(") ||
          t.is_punct("[") || t.is_punct("*") || t.is_punct("&"))
        break;
      if (j != i && (t.is_ident("const") || t.is_ident("constexpr"))) out[j] = "";
    }
  }

  std::vector<std::string>* checked_;  // bounds checks: the checked names, by slot
  bool races_ = false;                 // and race checks of the threadgroup arrays among them
  bool names_only_ = false;            // only the names given (the inputs), not the body's arrays
  int buffer_slots_ = 0;               // checked_'s slots before the body's threadgroup arrays
  const CpuThreadsPlan* threads_;      // coroutine threads: the bodies to rewrite for them
  const std::vector<std::string>* private_adds_;  // atomic outputs only added to (msl/private_adds.h)
  std::map<std::string, int> slots_;
  const LexedText& lexed_;
  std::string_view text_;
  Origin origin_;
  bool program_;  // a whole program (metal_library): `kernel` functions at program scope
  KernelSpec::ThreadgroupStorage storage_;
  int placed_ = 0;
  // Open #if/#ifdef/#ifndef blocks at the token being decided: a branch the
  // preprocessor may drop (`#if HEAD_DIM == 128` on a template parameter is
  // false in Metal) is not checked for names Metal lacks (`float8`).
  int conditionals_ = 0;
  std::set<std::string> specializations_;  // seen by drop_repeated_specializations  // kernel-scope threadgroup arrays placed by storage_
  std::string file_;
  const std::set<std::string>& user_names_;
  const std::set<std::string>& macros_;  // see rewrite_user_code
  Writer& w_;
};

}  // namespace

std::set<std::string> user_declared_names(const LexedText& lexed) {
  std::set<std::string> names;
  LexOptions opt;
  opt.file = lexed.file;
  for (const Token& d : lexed.tokens) {
    if (d.kind != TokenKind::Directive || directive_name(d) != "define") continue;
    LexOptions inner = opt;
    inner.directives = false;
    std::vector<Token> toks = lex_range(lexed.text, d.begin + 1, d.end, d.line, d.col + 1, inner);
    if (toks.size() >= 2) names.insert(toks[1].text);
  }
  const std::vector<Token>& toks = lexed.code;
  auto ident = [&](std::size_t k) { return k < toks.size() && toks[k].kind == TokenKind::Identifier; };
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.kind != TokenKind::Identifier) continue;
    if ((t.is("struct") || t.is("class") || t.is("union") || t.is("enum")) && ident(i + 1))
      names.insert(toks[i + 1].text);
    if (t.is("using") && ident(i + 1) && i + 2 < toks.size() && toks[i + 2].is_punct("="))
      names.insert(toks[i + 1].text);
    if (t.is("typedef")) {
      std::size_t j = i;
      while (j < toks.size() && !toks[j].is_punct(";")) ++j;
      for (std::size_t k = j; k-- > i;)
        if (toks[k].kind == TokenKind::Identifier) {
          names.insert(toks[k].text);
          break;
        }
    }
    // A declarator: after a type-ish token, before `= ; [ , ) ( {`.
    if (i > 0 && i + 1 < toks.size()) {
      const Token& p = toks[i - 1];
      const Token& n = toks[i + 1];
      bool after_type = (p.kind == TokenKind::Identifier && !is_keyword_before_expression(p.text)) ||
                        p.is_punct(">") || p.is_punct("*") || p.is_punct("&");
      bool before = n.is_punct("=") || n.is_punct(";") || n.is_punct("[") || n.is_punct(",") ||
                    n.is_punct(")") || n.is_punct("(") || n.is_punct("{");
      if (after_type && before) names.insert(t.text);
    }
  }
  return names;
}

void check_brackets(const LexedText& lexed) {
  const std::string_view text = lexed.text;
  const std::string& file = lexed.file;
  const std::vector<Token>& toks = lexed.tokens;
  LexOptions opt;
  opt.file = file;
  // A macro may open what the code closes (`#define BEGIN {`): then the code
  // alone cannot be checked.
  for (const Token& d : toks) {
    TextRange body;
    if (!define_body(text, d, body)) continue;
    LexOptions inner = opt;
    inner.directives = false;
    int balance = 0;
    for (const Token& t : lex_range(text, body.begin, body.end, body.line, body.col, inner)) {
      if (t.is_punct("{") || t.is_punct("(") || t.is_punct("[")) ++balance;
      if (t.is_punct("}") || t.is_punct(")") || t.is_punct("]")) --balance;
    }
    if (balance != 0) return;
  }
  auto closer_of = [](const std::string& open) {
    return open == "{" ? "}" : open == "(" ? ")" : open == "[" ? "]" : "]]";
  };
  std::vector<const Token*> open;
  for (const Token& t : toks) {
    if (t.kind != TokenKind::Punct) continue;
    if (t.is("{") || t.is("(") || t.is("[") || t.is("[[")) {
      open.push_back(&t);
    } else if (t.is("}") || t.is(")") || t.is("]") || t.is("]]")) {
      if (open.empty())
        throw_compile_error(kWhere, file, text, t.line, t.col, "unmatched '" + t.text + "'");
      const Token& o = *open.back();
      if (closer_of(o.text) != t.text)
        throw_compile_error(kWhere, file, text, t.line, t.col,
                            "'" + t.text + "' does not close the '" + o.text + "' opened at " +
                                file + ":" + std::to_string(o.line) + ":" + std::to_string(o.col));
      open.pop_back();
    }
  }
  if (!open.empty()) {
    const Token& o = *open.back();
    throw_compile_error(kWhere, file, text, o.line, o.col, "unclosed '" + o.text + "'");
  }
}

int rewrite_user_code(const LexedText& lexed, Origin origin, const std::set<std::string>& user_names, Writer& w,
                      KernelSpec::ThreadgroupStorage storage, bool whole_program, const CpuThreadsPlan* threads,
                      const std::set<std::string>* macros) {
  return Rewriter(lexed, origin, user_names, w, storage, whole_program, nullptr, threads, macros).run();
}

int rewrite_checked_body(const LexedText& lexed, const std::set<std::string>& user_names, Writer& w,
                         KernelSpec::ThreadgroupStorage storage, std::vector<std::string>& names,
                         const CpuThreadsPlan* threads, const std::set<std::string>* macros, bool races,
                         bool names_only) {
  return Rewriter(lexed, Origin::Source, user_names, w, storage, /*whole_program=*/false, &names, threads, macros,
                  races, names_only)
      .run();
}

}  // namespace alloy::msl

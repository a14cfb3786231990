#include "msl/cpu_threads.h"

#include <set>

#include "alloy/msl/program.h"
#include "msl/builtins.h"
#include "msl/emitter.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

constexpr std::size_t kWholeText = static_cast<std::size_t>(-1);

bool followed_by(const std::vector<Token>& toks, std::size_t i, const char* punct) {
  return i + 1 < toks.size() && toks[i + 1].is_punct(punct);
}


// `[` at i opens a lambda (not a subscript): it follows no operand.
bool opens_lambda(const std::vector<Token>& toks, std::size_t i) {
  if (!toks[i].is_punct("[") || i == 0) return toks[i].is_punct("[");
  static const std::set<std::string> keywords = {"return", "case", "throw", "else", "do", "co_return", "co_await"};
  const Token& p = toks[i - 1];
  switch (p.kind) {
    case TokenKind::Identifier: return keywords.count(p.text) > 0;
    case TokenKind::Number:
    case TokenKind::String:
    case TokenKind::Char: return false;
    default: return !(p.is(")") || p.is("]"));
  }
}

std::string where(const LexedText& text, const Token& t) {
  return "(" + text.file + " line " + std::to_string(t.line) + ")";
}


bool in_ranges(const CpuThreadsPlan& plan, const Token& t) {
  for (const auto& [b, e] : plan.bodies)
    if (t.begin >= b && t.begin < e) return true;
  return false;
}


}  // namespace

bool is_sync_use(const std::vector<Token>& toks, std::size_t i) {
  const Token& t = toks[i];
  if (t.kind != TokenKind::Identifier || is_member_access(toks, i)) return false;
  if (is_sync_name(t.text)) return true;
  return is_sync_function(t.text) && (followed_by(toks, i, "(") || followed_by(toks, i, "<"));
}

CpuThreadsPlan plan_cpu_threads(const KernelSpec& spec, const LexedKernel& lexed, const Analysis& analysis,
                                const RuntimeFeatures& features) {
  CpuThreadsPlan plan;
  if (!analysis.uses_sync) return plan;
  auto fibers = [&](const std::string& why) {
    plan.fibers_because = why;
    plan.bodies.clear();
    return plan;
  };
  if (spec.cpu_sync == KernelSpec::CpuSync::Fibers) return fibers("fibers were asked for (ALLOY_CPU_SYNC=fibers)");
  if (features.tensor) return fibers("tensor operations at a SIMD-group scope synchronise inside the runtime");

  if (spec.program_entry.empty()) {
    plan.bodies.emplace_back(0, kWholeText);
  } else {
    plan.whole_program = true;
    for (const ProgramKernel& k : parse_program(spec.source, spec.header).kernels) {
      std::pair<std::size_t, std::size_t> r{k.body_begin, k.body_end};
      bool seen = false;
      for (const auto& b : plan.bodies) seen = seen || b == r;
      if (!seen) plan.bodies.push_back(r);
    }
  }

  // Outside the kernels' bodies (the header, MLX's headers, a program's
  // helper functions, macros) a synchronising call would have to suspend a
  // function the translation leaves as it is.
  auto outside = [&](const LexedText& text, bool has_bodies) -> std::string {
    for (std::size_t i = 0; i < text.code.size(); ++i) {
      const Token& t = text.code[i];
      if (is_sync_use(text.code, i) && !(has_bodies && in_ranges(plan, t)))
        return "'" + t.text + "' is used outside a kernel's own body " + where(text, t) +
               ", in a function or macro the kernel calls";
    }
    return "";
  };
  for (const IncludedFile& f : lexed.includes)
    if (std::string why = outside(f.lexed, false); !why.empty()) return fibers(why);
  if (std::string why = outside(lexed.header, false); !why.empty()) return fibers(why);
  // Macro bodies appear in `code` in place of their directive; in `tokens`
  // the directive is one token, so a use found in `code` but not in `tokens`
  // is inside a macro.
  std::size_t uses_in_code = 0, uses_in_tokens = 0, returns_in_code = 0, returns_in_tokens = 0;
  for (std::size_t i = 0; i < lexed.source.code.size(); ++i) {
    uses_in_code += is_sync_use(lexed.source.code, i);
    returns_in_code += lexed.source.code[i].is_ident("return");
  }
  const std::vector<Token>& toks = lexed.source.tokens;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    uses_in_tokens += is_sync_use(toks, i);
    returns_in_tokens += toks[i].is_ident("return");
  }
  if (uses_in_code != uses_in_tokens) return fibers("a macro of the source synchronises");
  if (returns_in_code != returns_in_tokens) return fibers("a macro of the source returns");
  if (plan.whole_program)
    if (std::string why = outside(lexed.source, true); !why.empty()) return fibers(why);

  const std::set<std::string> user_names = all_user_names(lexed);
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (plan.whole_program && t.is_ident("kernel") && !in_ranges(plan, t) && i + 1 < toks.size() &&
        !toks[i + 1].is_ident("void"))
      return fibers("a kernel function " + where(lexed.source, t) + " is not declared `kernel void`");
    if (!in_ranges(plan, t)) continue;
    if (opens_lambda(toks, i)) return fibers("a kernel's body holds a lambda " + where(lexed.source, t));
    if ((t.is_ident("struct") || t.is_ident("class") || t.is_ident("union")) && i + 2 < toks.size() &&
        (toks[i + 2].is_punct("{") || toks[i + 2].is_punct(":") || toks[i + 1].is_punct("{")))
      return fibers("a kernel's body defines a type " + where(lexed.source, t));
    if (!is_sync_use(toks, i)) continue;
    if (features.matrix && is_region_matrix_name(t.text)) continue;  // (regions only: below)
    if (!is_awaitable_sync_function(t.text) || !followed_by(toks, i, "("))
      return fibers("'" + t.text + "' " + where(lexed.source, t) + " has no coroutine form");
    if (user_names.count(t.text)) return fibers("the program declares its own '" + t.text + "'");
  }
  // A simdgroup matrix's operations run inside the runtime: a product
  // exchanges as a simd_ function does between regions, but is no awaiter.
  if (features.matrix) {
    plan.regions_only = true;  // (why it runs on fibers, if so, is known once regions were tried: plan_threads)
    return plan;
  }
  plan.coroutines = true;
  return plan;
}

void await_sync_calls(const CpuThreadsPlan& plan, const std::vector<Token>& toks,
                      std::vector<std::optional<std::string>>& out) {
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (!in_ranges(plan, t)) {
      // A program's kernel function returns its coroutine.
      // (Not in an explicit instantiation: the rewrite has dropped those.)
      if (plan.whole_program && t.is_ident("kernel") && i + 1 < toks.size() && toks[i + 1].is_ident("void") &&
          !out[i + 1])
        out[i + 1] = "::alloy_msl::cpu::thread_task";
      continue;
    }
    if (t.is_ident("return")) {
      out[i] = "co_return";
      continue;
    }
    if (plan.whole_program && t.is_punct("}")) {
      for (const auto& [b, e] : plan.bodies)
        if (t.end == e) out[i] = "co_return; " + written(toks, out, i);
      continue;
    }
    if (t.kind != TokenKind::Identifier || is_member_access(toks, i) || !is_awaitable_sync_function(t.text) ||
        !followed_by(toks, i, "("))
      continue;
    std::size_t start = i;
    if (i >= 2 && toks[i - 1].is_punct("::") && toks[i - 2].is_ident("metal")) {
      start = i - 2;
      if (start >= 1 && toks[start - 1].is_punct("::")) --start;
    }
    const std::size_t close = matching_paren(toks, i + 1);
    if (close >= toks.size()) continue;  // unbalanced: check_brackets reports it
    out[start] = "(co_await " + written(toks, out, start);
    out[close] = written(toks, out, close) + ")";
  }
}

}  // namespace alloy::msl

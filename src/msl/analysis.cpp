// What a kernel body uses, decided on tokens: `my_grid_size` is not
// `grid_size`, and names in comments or strings do not count.
#include "msl/analysis.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "alloy/msl/program.h"
#include "msl/builtins.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

// Identifiers named as themselves (not as members of something).
std::set<std::string> free_identifiers(const std::vector<Token>& toks) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < toks.size(); ++i)
    if (toks[i].kind == TokenKind::Identifier && !is_member_access(toks, i)) names.insert(toks[i].text);
  return names;
}

bool uses_sync(const std::vector<Token>& toks) {
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    if (t.kind != TokenKind::Identifier || is_member_access(toks, i)) continue;
    // Threadgroup storage, not a pointer parameter of a helper that may never run.
    if (t.is("threadgroup")) {
      if (declares_threadgroup_storage(toks, i)) return true;
      continue;
    }
    if (is_sync_name(t.text)) return true;
    bool called = i + 1 < toks.size() && (toks[i + 1].is_punct("(") || toks[i + 1].is_punct("<"));
    if (called && is_sync_function(t.text)) return true;
  }
  return false;
}

bool uses_atomics(const std::vector<Token>& toks) {
  for (std::size_t i = 0; i < toks.size(); ++i)
    if (toks[i].kind == TokenKind::Identifier && !is_member_access(toks, i) &&
        is_atomic_name(toks[i].text))
      return true;
  return false;
}

// Kernels that must round each product on their own (mflux's Qwen-Image RoPE,
// rounding as MLX's composed ops do) say so with the pragma; Metal's compiler
// (clang) keeps it, but g++ ignores the STDC form and NVRTC knows neither, and
// both contract by default. The backends then compile the whole kernel
// without contraction: the pragma's block may only be narrower than that, and
// contraction outside it is allowed, never required.
bool turns_fp_contraction_off(const std::vector<Token>& toks) {
  for (const Token& t : toks) {
    if (t.kind != TokenKind::Directive || directive_name(t) != "pragma") continue;
    // The words after `pragma`, with `(` and `)` as words of their own.
    std::vector<std::string> words(1);
    for (char c : std::string_view(t.text).substr(t.text.find("pragma") + 6)) {
      if (c == '(' || c == ')') words.insert(words.end(), {std::string(1, c), ""});
      else if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') words.emplace_back();
      else words.back() += c;
    }
    std::erase(words, std::string());
    using Words = std::vector<std::string>;
    if (words == Words{"STDC", "FP_CONTRACT", "OFF"} || words == Words{"clang", "fp", "contract", "(", "off", ")"})
      return true;
  }
  return false;
}

bool fp_contract_off(const LexedKernel& lexed) {
  bool off = turns_fp_contraction_off(lexed.source.tokens) || turns_fp_contraction_off(lexed.header.tokens);
  for (const IncludedFile& f : lexed.includes) off = off || turns_fp_contraction_off(f.lexed.tokens);
  return off;
}

// The alignment the pointee of a cast's type tokens [b, e) has, when they
// name a pointer into device or constant memory (`const device float4*`,
// `device metal::atomic<uint>*`); 0 for any other type.
unsigned device_pointee_alignment(const std::vector<Token>& toks, std::size_t b, std::size_t e) {
  if (e <= b || !toks[e - 1].is_punct("*")) {
    // `T* const`: the pointer itself const.
    if (e < b + 2 || !toks[e - 1].is_ident("const") || !toks[e - 2].is_punct("*")) return 0;
  }
  bool device = false;
  std::string_view type;
  for (std::size_t i = b; i < e; ++i) {
    const Token& t = toks[i];
    if (t.is_punct("<") || t.is_punct("*")) break;  // a template's arguments: atomic<T> is T's size
    if (t.kind != TokenKind::Identifier) continue;
    if (t.is("device") || t.is("constant")) device = true;
    else if (!t.is("const") && !t.is("volatile") && !t.is("metal") && !t.is("struct") && type.empty()) type = t.text;
  }
  if (!device || type.empty()) return 0;
  if (type == "atomic" || is_atomic_name(type) || type == "void") return 0;
  const std::optional<unsigned> a = metal_type_alignment(type);
  return a ? *a : 16;  // a user's type: as a float4 member would make it
}

// assumed_buffer_alignment over one token list: C-style casts
// `(device float4*)p` and `reinterpret_cast<const device float4*>(p)`.
unsigned cast_buffer_alignment(const std::vector<Token>& toks) {
  unsigned most = 0;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    unsigned a = 0;
    if (toks[i].is_punct("(")) {
      const std::size_t close = matching_paren(toks, i);
      if (close < toks.size()) a = device_pointee_alignment(toks, i + 1, close);
    } else if ((toks[i].is_ident("reinterpret_cast") || toks[i].is_ident("static_cast")) && i + 1 < toks.size() &&
               toks[i + 1].is_punct("<")) {
      const std::size_t close = closing_angle(toks, i + 1);
      if (close > i + 1) a = device_pointee_alignment(toks, i + 2, close);
    }
    if (a > 8) most = std::max(most, a);
  }
  return most;
}

unsigned assumed_buffer_alignment(const LexedKernel& lexed) {
  unsigned most = std::max(cast_buffer_alignment(lexed.source.code), cast_buffer_alignment(lexed.header.code));
  for (const IncludedFile& f : lexed.includes) most = std::max(most, cast_buffer_alignment(f.lexed.code));
  return most;
}

}  // namespace

Analysis analyze(const KernelSpec& spec) { return analyze(spec, lex_kernel(spec)); }

Analysis analyze(const KernelSpec& spec, const LexedKernel& lexed) {
  const std::vector<Token>& body = lexed.source.code;
  const std::vector<Token>& header = lexed.header.code;
  std::set<std::string> used = free_identifiers(body);

  Analysis a;
  if (!spec.program_entry.empty()) {
    // A whole program: its parameters say what it is passed (no shapes, no
    // generated attributes). Whether the entry synchronises is decided on
    // its own body and everything outside the other kernels' bodies (the
    // helpers it may call); threadgroup parameters count too.
    a.uses_shape = a.uses_strides = a.uses_ndim = std::vector<bool>(spec.inputs.size(), false);
    const ProgramInfo info = parse_program(spec.source, spec.header);
    std::size_t own_begin = 0, own_end = 0;
    for (const ProgramKernel& k : info.kernels)
      if (k.name == spec.program_entry) own_begin = k.body_begin, own_end = k.body_end;
    std::vector<Token> reachable;
    for (const Token& t : body) {
      bool other = false;
      for (const ProgramKernel& k : info.kernels)
        other = other || (t.begin >= k.body_begin && t.begin < k.body_end && k.body_begin != own_begin);
      if (!other || (t.begin >= own_begin && t.begin < own_end)) reachable.push_back(t);
    }
    a.uses_sync = uses_sync(reachable) || uses_sync(header) || !spec.threadgroup_bytes.empty();
    a.uses_atomics = uses_atomics(reachable) || uses_atomics(header);
    for (const IncludedFile& f : lexed.includes) {
      a.uses_sync = a.uses_sync || uses_sync(f.lexed.code);
      a.uses_atomics = a.uses_atomics || uses_atomics(f.lexed.code);
    }
    a.fp_contract_off = fp_contract_off(lexed);
    a.assumed_buffer_alignment = assumed_buffer_alignment(lexed);
    return a;
  }
  // Like MLX, shape names (and attributes) come from `source` only: the
  // header is outside the kernel, where they are not in scope.
  for (const ParamSpec& in : spec.inputs) {
    bool has_shape_info = !in.is_scalar;  // MLX passes none for 0-d inputs
    a.uses_shape.push_back(has_shape_info && used.count(in.name + "_shape"));
    a.uses_strides.push_back(has_shape_info && used.count(in.name + "_strides"));
    a.uses_ndim.push_back(has_shape_info && used.count(in.name + "_ndim"));
  }
  if (spec.dialect == Dialect::Cuda) {
    // A CUDA body has no Metal attributes, sees its block as CUDA made it
    // (no coarsening), and declares its own atomics.
    a.uses_sync = true;
    std::set<std::string> in_header = free_identifiers(header);
    for (const char* n : {"cooperative_groups", "cg"})
      a.uses_cooperative_groups = a.uses_cooperative_groups || used.count(n) || in_header.count(n);
    return a;
  }
  for (const AttributeInfo& attr : metal_attributes())
    if (used.count(std::string(attr.name))) a.attributes.emplace_back(attr.name);
  a.uses_sync = uses_sync(body) || uses_sync(header);
  a.uses_atomics = spec.atomic_outputs || uses_atomics(body) || uses_atomics(header);
  // Included MLX headers: conservative, as for the header.
  for (const IncludedFile& f : lexed.includes) {
    a.uses_sync = a.uses_sync || uses_sync(f.lexed.code);
    a.uses_atomics = a.uses_atomics || uses_atomics(f.lexed.code);
  }
  a.fp_contract_off = fp_contract_off(lexed);
  a.assumed_buffer_alignment = assumed_buffer_alignment(lexed);
  return a;
}

}  // namespace alloy::msl

// Entry points of a whole Metal program, found on tokens: `kernel void f(...)`
// definitions at program scope, and explicit instantiations
// `template [[host_name("f_f32")]] kernel void f<float>(...);` of templated
// kernels (whose parameter names and attributes come from the definition,
// their types from the instantiation).
#include "alloy/msl/program.h"

#include <map>
#include <set>

#include "alloy/msl/translate.h"
#include "msl/builtins.h"
#include "msl/lexer.h"
#include "msl/source_text.h"
#include "msl/token_rules.h"

namespace alloy::msl {
namespace {

constexpr std::string_view kWhere = "metal_library";
// Metal's argument tables hold 31 entries: [[buffer(0)]] to [[buffer(30)]],
// and as many threadgroup memory slots.
constexpr long long kMaxArgumentIndex = 30;
// No GPU runs more threads in a threadgroup; a larger declared limit is no limit.
constexpr long long kMaxThreadsLimit = 1 << 20;

using Tokens = std::vector<Token>;

bool opens(const Token& t) { return opens_bracket(t); }
bool closes(const Token& t) { return closes_bracket(t); }

std::string join(const Tokens& toks, std::size_t b, std::size_t e) {
  std::string s;
  for (std::size_t k = b; k < e; ++k) {
    const Token& t = toks[k];
    bool tight = t.is_punct("::") || t.is_punct("<") || t.is_punct(">") || t.is_punct(",") || t.is_punct("*") ||
                 t.is_punct("&") ||
                 (k > b && (toks[k - 1].is_punct("::") || toks[k - 1].is_punct("<") || toks[k - 1].is_punct(",")));
    if (!s.empty() && !tight) s += ' ';
    if (t.is_punct(",")) {
      s += ", ";
      continue;
    }
    s += t.text;
  }
  return s;
}

bool is_address_space(const Token& t) {
  return t.is_ident("device") || t.is_ident("constant") || t.is_ident("threadgroup") || t.is_ident("thread") ||
         t.is_ident("threadgroup_imageblock") || t.is_ident("ray_data") || t.is_ident("object_data");
}

bool is_qualifier(const Token& t) {
  return is_address_space(t) || t.is_ident("const") || t.is_ident("volatile") || t.is_ident("restrict");
}

// What the program's attributes `[[...]]` before a kernel say.
struct KernelAttributes {
  std::string host_name;
  int max_threads = 0;
};

class Parser {
 public:
  // The header's program-scope `using` declarations come first, so that a
  // kernel parameter may name a tensor alias declared there (Metal prepends
  // the header to the source).
  Parser(const std::string& source, const std::string& header)
      : text_(source), header_text_(header), lexed_(lex_text(source, "source")) {
    if (!header.empty()) {
      const LexedText lexed_header = lex_text(header, "header");
      int braces = 0;
      const std::vector<Token>& h = lexed_header.tokens;
      for (std::size_t i = 0; i < h.size(); ++i) {
        if (h[i].is_punct("{")) ++braces;
        if (h[i].is_punct("}")) --braces;
        if (braces != 0 || !h[i].is_ident("using") || i + 2 >= h.size() || !h[i + 2].is_punct("=")) continue;
        for (; i < h.size() && !h[i].is_punct(";"); ++i) toks_.push_back(h[i]);
        if (i < h.size()) toks_.push_back(h[i]);
      }
      header_tokens_ = toks_.size();
    }
    for (const Token& t : lexed_.tokens)
      if (t.kind != TokenKind::Directive) toks_.push_back(t);
  }

  ProgramInfo run() {
    find_tensor_aliases();
    std::map<std::string, ProgramKernel> templates;  // templated kernel definitions by function name
    int braces = 0;
    for (std::size_t i = 0; i < toks_.size(); ++i) {
      if (toks_[i].is_punct("{")) ++braces;
      if (toks_[i].is_punct("}")) --braces;
      if (braces > 0 && toks_[i].is_punct("[[")) warn_statement_attribute(i);
    }
    braces = 0;
    for (std::size_t i = 0; i < toks_.size(); ++i) {
      const Token& t = toks_[i];
      if (t.is_punct("{")) ++braces;
      if (t.is_punct("}")) --braces;
      if (braces != 0 || !t.is_ident("kernel")) continue;
      i = kernel_at(i, templates);
    }
    info_.function_constants = find_function_constants(text_);
    if (info_.kernels.empty()) {
      std::string msg = "the program declares no kernel: an entry point is `kernel void name(...)`";
      if (!templates.empty())
        msg += " (templated kernels need an explicit instantiation: `template [[host_name(\"" +
               templates.begin()->first + "_f32\")]] kernel void " + templates.begin()->first + "<float>(...);`)";
      throw_compile_error(kWhere, "source", text_, 1, 0, msg);
    }
    std::map<std::string, int> seen;
    for (const ProgramKernel& k : info_.kernels) {
      auto [it, fresh] = seen.emplace(k.name, k.line);
      if (!fresh)
        throw_compile_error(kWhere, "source", text_, k.line, 0,
                            "two kernels are named '" + k.name + "' (the first at line " +
                                std::to_string(it->second) + "); entry point names must be unique");
    }
    return std::move(info_);
  }

 private:
  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    const bool in_header = &at >= toks_.data() && &at < toks_.data() + header_tokens_;
    throw_compile_error(kWhere, in_header ? "header" : "source", in_header ? header_text_ : text_, at.line, at.col,
                        what);
  }

  // `[[unroll]]` and other attributes Metal does not know, on statements:
  // Apple's compiler warns and ignores them, and so do we.
  void warn_statement_attribute(std::size_t i) {
    if (i + 1 >= toks_.size() || toks_[i + 1].kind != TokenKind::Identifier) return;
    static const std::set<std::string> known = {"likely", "unlikely", "fallthrough", "maybe_unused", "nodiscard",
                                                "assume", "clang"};
    const Token& name = toks_[i + 1];
    if (known.count(name.text)) return;
    std::string hint = name.is("unroll") ? "; to unroll a loop write `#pragma unroll` on the line before it" : "";
    info_.warnings.push_back("source:" + std::to_string(name.line) + ":" + std::to_string(name.col) +
                             ": warning: unknown attribute '" + name.text + "' ignored" + hint + "\n" +
                             quote_line(text_, name.line, name.col));
  }

  // Reads the attributes `[[...]]` ending just before token `end`, walking
  // back; returns the index of the first token of them all.
  std::size_t attributes_before(std::size_t end, KernelAttributes& a) const {
    std::size_t k = end;
    while (k > 0 && toks_[k - 1].is_punct("]]")) {
      std::size_t open = k - 1;
      while (open > 0 && !toks_[open].is_punct("[[")) --open;
      for (std::size_t j = open + 1; j + 1 < k; ++j) {
        const Token& t = toks_[j];
        // host_name("add_" "f16"): adjacent literals are one string, as in C++.
        if (t.is_ident("host_name") && j + 2 < k && toks_[j + 2].kind == TokenKind::String) {
          a.host_name.clear();
          for (std::size_t q = j + 2; q < k && toks_[q].kind == TokenKind::String; ++q) {
            const std::string& s = toks_[q].text;
            a.host_name += s.size() >= 2 && s.front() == '"' ? s.substr(1, s.size() - 2) : s;
          }
        }
        if (t.is_ident("max_total_threads_per_threadgroup") && j + 2 < k &&
            toks_[j + 2].kind == TokenKind::Number) {
          const std::optional<long long> n = integer_literal(toks_[j + 2].text, kMaxThreadsLimit);
          if (!n) fail(toks_[j + 2], "max_total_threads_per_threadgroup takes a thread count up to " +
                                         std::to_string(kMaxThreadsLimit));
          a.max_threads = static_cast<int>(*n);
        }
      }
      k = open;
    }
    return k;
  }

  // The kernel whose `kernel` keyword is at `i` (`kernel void f(...)`, or the
  // attribute form `[[kernel]] void f(...)`): returns the index of its last token.
  std::size_t kernel_at(std::size_t i, std::map<std::string, ProgramKernel>& templates) {
    KernelAttributes attrs;
    // The attribute form: the return type follows the attributes after the
    // group holding `kernel`, which are read with those before it.
    std::size_t type_at = i + 1;
    if (i > 0 && (toks_[i - 1].is_punct("[[") || toks_[i - 1].is_punct(","))) {
      while (type_at < toks_.size() && !toks_[type_at].is_punct("]]")) ++type_at;
      while (type_at + 1 < toks_.size() && toks_[type_at + 1].is_punct("[["))
        for (++type_at; type_at < toks_.size() && !toks_[type_at].is_punct("]]");) ++type_at;
      if (type_at >= toks_.size()) fail(toks_[i], "the attribute `[[kernel]]` is not closed");
      ++type_at;
    }
    std::size_t first = attributes_before(type_at == i + 1 ? i : type_at, attrs);
    // `template <...>` before: a templated definition; a bare `template`: an
    // explicit instantiation.
    bool is_template = false, is_instantiation = false, is_specialization = false;
    if (first > 0 && toks_[first - 1].is_ident("template")) {
      is_instantiation = true;
    } else if (first > 2 && toks_[first - 1].is_punct(">") && toks_[first - 2].is_punct("<") &&
               toks_[first - 3].is_ident("template")) {
      // `template <> [[host_name("k_i32")]] kernel void k<int>(...) { ... }`:
      // an explicit specialization, an entry point with a body of its own.
      is_specialization = true;
    } else if (first > 0 && toks_[first - 1].is_punct(">")) {
      std::size_t k = first - 1;
      int angles = 0;
      for (;; --k) {
        if (toks_[k].is_punct(">")) ++angles;
        if (toks_[k].is_punct(">>")) angles += 2;
        if (toks_[k].is_punct("<") && --angles == 0) break;
        if (k == 0) break;
      }
      if (k > 0 && toks_[k - 1].is_ident("template")) is_template = true;
    }
    std::size_t j = type_at;
    if (j >= toks_.size() || !toks_[j].is_ident("void")) fail(toks_[i], "a kernel must return void");
    ++j;
    if (j >= toks_.size() || toks_[j].kind != TokenKind::Identifier) fail(toks_[i], "the kernel needs a name");
    const Token& name = toks_[j++];
    std::string targs;
    if (j < toks_.size() && toks_[j].is_punct("<")) {
      std::size_t close = closing_angle(toks_, j);
      if (close == 0) fail(toks_[j], "unclosed template argument list");
      // A closing `>>` also closes the last argument's own list (`<4>>`).
      // The body's `char` is int8_t (MSL's char is a signed byte of data,
      // rewrite.cpp), so a `char` argument names that type too (AIX's
      // `matrixMulTiled<char, ...>` instantiations).
      targs = "<" + join_data_chars(j + 1, close) + (toks_[close].is_punct(">>") ? ">>" : ">");
      j = close + 1;
    }
    if (j >= toks_.size() || !toks_[j].is_punct("(")) fail(name, "expected the parameter list of kernel '" + name.text + "'");
    std::size_t close = matching_bracket(toks_, j);
    if (close >= toks_.size()) fail(toks_[j], "the parameter list of kernel '" + name.text + "' is not closed");
    std::vector<ProgramParam> params = parameters(j + 1, close, /*types_only=*/is_instantiation);
    std::size_t end = close + 1;
    while (end < toks_.size() && !toks_[end].is_punct("{") && !toks_[end].is_punct(";")) ++end;
    if (end >= toks_.size()) fail(name, "kernel '" + name.text + "' has no body");
    std::size_t last = toks_[end].is_punct("{") ? matching_bracket(toks_, end) : end;
    if (last >= toks_.size()) fail(toks_[end], "the body of kernel '" + name.text + "' is not closed: '{' has no '}'");

    ProgramKernel k;
    if (toks_[end].is_punct("{")) {
      k.body_begin = toks_[end].begin;
      k.body_end = toks_[last].end;
    }
    k.function = name.text;
    k.line = toks_[i].line;
    k.max_total_threads_per_threadgroup = attrs.max_threads;
    if (is_instantiation) {
      if (attrs.host_name.empty())
        fail(toks_[i], "an explicit instantiation of kernel '" + name.text +
                           "' needs a name: `template [[host_name(\"" + name.text + "_f32\")]] kernel void ...`");
      auto def = templates.find(name.text);
      if (def == templates.end())
        fail(name, "'" + name.text + "' is instantiated but no templated kernel of that name is defined before it");
      if (def->second.params.size() != params.size())
        fail(name, "the instantiation has " + std::to_string(params.size()) + " parameters; kernel '" + name.text +
                       "' has " + std::to_string(def->second.params.size()));
      k.name = attrs.host_name;
      k.template_args = targs;
      k.body_begin = def->second.body_begin;
      k.body_end = def->second.body_end;
      k.max_total_threads_per_threadgroup =
          attrs.max_threads ? attrs.max_threads : def->second.max_total_threads_per_threadgroup;
      // Names, roles and indices from the definition; concrete types here.
      k.params = def->second.params;
      for (std::size_t p = 0; p < params.size(); ++p) {
        k.params[p].type = params[p].type;
        if (k.params[p].role == ProgramParam::Role::Attribute) check_attribute_type(k.params[p]);
      }
      info_.kernels.push_back(std::move(k));
      return last;
    }
    k.params = std::move(params);
    if (is_specialization) {
      if (attrs.host_name.empty())
        fail(toks_[i], "an explicit specialization of kernel '" + name.text +
                           "' needs a name: `template <> [[host_name(\"" + name.text + "_i32\")]] kernel void ...`");
      if (!toks_[end].is_punct("{")) return last;  // a declaration
      for (const ProgramParam& p : k.params)
        if (p.role == ProgramParam::Role::Attribute) check_attribute_type(p);
      k.name = attrs.host_name;
      k.template_args = targs;
      info_.kernels.push_back(std::move(k));
      return last;
    }
    if (is_template) {
      if (!toks_[end].is_punct("{")) return last;  // a declaration
      templates[name.text] = std::move(k);
      return last;
    }
    if (!toks_[end].is_punct("{")) return last;  // a declaration of a kernel defined elsewhere
    for (const ProgramParam& p : k.params)
      if (p.role == ProgramParam::Role::Attribute) check_attribute_type(p);
    k.name = attrs.host_name.empty() ? name.text : attrs.host_name;
    info_.kernels.push_back(std::move(k));
    return last;
  }

  // join() of tokens [b, e) with each data `char` written int8_t.
  std::string join_data_chars(std::size_t b, std::size_t e) const {
    Tokens copy(toks_.begin() + b, toks_.begin() + e);
    for (std::size_t q = 0; q < copy.size(); ++q)
      if (copy[q].is_ident("char") && !(q > 0 && (copy[q - 1].is_ident("signed") || copy[q - 1].is_ident("unsigned"))))
        copy[q].text = "int8_t";
    return join(copy, 0, copy.size());
  }

  // Parameters between tokens [b, e), split at top-level commas.
  // `types_only`: an explicit instantiation's list, which repeats the types
  // (names and attributes are the definition's).
  std::vector<ProgramParam> parameters(std::size_t b, std::size_t e, bool types_only) {
    std::vector<ProgramParam> out;
    for (auto [start, k] : top_level_parts(toks_, b, e, true))
      if (k > start) out.push_back(parameter(start, k, types_only));
    // Metal numbers buffers without [[buffer(i)]] after the ones before them.
    int next_buffer = 0, next_tg = 0;
    for (ProgramParam& p : out) {
      int& next = p.role == ProgramParam::Role::Threadgroup ? next_tg : next_buffer;
      if (p.role == ProgramParam::Role::Attribute) continue;
      if (p.index < 0) p.index = next;
      next = p.index + 1;
    }
    return out;
  }

  ProgramParam parameter(std::size_t b, std::size_t e, bool types_only) {
    ProgramParam p;
    p.line = toks_[b].line;
    p.col = toks_[b].col;
    // Trailing attributes.
    std::size_t end = e;
    std::vector<std::pair<std::size_t, std::size_t>> attrs;
    while (end > b && toks_[end - 1].is_punct("]]")) {
      std::size_t open = end - 1;
      while (open > b && !toks_[open].is_punct("[[")) --open;
      attrs.emplace_back(open + 1, end - 1);
      end = open;
    }
    // Array dimensions: `tile[32][33]`.
    while (end > b && toks_[end - 1].is_punct("]")) {
      std::size_t open = end - 1;
      int depth = 0;
      for (;; --open) {
        if (toks_[open].is_punct("]")) ++depth;
        if (toks_[open].is_punct("[") && --depth == 0) break;
        if (open == b) break;
      }
      p.array_dims.insert(p.array_dims.begin(), join(toks_, open + 1, end - 1));
      end = open;
    }
    // The name: the last identifier, unless what is left before it would be
    // qualifiers only (`const uint` names nothing).
    std::size_t type_end = end;
    if (end > b + 1 && toks_[end - 1].kind == TokenKind::Identifier && !toks_[end - 2].is_punct("::")) {
      bool only_qualifiers = true;
      for (std::size_t k = b; k + 1 < end; ++k) only_qualifiers = only_qualifiers && is_qualifier(toks_[k]);
      if (!only_qualifiers) {
        p.name = toks_[end - 1].text;
        type_end = end - 1;
      }
    }
    if (std::size_t open = tensor_open(b, type_end))
      return tensor_parameter(p, b, open, type_end, attrs, types_only);
    if (type_end == b + 1 && tensor_aliases_.count(toks_[b].text)) {  // `mxfp8_tensor a [[buffer(0)]]`
      const std::size_t open = tensor_aliases_.at(toks_[b].text);
      return tensor_parameter(p, b, open, closing_angle(toks_, open) + 1, attrs, types_only);
    }
    std::string space;
    bool is_const = false, pointer = false, reference = false;
    Tokens type;
    int angles = 0;
    for (std::size_t k = b; k < type_end; ++k) {
      const Token& t = toks_[k];
      if (t.is_punct("<")) ++angles;
      if (t.is_punct(">")) --angles;
      if (angles == 0 && is_address_space(t)) {
        space = t.text;
        continue;
      }
      if (angles == 0 && (t.is_ident("const") || t.is_ident("volatile") || t.is_ident("restrict"))) {
        is_const = is_const || t.is_ident("const");
        continue;
      }
      if (angles == 0 && k + 1 == type_end && (t.is_punct("*") || t.is_punct("&"))) {
        (t.is_punct("*") ? pointer : reference) = true;
        continue;
      }
      type.push_back(t);
    }
    p.type = join(type, 0, type.size());
    if (p.type.rfind("metal::", 0) == 0) p.type = p.type.substr(7);
    if (p.type == "char" && space != "constant") p.type = "int8_t";  // as the translated code has it (rewrite.cpp)
    if (types_only) return p;

    const Token& at = toks_[b];
    std::string what = p.name.empty() ? "a parameter" : "parameter '" + p.name + "'";
    for (const auto& range : attrs) {
      // Plain variables: clang before 16 cannot capture structured bindings.
      const std::size_t ab = range.first, ae = range.second;
      if (ab >= ae || toks_[ab].kind != TokenKind::Identifier) continue;
      const Token& a = toks_[ab];
      auto number = [&]() {
        if (ab + 2 >= ae || toks_[ab + 2].kind != TokenKind::Number) fail(a, "expected [[" + a.text + "(index)]]");
        const std::optional<long long> n = integer_literal(toks_[ab + 2].text, kMaxArgumentIndex);
        if (!n) fail(toks_[ab + 2], "[[" + a.text + "(index)]] takes an index from 0 to " + std::to_string(kMaxArgumentIndex));
        return static_cast<int>(*n);
      };
      if (a.is("buffer")) {
        p.index = number();
      } else if (a.is("threadgroup")) {
        p.index = number();
      } else if (find_attribute(a.text)) {
        p.attribute = a.text;
      } else if (a.is("texture") || a.is("sampler") || a.is("stage_in") || a.is("visible_function_table") ||
                 a.is("intersection_function_table") || a.is("instance_acceleration_structure")) {
        fail(a, what + ": [[" + a.text + "]] parameters are not supported (only buffers, values, threadgroup "
                       "memory and thread-position attributes)");
      } else {
        fail(a, what + ": unknown attribute [[" + a.text + "]] on a kernel parameter");
      }
    }
    using R = ProgramParam::Role;
    if (!p.attribute.empty()) {
      p.role = R::Attribute;
    } else if (space == "threadgroup") {
      if (!pointer && p.array_dims.empty())
        fail(at, what + ": threadgroup memory is passed as a pointer (`threadgroup T* p [[threadgroup(i)]]`) "
                        "or an array");
      p.role = R::Threadgroup;
    } else if (pointer) {
      if (space != "device" && space != "constant")
        fail(at, what + ": a buffer pointer must say `device` or `constant`");
      p.role = (space == "constant" || is_const) ? R::ReadBuffer : R::WriteBuffer;
    } else if (reference) {
      if (space != "constant" && !(space == "device" && is_const))
        fail(at, what + ": a reference parameter must be `constant T&` or `device const T&` (a value the host "
                        "sets); a `device T&` the kernel writes is not supported, use `device T*`");
      p.role = R::ConstantValue;
    } else if (space.empty() && p.array_dims.empty()) {
      fail(at, what + " of type '" + p.type + "' needs an address space (`device`/`constant` pointer or "
                      "reference) or a thread-position attribute such as [[thread_position_in_grid]]");
    } else {
      fail(at, what + ": a kernel parameter in the " + space + " address space must be a pointer or a reference");
    }
    return p;
  }

  // Program-scope `using name = tensor<...>;` (the seed's `mxfp8_tensor`):
  // a kernel parameter of type `name` is that tensor.
  void find_tensor_aliases() {
    int braces = 0;
    for (std::size_t i = 0; i + 3 < toks_.size(); ++i) {
      if (toks_[i].is_punct("{")) ++braces;
      if (toks_[i].is_punct("}")) --braces;
      if (braces != 0 || !toks_[i].is_ident("using") || toks_[i + 1].kind != TokenKind::Identifier ||
          !toks_[i + 2].is_punct("="))
        continue;
      std::size_t end = i + 3;
      while (end < toks_.size() && !toks_[end].is_punct(";")) ++end;
      if (std::size_t open = tensor_open(i + 3, end); open && closing_angle(toks_, open) + 1 == end)
        tensor_aliases_[toks_[i + 1].text] = open;
      if (toks_[i + 3].is_ident("tensor_blockwise") ||
          (i + 5 < end && toks_[i + 3].is_ident("metal") && toks_[i + 5].is_ident("tensor_blockwise")))
        plane_aliases_.insert(toks_[i + 1].text);
    }
  }

  // `tensor<` (or `metal::tensor<`) opening the type [b, e): the index of its `<`, else 0.
  std::size_t tensor_open(std::size_t b, std::size_t e) const {
    std::size_t k = b;
    if (k + 2 < e && toks_[k].is_ident("metal") && toks_[k + 1].is_punct("::")) k += 2;
    return k + 1 < e && toks_[k].is_ident("tensor") && toks_[k + 1].is_punct("<") ? k + 1 : 0;
  }

  // `tensor<device [const] T, dextents<I, R> | extents<I, E...>[, tensor_handle]> name [[buffer(i)]]`.
  ProgramParam tensor_parameter(ProgramParam& p, std::size_t b, std::size_t open, std::size_t type_end,
                                const std::vector<std::pair<std::size_t, std::size_t>>& attrs, bool types_only) {
    const Token& at = toks_[b];
    const std::string what = p.name.empty() ? "a tensor parameter" : "tensor parameter '" + p.name + "'";
    const std::size_t close = closing_angle(toks_, open);
    if (close == 0 || close + 1 != type_end) fail(at, what + ": expected `tensor<device T, dextents<int, R>>`");
    // The template arguments, split at top-level commas.
    std::vector<std::pair<std::size_t, std::size_t>> args = top_level_parts(toks_, open + 1, close, true);
    if (args.empty()) args.emplace_back(open + 1, close);
    if (args.size() < 2) fail(at, what + ": a tensor names its element type and its extents");
    std::string space;
    bool is_const = false;
    Tokens element;
    for (std::size_t k = args[0].first; k < args[0].second; ++k) {
      const Token& t = toks_[k];
      if (is_address_space(t)) space = t.text;
      else if (t.is_ident("const")) is_const = true;
      else element.push_back(t);
    }
    p.type = join(element, 0, element.size());
    if (p.type.rfind("metal::", 0) == 0) p.type = p.type.substr(7);
    // The rank: dextents<I, R> says it; extents<I, E...> counts its E.
    std::size_t x = args[1].first;
    if (x + 2 < args[1].second && toks_[x].is_ident("metal") && toks_[x + 1].is_punct("::")) x += 2;
    const bool dynamic = toks_[x].is_ident("dextents");
    if ((!dynamic && !toks_[x].is_ident("extents")) || x + 1 >= args[1].second || !toks_[x + 1].is_punct("<"))
      fail(toks_[x], what + ": the extents must be `dextents<int, R>` or `extents<int, E...>`");
    int commas = 0;
    int depth = 0;
    std::size_t last = x + 2;
    for (std::size_t k = x + 1; k < args[1].second; ++k) {
      if (toks_[k].is_punct("<") || opens(toks_[k])) ++depth;
      if (toks_[k].is_punct(">") || closes(toks_[k])) --depth;
      if (depth == 1 && toks_[k].is_punct(",")) {
        ++commas;
        last = k + 1;
      }
    }
    if (dynamic) {
      const std::optional<long long> r =
          last < args[1].second ? integer_literal(toks_[last].text, 16) : std::nullopt;
      if (commas != 1 || !r || *r < 1) fail(toks_[x], what + ": dextents<I, R> takes a rank R from 1 to 16");
      p.tensor_rank = static_cast<int>(*r);
    } else {
      p.tensor_rank = commas;
    }
    // Tags after the descriptor: a scales plane makes a quantized tensor.
    for (std::size_t a = 3; a < args.size(); ++a)
      for (std::size_t k = args[a].first; k < args[a].second; ++k)
        if (toks_[k].is_ident("tensor_blockwise") || plane_aliases_.count(toks_[k].text)) p.tensor_scales = true;
    if (types_only) return p;
    if (space != "device" && space != "constant")
      fail(at, what + ": a tensor kernel argument is in `device` or `constant` memory (`tensor<device " + p.type +
                   ", ...>`); threadgroup tensors are made in the kernel with tensor_inline");
    for (const auto& range : attrs) {
      const Token& a = toks_[range.first];
      if (!a.is("buffer")) fail(a, what + ": a tensor is bound with [[buffer(i)]], not [[" + a.text + "]]");
      if (range.first + 2 >= range.second || toks_[range.first + 2].kind != TokenKind::Number)
        fail(a, "expected [[buffer(index)]]");
      const std::optional<long long> n = integer_literal(toks_[range.first + 2].text, kMaxArgumentIndex);
      if (!n)
        fail(toks_[range.first + 2],
             "[[buffer(index)]] takes an index from 0 to " + std::to_string(kMaxArgumentIndex));
      p.index = static_cast<int>(*n);
    }
    // A quantized tensor (the seed's `tensor<device metal_fp8_e4m3_format,
    // ..., scales_plane>`, elements not const) is an operand: bound for
    // reading, its data and its scales.
    p.role = (space == "constant" || is_const || p.tensor_scales) ? ProgramParam::Role::ReadBuffer
                                                                  : ProgramParam::Role::WriteBuffer;
    return p;
  }

  // Metal allows these types for its thread-position attributes: uint or
  // ushort for one value, up to 3 components for positions and sizes.
  void check_attribute_type(const ProgramParam& p) const {
    const AttributeInfo* info = find_attribute(p.attribute);
    bool vector = std::string_view(info->type) == "uint3";
    static const std::set<std::string> scalars = {"uint", "ushort", "uint32_t", "uint16_t", "unsigned int",
                                                  "unsigned short"};
    static const std::set<std::string> vectors = {"uint2", "uint3", "ushort2", "ushort3"};
    if (scalars.count(p.type) || (vector && vectors.count(p.type))) return;
    std::string valid = vector ? "uint, uint2 or uint3 (or ushort, ushort2, ushort3)" : "uint (or ushort)";
    throw_compile_error(kWhere, "source", text_, p.line, p.col,
                        "type '" + p.type + "' is not valid for [[" + p.attribute + "]]: write " + valid);
  }

  const std::string& text_;
  const std::string& header_text_;
  LexedText lexed_;
  Tokens toks_;
  ProgramInfo info_;
  std::map<std::string, std::size_t> tensor_aliases_;  // alias name -> the `<` of its `tensor<`
  std::size_t header_tokens_ = 0;                       // toks_ taken from the header's `using`s
  std::set<std::string> plane_aliases_;                 // `using scales_plane = tensor_blockwise<...>;`
};

}  // namespace

ProgramInfo parse_program(const std::string& source, const std::string& header) {
  return Parser(source, header).run();
}

}  // namespace alloy::msl

#include "msl/signature.h"

#include <cctype>
#include <set>
#include <stdexcept>

#include "msl/builtins.h"

namespace alloy::msl {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// Words a parameter cannot be named: C++14's keywords (MSL's base, and what
// both targets compile) and MSL's address spaces and function qualifiers.
// As a name they broke the generated signature with a compiler error about
// a line the user never wrote.
bool is_reserved_word(const std::string& s) {
  static const std::set<std::string> words = {
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "char16_t", "char32_t",
      "class", "const", "const_cast", "constexpr", "continue", "decltype", "default", "delete", "do", "double",
      "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private",
      "protected", "public", "register", "reinterpret_cast", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
      "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while",
      // MSL
      "device", "constant", "threadgroup", "threadgroup_imageblock", "thread", "ray_data", "object_data",
      "kernel", "vertex", "fragment", "visible", "stitchable"};
  return words.count(s) != 0;
}

bool is_integer(const std::string& s) {
  std::size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

bool bool_value(const TemplateArg& a) { return a.value == "true" || a.value == "1"; }

// A piece of a C++ identifier: `-3` -> `n3`, `unsigned int` -> `unsigned_int`.
std::string name_piece(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_')
      out += c;
    else if (c == '-')
      out += 'n';
    else
      out += '_';
  }
  return out;
}

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("[msl::translate] " + what);
}

}  // namespace

void check_spec(const KernelSpec& spec) {
  if (spec.math_mode != "safe" && spec.math_mode != "relaxed" && spec.math_mode != "fast")
    bad("math_mode must be 'safe', 'relaxed' or 'fast', got '" + spec.math_mode + "'");
  // A metal_library kernel may write nothing (the guide's column_access_bad).
  if (spec.outputs.empty() && spec.program_entry.empty()) bad("kernel '" + spec.name + "' has no outputs");
  std::set<std::string> names;
  auto check_param = [&](const ParamSpec& p, const char* what) {
    if (!is_identifier(p.name))
      bad(std::string(what) + " name '" + p.name + "' of kernel '" + spec.name +
          "' is not an identifier");
    if (is_reserved_word(p.name))
      bad(std::string(what) + " name '" + p.name + "' of kernel '" + spec.name +
          "' is a reserved word of Metal and C++; rename it");
    if (p.type.empty()) bad(std::string(what) + " '" + p.name + "' has no type");
    if (!names.insert(p.name).second)
      bad("kernel '" + spec.name + "' names '" + p.name + "' twice");
  };
  for (const ParamSpec& p : spec.inputs) check_param(p, "input");
  for (const ParamSpec& p : spec.outputs) {
    if (p.is_scalar || p.in_constant)
      bad("output '" + p.name + "' cannot be a scalar or constant-memory parameter");
    check_param(p, "output");
  }
  for (const TemplateArg& a : spec.template_args) {
    if (!is_identifier(a.name)) bad("template parameter name '" + a.name + "' is not an identifier");
    if (is_reserved_word(a.name)) bad("template parameter name '" + a.name + "' is a reserved word of Metal and C++");
    if (a.kind == TemplateArg::Int && !is_integer(a.value))
      bad("template parameter '" + a.name + "' is an int but its value is '" + a.value + "'");
    if (a.kind == TemplateArg::Bool && a.value != "true" && a.value != "false" && a.value != "1" &&
        a.value != "0")
      bad("template parameter '" + a.name + "' is a bool but its value is '" + a.value + "'");
    if (a.kind == TemplateArg::Type && a.value.empty())
      bad("template parameter '" + a.name + "' is a type but has no value");
  }
}

std::string kernel_name(const KernelSpec& spec) {
  std::string name = spec.program_entry.empty() ? "custom_kernel_" : "metal_library_";
  name.append(name_piece(spec.name));
  for (const TemplateArg& a : spec.template_args) {
    name.push_back('_');
    name.append(a.kind == TemplateArg::Bool ? (bool_value(a) ? "1" : "0") : name_piece(a.value));
  }
  for (const ParamSpec& p : spec.inputs) {
    name.push_back('_');
    name.append(name_piece(p.type));
    name.append(p.is_scalar ? "s" : p.in_constant ? "c" : "");
  }
  for (const ParamSpec& p : spec.outputs) {
    name.push_back('_');
    name.append(name_piece(p.type));
  }
  return name;
}

std::vector<KernelParam> kernel_params(const KernelSpec& spec, const Analysis& analysis) {
  using K = KernelParam::Kind;
  std::vector<KernelParam> out;
  for (int i = 0; i < static_cast<int>(spec.inputs.size()); ++i) {
    const ParamSpec& in = spec.inputs[i];
    out.push_back({K::Input, i, in.name, in.type, in.is_scalar, in.in_constant});
    if (in.is_scalar) continue;
    if (analysis.uses_shape[i]) out.push_back({K::Shape, i, in.name + "_shape", "int"});
    if (analysis.uses_strides[i]) out.push_back({K::Strides, i, in.name + "_strides", "int64_t"});
    if (analysis.uses_ndim[i]) out.push_back({K::Ndim, i, in.name + "_ndim", "int"});
  }
  for (int j = 0; j < static_cast<int>(spec.outputs.size()); ++j)
    out.push_back({K::Output, j, spec.outputs[j].name, spec.outputs[j].type});
  int k = 0;
  for (const std::string& attr : analysis.attributes)
    out.push_back({K::Attribute, k++, attr, std::string(find_attribute(attr)->type)});
  return out;
}

std::string template_header(const KernelSpec& spec) {
  if (spec.template_args.empty()) return "";
  std::string s = "template <";
  for (std::size_t i = 0; i < spec.template_args.size(); ++i) {
    const TemplateArg& a = spec.template_args[i];
    if (i) s += ", ";
    s += a.kind == TemplateArg::Type ? "typename " : a.kind == TemplateArg::Int ? "int " : "bool ";
    s += a.name;
  }
  return s + ">";
}

std::string template_values(const KernelSpec& spec, bool cpp_bools) {
  if (spec.template_args.empty()) return "";
  std::string s = "<";
  for (std::size_t i = 0; i < spec.template_args.size(); ++i) {
    const TemplateArg& a = spec.template_args[i];
    if (i) s += ", ";
    if (a.kind == TemplateArg::Bool)
      s += cpp_bools ? (bool_value(a) ? "true" : "false") : (bool_value(a) ? "1" : "0");
    else
      s += a.value;
  }
  return s + ">";
}

std::vector<GlueParam> glue_params(const std::vector<KernelParam>& params, int n_inputs) {
  using K = KernelParam::Kind;
  std::vector<GlueParam> out;
  for (const KernelParam& p : params) {
    std::string in = "in" + std::to_string(p.index);
    switch (p.kind) {
      case K::Input:
        out.push_back({p.is_scalar ? GlueParam::Scalar : GlueParam::Buffer, p.index, in});
        break;
      case K::Shape: out.push_back({GlueParam::Shape, p.index, in + "_shape"}); break;
      case K::Strides: out.push_back({GlueParam::Strides, p.index, in + "_strides"}); break;
      case K::Ndim: out.push_back({GlueParam::Ndim, p.index, in + "_ndim"}); break;
      case K::Output:
        out.push_back({GlueParam::Buffer, n_inputs + p.index, "out" + std::to_string(p.index)});
        break;
      case K::Attribute: break;
    }
  }
  return out;
}

}  // namespace alloy::msl

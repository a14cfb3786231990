// The kernel as MLX writes it for the Metal compiler (and prints with
// verbose=True): header, signature with [[buffer(i)]] parameters, the body
// unchanged, and the explicit instantiation with [[host_name]].
#include "msl/emitter.h"
#include "msl/signature.h"
#include "msl/writer.h"

namespace alloy::msl {

namespace {

std::string metal_param(const KernelParam& p, int buffer, bool atomic_outputs) {
  using K = KernelParam::Kind;
  std::string b = " [[buffer(" + std::to_string(buffer) + ")]]";
  switch (p.kind) {
    case K::Input:
      return std::string("  const ") + (p.in_constant || p.is_scalar ? "constant " : "device ") +
             p.type + (p.is_scalar ? "& " : "* ") + p.name + b;
    case K::Shape: return "  const constant int* " + p.name + b;
    case K::Strides: return "  const constant int64_t* " + p.name + b;
    case K::Ndim: return "  const constant int& " + p.name + b;
    case K::Output:
      return "  device " + (atomic_outputs ? "atomic<" + p.type + ">" : p.type) + "* " + p.name +
             b;
    case K::Attribute: return "  " + p.type + " " + p.name + " [[" + p.name + "]]";
  }
  return "";
}

}  // namespace

void emit_metal(const KernelSpec& spec, const std::vector<KernelParam>& params,
                TranslatedKernel& k) {
  Writer w;
  if (!spec.header.empty()) {
    w.retarget(Origin::Header, 1);
    w.user_verbatim(spec.header);  // as MLX does: no newline added after it
    w.retarget(Origin::Generated, 0);
  }
  std::string tmpl = template_header(spec);
  if (!tmpl.empty()) w.generated(tmpl + "\n");
  w.generated("[[kernel]] void " + k.kernel_name + "(\n");
  int buffer = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    bool attr = params[i].kind == KernelParam::Kind::Attribute;
    w.generated(metal_param(params[i], attr ? -1 : buffer, spec.atomic_outputs));
    if (!attr) ++buffer;
    w.generated(i + 1 < params.size() ? ",\n" : ") {\n");
  }
  w.retarget(Origin::Source, 1);
  w.user_verbatim(spec.source);
  w.generated("\n");
  w.retarget(Origin::Generated, 0);
  w.generated("}\n");
  if (!tmpl.empty()) {
    std::string inst = k.kernel_name + template_values(spec, /*cpp_bools=*/false);
    w.generated("\ntemplate [[host_name(\"" + k.kernel_name + "\")]] [[kernel]] decltype(" + inst +
                ") " + inst + ";\n");
  }
  k.entry = k.kernel_name;
  k.source = w.take_text();
  k.lines = w.take_map();
}

}  // namespace alloy::msl

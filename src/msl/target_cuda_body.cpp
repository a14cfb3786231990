// The CUDA target for CUDA bodies (mx.fast.cuda_kernel): the body is already
// CUDA, so nothing is rewritten. The generated part is MLX's signature: each
// input as `const T*`, followed by the shape/strides/ndim the body names,
// then the outputs as `T*`, with the template values declared at the top of
// the body. Shapes and strides come by value (__grid_constant__ ShapeArg /
// StridesArg, indexable like MLX's Shape/Strides).
#include <stdexcept>

#include "msl/emitter.h"
#include "msl/signature.h"
#include "msl/writer.h"

namespace alloy::msl {

std::string cuda_type_name(const std::string& msl_type) {
  if (msl_type == "float16_t" || msl_type == "half") return "__half";
  if (msl_type == "bfloat16_t" || msl_type == "bfloat") return "__nv_bfloat16";
  if (msl_type == "complex64_t") return "cuFloatComplex";
  return msl_type;
}

namespace {

std::string declaration(const KernelParam& p) {
  using K = KernelParam::Kind;
  switch (p.kind) {
    case K::Input: return "const " + cuda_type_name(p.type) + "* __restrict__ " + p.name;
    case K::Shape: return "const __grid_constant__ alloy_msl::cuda::ShapeArg " + p.name;
    case K::Strides: return "const __grid_constant__ alloy_msl::cuda::StridesArg " + p.name;
    case K::Ndim: return "const int " + p.name;
    case K::Output: return cuda_type_name(p.type) + "* __restrict__ " + p.name;
    case K::Attribute: break;
  }
  return "";
}

// Which optional toolkit headers the signature and the body need.
void type_defines(const KernelSpec& spec, const Analysis& analysis, Writer& w) {
  bool fp16 = false, bf16 = false, complex = false;
  auto note = [&](const std::string& t) {
    std::string c = cuda_type_name(t);
    fp16 |= c == "__half";
    bf16 |= c == "__nv_bfloat16";
    complex |= c == "cuFloatComplex";
  };
  for (const ParamSpec& p : spec.inputs) note(p.type);
  for (const ParamSpec& p : spec.outputs) note(p.type);
  for (const TemplateArg& a : spec.template_args)
    if (a.kind == TemplateArg::Type) note(a.value);
  if (fp16) w.generated("#define ALLOY_CUDA_BODY_FP16 1\n");
  if (bf16) w.generated("#define ALLOY_CUDA_BODY_BF16 1\n");
  if (complex) w.generated("#define ALLOY_CUDA_BODY_COMPLEX 1\n");
  // cooperative_groups.h costs ~1.5 s of NVRTC time and ~150 KB of code:
  // only for bodies that name it (as `cooperative_groups` or MLX's `cg`).
  if (analysis.uses_cooperative_groups) w.generated("#define ALLOY_CUDA_BODY_COOPERATIVE_GROUPS 1\n");
}

}  // namespace

void emit_cuda_body(const KernelSpec& spec, const std::vector<KernelParam>& params, TranslatedKernel& k) {
  Writer w;
  w.generated("// " + k.kernel_name + ": MLX cuda_kernel '" + spec.name +
              "' for CUDA (NVRTC). Generated; do not edit.\n");
  type_defines(spec, k.analysis, w);
  w.generated("#include \"cuda_body.h\"\n");
  if (!spec.header.empty()) {
    w.line_directive(Origin::Header, 1);
    w.user_verbatim(spec.header);
    w.end_line();
    w.line_directive(Origin::Generated);
  }
  w.generated("extern \"C\" __global__ void alloy_kernel_main(");
  for (std::size_t i = 0; i < params.size(); ++i)
    w.generated((i ? ",\n    " : "\n    ") + declaration(params[i]));
  w.generated(") {\n");
  for (const TemplateArg& a : spec.template_args) {
    if (a.kind == TemplateArg::Type)
      w.generated("  using " + a.name + " = " + cuda_type_name(a.value) + ";\n");
    else if (a.kind == TemplateArg::Int)
      w.generated("  constexpr int " + a.name + " = " + a.value + ";\n");
    else
      w.generated("  constexpr bool " + a.name + " = " +
                  (a.value == "true" || a.value == "1" ? "true" : "false") + ";\n");
  }
  w.line_directive(Origin::Source, 1);
  w.user_verbatim(spec.source);
  w.end_line();
  w.line_directive(Origin::Generated);
  w.generated("}\n");

  // A CUDA body uses no Metal attributes, so glue parameter i is kernel
  // parameter i; it keeps the user's name.
  for (std::size_t i = 0; i < k.params.size(); ++i) k.params[i].name = params[i].name;
  k.entry = "alloy_kernel_main";
  k.source = w.take_text();
  k.lines = w.take_map();
}

}  // namespace alloy::msl

// The CUDA target (NVRTC): the glue is an extern "C" __global__ entry point
// taking typed device pointers, shapes/strides by value (__grid_constant__
// structs), ndim ints and an alloy_msl::cuda::Dispatch; the runtime derives
// Metal's thread ids.
#include "msl/emitter.h"
#include "msl/writer.h"

namespace alloy::msl {
namespace {

class CudaTarget final : public CxxTarget {
 public:
  Target target() const override { return Target::Cuda; }
  const char* runtime_header() const override { return "metal_cuda.h"; }
  const char* description() const override { return "CUDA (NVRTC)"; }

  const char* call_indent() const override { return "      "; }

  std::string argument(const GlueContext& c, const KernelParam& p,
                       const GlueParam& g) const override {
    if (g.kind == GlueParam::Scalar) return "*" + g.name;
    if (g.kind == GlueParam::Shape || g.kind == GlueParam::Strides) return g.name + ".v";
    if (p.kind == KernelParam::Kind::Output && c.spec.atomic_outputs)
      return "reinterpret_cast<" + pointee_type(c.spec, p) + "*>(" + g.name + ")";
    return g.name;
  }

  void glue(const GlueContext& c, const std::string& call, Writer& w) const override {
    w.generated("extern \"C\" __global__ void alloy_kernel_main(");
    std::size_t g = 0;
    for (const KernelParam& p : c.params) {
      if (p.kind == KernelParam::Kind::Attribute) continue;
      const GlueParam& gp = c.glue[g++];
      w.generated("\n    " + declaration(p, gp) + ",");
    }
    w.generated("\n    alloy_msl::cuda::Dispatch d) {\n");
    w.generated("  alloy_msl::ThreadIds t;\n");
    w.generated("  if (!alloy_msl::cuda::thread_ids(d, t)) return;  // outside the grid\n");
    w.generated("  " + call + ";\n}\n");
  }

 private:
  static std::string declaration(const KernelParam& p, const GlueParam& g) {
    switch (g.kind) {
      case GlueParam::Buffer:
        return (p.kind == KernelParam::Kind::Input ? "const " : "") + p.type + "* __restrict__ " +
               g.name;
      case GlueParam::Scalar: return "const " + p.type + "* __restrict__ " + g.name;
      case GlueParam::Shape: return "const __grid_constant__ alloy_msl::cuda::ShapeArg " + g.name;
      case GlueParam::Strides: return "const __grid_constant__ alloy_msl::cuda::StridesArg " + g.name;
      case GlueParam::Ndim: return "int " + g.name;
    }
    return "";
  }
};

}  // namespace

const CxxTarget& cuda_target() {
  static const CudaTarget t;
  return t;
}

}  // namespace alloy::msl

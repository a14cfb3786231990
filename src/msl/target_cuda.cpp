// The CUDA target (NVRTC): the glue is an extern "C" __global__ entry point
// taking typed device pointers, shapes/strides by value (__grid_constant__
// structs), ndim ints and an alloy_msl::cuda::Dispatch; the runtime derives
// Metal's thread ids.
#include "msl/emitter.h"
#include "msl/writer.h"

namespace alloy::msl {
namespace {

// Threadgroups one block runs in turn when the kernel has no sync (see
// cuda_threadgroups_per_block): four loads in flight per thread instead of one.
constexpr int kSyncFreeThreadgroupsPerBlock = 4;

class CudaTarget final : public CxxTarget {
 public:
  Target target() const override { return Target::Cuda; }
  const char* runtime_header() const override { return "metal_cuda.h"; }
  const char* description() const override { return "CUDA (NVRTC)"; }

  const char* call_indent() const override { return "      "; }

  std::string argument(const GlueContext& c, const KernelParam& p,
                       const GlueParam& g) const override {
    if (g.kind == GlueParam::Scalar) return g.name + "_value";
    if (const auto* layout = constant_layout(c, p)) {
      if (g.kind == GlueParam::Ndim) return std::to_string(layout->shape.size());
      if (g.kind == GlueParam::Shape || g.kind == GlueParam::Strides) return constant_name(g);
    }
    if (g.kind == GlueParam::Shape || g.kind == GlueParam::Strides) return g.name + ".v";
    if (p.kind == KernelParam::Kind::Output && c.spec.atomic_outputs)
      return "reinterpret_cast<" + pointee_type(c.spec, p) + "*>(" + g.name + ")";
    return g.name;
  }

  std::string bounds_check_argument() const override {
    return "::alloy_msl::BoundsCheck{alloy_bc_sizes.v, alloy_bc_report, t.thread_position_in_grid, nullptr}";
  }

  std::string threadgroup_memory(unsigned) const override {
    // Dynamic shared memory: the launch passes the size (no 48 KB cap).
    return "extern __shared__ __align__(16) unsigned char alloy_tg_memory[];";
  }

  void glue(const GlueContext& c, const std::string& call, Writer& w) const override {
    constant_layouts(c, w);
    const unsigned bound = c.spec.cuda_launch_bound;
    w.generated(std::string("extern \"C\" __global__ void ") +
                (bound ? "__launch_bounds__(" + std::to_string(bound) + ") " : std::string()) + "alloy_kernel_main(");
    std::size_t g = 0;
    for (const KernelParam& p : c.params) {
      if (p.kind == KernelParam::Kind::Attribute) continue;
      const GlueParam& gp = c.glue[g++];
      w.generated("\n    " + declaration(p, gp) + ",");
    }
    const bool inputs_only = c.spec.bounds_check && c.spec.tolerate_input_reads;
    if (inputs_only) {
      // The inputs' sizes only, and no report (CustomKernelLaunch passes the
      // start of the same BoundsSizes). A variant with constant sizes
      // (constant_layouts) takes them, unused, under another name: the
      // body's alloy_bc_sizes is then the constant at namespace scope.
      const std::size_t n = c.spec.inputs.empty() ? 1 : c.spec.inputs.size();
      w.generated("\n    const __grid_constant__ ::alloy_msl::InputSizes<" + std::to_string(n) + "> alloy_bc_sizes" +
                  (constant_sizes(c) ? "_passed," : ","));
    } else if (c.spec.bounds_check) {
      // After the parameters, before the Dispatch (CustomKernelLaunch).
      w.generated("\n    const __grid_constant__ ::alloy_msl::BoundsSizes alloy_bc_sizes,");
      w.generated("\n    ::alloy_msl::BoundsReport* alloy_bc_report,");
    }
    w.generated("\n    alloy_msl::cuda::Dispatch d) {\n");
    if (inputs_only) w.generated("  ::alloy_msl::BoundsReport* const alloy_bc_report = nullptr;  // tolerated reads report nothing\n");
    // 0-d inputs are loaded first: every address the kernel forms from one
    // (a row stride N, say) waits for that load, which then overlaps the
    // thread ids' arithmetic instead of following it. The pointer is valid
    // for every thread, inside the grid or not.
    g = 0;
    for (const KernelParam& p : c.params) {
      if (p.kind == KernelParam::Kind::Attribute) continue;
      const GlueParam& gp = c.glue[g++];
      if (gp.kind == GlueParam::Scalar) w.generated("  const " + p.type + " " + gp.name + "_value = *" + gp.name + ";\n");
    }
    const int per_block = c.uses_sync ? 1 : kSyncFreeThreadgroupsPerBlock;
    if (per_block == 1) {
      w.generated("  alloy_msl::ThreadIds t;\n");
      w.generated("  if (!alloy_msl::cuda::thread_ids(d, t)) return;  // outside the grid\n");
      w.generated("  " + call + ";\n}\n");
      return;
    }
    // No sync: this block runs threadgroups blockIdx.x * N ... + N - 1. When
    // all N are whole (1-D threadgroups, inside the grid) the N calls are
    // straight-line code, so the compiler can issue their loads together;
    // otherwise they run one by one, each checked against the grid.
    const std::string n = std::to_string(per_block);
    w.generated("  const unsigned first = blockIdx.x * " + n + "u;\n");
    // fold_y == 0 here lets the inlined thread_ids drop its unfolding.
    w.generated("  if (d.threadgroup[1] == 1u && d.threadgroup[2] == 1u && d.fold_y == 0u &&\n"
                "      (first + " + n + "u) * d.threadgroup[0] <= d.grid[0]) {\n");
    w.generated("    alloy_msl::ThreadIds ids[" + n + "];\n");
    w.generated("#pragma unroll\n");
    w.generated("    for (unsigned j = 0; j < " + n + "u; ++j) alloy_msl::cuda::thread_ids(d, ids[j], first + j);\n");
    w.generated("#pragma unroll\n");
    w.generated("    for (unsigned j = 0; j < " + n + "u; ++j) {\n");
    w.generated("      const alloy_msl::ThreadIds& t = ids[j];\n");
    w.generated("      " + call + ";\n    }\n    return;\n  }\n");
    w.generated("  for (unsigned j = 0; j < " + n + "u; ++j) {\n");
    w.generated("    alloy_msl::ThreadIds t;\n");
    w.generated("    if (!alloy_msl::cuda::thread_ids(d, t, first + j)) return;  // past the grid\n");
    w.generated("    " + call + ";\n  }\n}\n");
  }

 private:
  // KernelSpec::constant_layouts: the layout of the input `p` describes, if
  // the variant has its inputs' layouts as constants.
  static const KernelSpec::InputLayout* constant_layout(const GlueContext& c, const KernelParam& p) {
    const bool meta = p.kind == KernelParam::Kind::Shape || p.kind == KernelParam::Kind::Strides ||
                      p.kind == KernelParam::Kind::Ndim;
    if (!meta || p.index < 0 || static_cast<std::size_t>(p.index) >= c.spec.constant_layouts.size()) return nullptr;
    return &c.spec.constant_layouts[p.index];
  }
  static std::string constant_name(const GlueParam& g) { return "alloy_const_" + g.name; }

  // A translation that tolerates input reads, specialized to its inputs'
  // layouts, has their element counts (KernelSpec::InputLayout::elements).
  static bool constant_sizes(const GlueContext& c) {
    return c.spec.bounds_check && c.spec.tolerate_input_reads && !c.spec.constant_layouts.empty() &&
           c.spec.constant_layouts.size() == c.spec.inputs.size();
  }

  // The constants, as device arrays at namespace scope: the inlined body's
  // subscripts with constant indices load known values, which the compiler folds.
  static void constant_layouts(const GlueContext& c, Writer& w) {
    if (constant_sizes(c)) {
      std::string values;
      for (const auto& l : c.spec.constant_layouts) values += (values.empty() ? "" : ", ") + std::to_string(l.elements) + "ull";
      if (values.empty()) values = "0ull";
      const std::size_t n = c.spec.inputs.empty() ? 1 : c.spec.inputs.size();
      w.generated("__device__ constexpr ::alloy_msl::InputSizes<" + std::to_string(n) + "> alloy_bc_sizes = {{" + values +
                  "}};\n");
    }
    std::size_t g = 0;
    for (const KernelParam& p : c.params) {
      if (p.kind == KernelParam::Kind::Attribute) continue;
      const GlueParam& gp = c.glue[g++];
      const auto* layout = constant_layout(c, p);
      if (!layout || (gp.kind != GlueParam::Shape && gp.kind != GlueParam::Strides)) continue;
      std::string values;
      const bool shape = gp.kind == GlueParam::Shape;
      const std::size_t n = layout->shape.size();
      for (std::size_t i = 0; i < n; ++i) {
        values += (i ? ", " : "") + (shape ? std::to_string(layout->shape[i]) : std::to_string(layout->strides[i]) + "l");
      }
      if (n == 0) values = "0";  // a 0-d input's: never read
      // As long as the ShapeArg/StridesArg it replaces, zeros past ndim.
      w.generated(std::string("__device__ constexpr ") + (shape ? "int " : "long ") + constant_name(gp) +
                  "[alloy_msl::cuda::kMaxKernelDims] = {" + values + "};\n");
    }
  }

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

int cuda_threadgroups_per_block(const Analysis& a) { return a.uses_sync ? 1 : kSyncFreeThreadgroupsPerBlock; }

const CxxTarget& cuda_target() {
  static const CudaTarget t;
  return t;
}

}  // namespace alloy::msl

// The host C++ target: the glue reads its arguments from an
// alloy_msl::cpu::Launch and runs the threadgroups through the runtime's
// alloy_msl::cpu::run (plain loops, or fibers when the kernel synchronises).
#include "msl/emitter.h"
#include "msl/writer.h"

namespace alloy::msl {
namespace {

class CppTarget final : public CxxTarget {
 public:
  Target target() const override { return Target::Cpp; }
  const char* runtime_header() const override { return "metal_cpu.h"; }
  const char* description() const override { return "the CPU (host C++20)"; }

  const char* call_indent() const override { return "        "; }

  std::string argument(const GlueContext& c, const KernelParam& p,
                       const GlueParam& g) const override {
    std::string i = std::to_string(g.index);
    switch (g.kind) {
      case GlueParam::Buffer: {
        bool input = p.kind == KernelParam::Kind::Input;
        return "static_cast<" + std::string(input ? "const " : "") + pointee_type(c.spec, p) +
               "*>(L->buffers[" + i + "])";
      }
      case GlueParam::Scalar: return "*static_cast<const " + p.type + "*>(L->buffers[" + i + "])";
      case GlueParam::Shape: return "L->shapes[" + i + "]";
      case GlueParam::Strides: return "L->strides[" + i + "]";
      case GlueParam::Ndim: return "L->ndims[" + i + "]";
    }
    return "";
  }

  std::string bounds_check_argument() const override {
    return "::alloy_msl::BoundsCheck{L->bounds_sizes, L->bounds_report, t.thread_position_in_grid, L->cancel}";
  }

  std::string bounds_check_group_argument() const override {
    return "::alloy_msl::BoundsCheck{L->bounds_sizes, L->bounds_report, metal::uint3(0u), L->cancel}";
  }

  std::string threadgroup_memory(unsigned bytes) const override {
    // One per worker thread: a threadgroup's fibers all run on one.
    return "alignas(16) static thread_local unsigned char alloy_tg_memory[" + std::to_string(bytes) + "];";
  }

  void glue(const GlueContext& c, const std::string& call, Writer& w) const override {
    w.generated("extern \"C\" ALLOY_EXPORT void alloy_kernel_main(const alloy_msl::cpu::Launch* L) {\n");
    // The threadgroup parameters' memory, looked up once: in a shared object
    // every use of a thread_local is a call (__tls_get_addr), which keeps
    // the loops over a group's threads from being vectorised (the empty asm
    // stops g++ from redoing the lookup at each use). The groups (their
    // fibers and coroutines too) run on the thread that called this.
    if (c.threadgroup_parameters)
      w.generated("  unsigned char* alloy_tg_memory = ::alloy_tg_memory;\n  __asm__(\"\" : \"+r\"(alloy_tg_memory));\n");
    if (c.regions) {
      w.generated("  alloy_msl::cpu::run_regions(L, [&](alloy_msl::cpu::GroupThreads& alloy_g) {\n");
      w.generated("    " + call + ";\n");
      w.generated("  });\n}\n");
      return;
    }
    if (c.coroutines) {
      w.generated("  alloy_msl::cpu::run_coroutines(L, [&](const alloy_msl::ThreadIds& t) {\n");
      w.generated("    return " + call + ";\n");
      w.generated("  });\n}\n");
      return;
    }
    w.generated(std::string("  alloy_msl::cpu::run</*uses_sync=*/") +
                (c.uses_sync ? "true" : "false") +
                ">(L, [&](const alloy_msl::ThreadIds& t) {\n");
    w.generated("    " + call + ";\n");
    w.generated("  });\n}\n");
  }
};

}  // namespace

const CxxTarget& cpp_target() {
  static const CppTarget t;
  return t;
}

}  // namespace alloy::msl

// alloy.core._msl: the MSL front end and the JIT compilers for tools
// (python -m alloy.msl), without arrays.
#include <cstdlib>
#include <fstream>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "alloy/msl/program.h"
#include "alloy/msl/translate.h"
#include "backend/cuda/aot_kernels.h"
#include "bindings.h"
#include "jit/cpu_kernel.h"
#include "fast/cuda_build.h"
#include "jit/cuda_compile.h"
#include "jit/nvrtc.h"

using namespace alloy;

namespace {

using Param = std::tuple<std::string, std::string, bool>;          // name, MSL type, is 0-d
using Template = std::tuple<std::string, std::string, std::string>;  // name, kind, value

msl::KernelSpec make_spec(const std::string& name, const std::string& source, const std::string& header,
                          const std::vector<Param>& inputs, const std::vector<Param>& outputs,
                          const std::vector<Template>& templates, bool atomic_outputs, const std::string& math_mode,
                          const std::string& dialect) {
  if (dialect != "metal" && dialect != "cuda")
    throw std::invalid_argument("[msl] unknown dialect '" + dialect + "' (metal or cuda).");
  msl::KernelSpec spec;
  spec.dialect = dialect == "cuda" ? msl::Dialect::Cuda : msl::Dialect::Metal;
  spec.name = name;
  spec.source = source;
  spec.header = header;
  spec.atomic_outputs = atomic_outputs;
  spec.math_mode = math_mode;
  for (auto& [n, t, scalar] : inputs) spec.inputs.push_back({n, t, scalar, false});
  for (auto& [n, t, scalar] : outputs) spec.outputs.push_back({n, t, false, false});
  for (auto& [n, kind, v] : templates) {
    msl::TemplateArg a;
    a.name = n;
    a.kind = kind == "int" ? msl::TemplateArg::Int : kind == "bool" ? msl::TemplateArg::Bool : msl::TemplateArg::Type;
    a.value = v;
    spec.template_args.push_back(a);
  }
  return spec;
}

msl::Target to_target(const std::string& t);

// Translates and compiles `spec` as its launch would: (ok, message), the
// compiler's diagnostics mapped to the user's lines when it fails.
// One spec per kernel of a whole program, each with its parameters' own
// types and `threadgroup_bytes` for each threadgroup parameter (a launch gives
// each its own size; sized arrays must fit).
std::vector<msl::KernelSpec> program_specs(const msl::ProgramInfo& info, const std::string& source,
                                           const std::string& header, const std::string& math_mode,
                                           unsigned threadgroup_bytes) {
  const std::string program = msl::specialize_function_constants(source, {});
  using Role = msl::ProgramParam::Role;
  std::vector<msl::KernelSpec> specs;
  for (const msl::ProgramKernel& k : info.kernels) {
    msl::KernelSpec spec;
    spec.name = k.name;
    spec.program_entry = k.name;
    spec.source = program;
    spec.header = header;
    spec.math_mode = math_mode;
    for (const msl::ProgramParam& p : k.params) {
      if (p.role == Role::ReadBuffer || p.role == Role::ConstantValue)
        spec.inputs.push_back({p.name, p.type, p.role == Role::ConstantValue, false});
      // A quantized tensor binds its scales plane too, as metal_library does.
      if (p.role == Role::ReadBuffer && p.tensor_scales) spec.inputs.push_back({p.name + "_scales", "uint8_t", false, false});
      if (p.role == Role::WriteBuffer) spec.outputs.push_back({p.name, p.type, false, false});
      if (p.role == Role::Threadgroup) spec.threadgroup_bytes.push_back(threadgroup_bytes);
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

std::tuple<bool, std::string> compile_spec(const msl::KernelSpec& spec, const std::string& target,
                                           const std::string& arch) {
  msl::TranslatedKernel t;
  try {
    t = msl::translate(spec, to_target(target));
  } catch (const msl::CompileError& e) {
    return std::make_tuple(false, std::string(e.what()));
  }
  try {
    nb::gil_scoped_release release;
    if (t.target == msl::Target::Cuda) {
      // As the GPU backend builds it (threadgroup memory over 48 KB included).
      fast::CudaBuild b;
      try {
        b = fast::build_for_cuda(spec, t, arch, "[msl] kernel '" + spec.name + "'");
      } catch (const std::runtime_error& e) {
        return std::make_tuple(false, std::string(e.what()));
      }
      // ALLOY_MSL_CUBIN_OUT=file keeps the cubin (cuobjdump -sass reads it:
      // a kernel's instructions without a GPU).
      if (const char* path = std::getenv("ALLOY_MSL_CUBIN_OUT"); path && *path) {
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(b.cubin->data()), static_cast<std::streamsize>(b.cubin->size()));
        if (!f) return std::make_tuple(false, "[msl] ALLOY_MSL_CUBIN_OUT: cannot write " + std::string(path));
      }
      std::string dyn = b.dynamic_threadgroup
                            ? ", " + std::to_string(b.dynamic_threadgroup) + " bytes of dynamic threadgroup memory"
                            : std::string();
      return std::make_tuple(true, "compiled for " + arch + " with NVRTC: " + std::to_string(b.cubin->size()) +
                                       " bytes of SASS" + dyn);
    }
    jit::CompileOptions o;
    o.math_mode = spec.math_mode;
    jit::compile_cpu(t.source, o);
    return std::make_tuple(true, std::string("compiled for this CPU with the host compiler"));
  } catch (const jit::CompileError& e) {
    return std::make_tuple(false, msl::map_diagnostics(t, e.log(), spec));
  }
}

msl::Target to_target(const std::string& t) {
  if (t == "metal") return msl::Target::Metal;
  if (t == "cpp" || t == "cpu") return msl::Target::Cpp;
  if (t == "cuda") return msl::Target::Cuda;
  throw std::invalid_argument("[msl] unknown target '" + t + "' (metal, cpp or cuda).");
}

}  // namespace

void init_msl(nb::module_& m) {
  nb::module_ s = m.def_submodule("_msl", "The MSL front end and JIT compilers, for tools.");
  s.def("cuda_paths", [] {
    nb::dict d;
    d["nvrtc_available"] = jit::nvrtc_available();
    d["nvrtc_library"] = jit::nvrtc_library_path();
    d["nvrtc_unavailable_reason"] = jit::nvrtc_available() ? std::string() : jit::nvrtc_unavailable_reason();
    nb::list inc;
    for (const auto& dir : jit::nvrtc_include_dirs()) inc.append(dir);
    d["include_dirs"] = inc;
    // The op kernels compiled ahead of time: the archive in use, or why none.
    d["aot_kernels"] = cuda::aot_status();
    return d;
  }, "Where NVRTC, the CUDA headers and the AOT op kernels were found (or why not).");
  s.def(
      "translate",
      [](const std::string& name, const std::string& source, const std::string& header,
         const std::vector<Param>& inputs, const std::vector<Param>& outputs, const std::vector<Template>& templates,
         bool atomic_outputs, const std::string& math_mode, const std::string& target, const std::string& dialect) {
        auto spec = make_spec(name, source, header, inputs, outputs, templates, atomic_outputs, math_mode, dialect);
        return msl::translate(spec, to_target(target)).source;
      },
      nb::arg("name"), nb::arg("source"), nb::arg("header"), nb::arg("inputs"), nb::arg("outputs"),
      nb::arg("template"), nb::arg("atomic_outputs"), nb::arg("math_mode"), nb::arg("target"),
      nb::arg("dialect") = "metal");
  s.def(
      "compile",
      [](const std::string& name, const std::string& source, const std::string& header,
         const std::vector<Param>& inputs, const std::vector<Param>& outputs, const std::vector<Template>& templates,
         bool atomic_outputs, const std::string& math_mode, const std::string& target, const std::string& arch,
         const std::string& dialect) {
        // Returns (ok, message): the mapped diagnostics when the compiler rejects the kernel.
        auto spec = make_spec(name, source, header, inputs, outputs, templates, atomic_outputs, math_mode, dialect);
        return compile_spec(spec, target, arch);
      },
      nb::arg("name"), nb::arg("source"), nb::arg("header"), nb::arg("inputs"), nb::arg("outputs"),
      nb::arg("template"), nb::arg("atomic_outputs"), nb::arg("math_mode"), nb::arg("target"),
      nb::arg("arch") = "sm_90", nb::arg("dialect") = "metal");
  s.def(
      "compile_program",
      [](const std::string& source, const std::string& header, const std::string& math_mode,
         const std::string& target, const std::string& arch, unsigned threadgroup_bytes) {
        std::vector<std::tuple<std::string, bool, std::string>> results;
        msl::ProgramInfo info;
        const std::string program = msl::expand_kernel_macros(source);  // as metal_library reads it
        try {
          info = msl::check_program(program, header);
        } catch (const msl::CompileError& e) {
          results.emplace_back("", false, e.what());
          return results;
        }
        for (const msl::KernelSpec& spec : program_specs(info, program, header, math_mode, threadgroup_bytes)) {
          auto [ok, message] = compile_spec(spec, target, arch);
          results.emplace_back(spec.name, ok, message);
        }
        return results;
      },
      nb::arg("source"), nb::arg("header") = "", nb::arg("math_mode") = "safe", nb::arg("target") = "cpp",
      nb::arg("arch") = "sm_90", nb::arg("threadgroup_bytes") = 32768u,
      "Translates and compiles every kernel of a whole Metal program: [(kernel, ok, message)].");
  s.def(
      "translate_program",
      [](const std::string& source, const std::string& header, const std::string& math_mode,
         const std::string& target) {
        // Each kernel's translation as the launcher compiles it: [(kernel, source)].
        std::vector<std::tuple<std::string, std::string>> out;
        const std::string program = msl::expand_kernel_macros(source);  // as metal_library reads it
        const msl::ProgramInfo info = msl::check_program(program, header);
        for (const msl::KernelSpec& spec : program_specs(info, program, header, math_mode, 32768u))
          out.emplace_back(spec.name, msl::translate(spec, to_target(target)).source);
        return out;
      },
      nb::arg("source"), nb::arg("header") = "", nb::arg("math_mode") = "safe", nb::arg("target") = "cpp",
      "The translation of every kernel of a whole Metal program: [(kernel, source)].");
}

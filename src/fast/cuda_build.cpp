#include "fast/cuda_build.h"

#include <cstdlib>
#include <stdexcept>

#include "jit/cuda_compile.h"

namespace alloy::fast {
namespace {

// The bytes of static shared memory ptxas refused ("uses too much shared
// data (0x11940 bytes, 0xc000 max)"); 0 when the log says nothing of it.
unsigned refused_shared_bytes(const std::string& log) {
  const std::string mark = "uses too much shared data (";
  size_t at = log.find(mark);
  if (at == std::string::npos) return 0;
  return static_cast<unsigned>(std::strtoul(log.c_str() + at + mark.size(), nullptr, 0));
}

}  // namespace

CudaBuild build_for_cuda(const msl::KernelSpec& spec, const msl::TranslatedKernel& translated,
                         const std::string& arch, const std::string& label) {
  jit::NvrtcOptions opts;
  opts.arch = arch;
  opts.math_mode = spec.math_mode;
  if (translated.analysis.fp_contract_off) opts.extra_options.push_back("--fmad=false");
  auto fail = [&](const msl::TranslatedKernel& t, const jit::CompileError& e) {
    return std::runtime_error(label + " failed to compile for CUDA (" + arch + "):\n" +
                              msl::map_diagnostics(t, e.log(), spec));
  };
  using Storage = msl::KernelSpec::ThreadgroupStorage;
  auto compile = [&](const msl::TranslatedKernel& t) {
    return jit::compile_cuda(t.source, t.lines.generated_file, opts);
  };
  CudaBuild b;
  try {
    b.cubin = compile(translated);
    b.entry = translated.entry;
    // A program's [[threadgroup(i)]] parameters live in dynamic shared memory.
    b.dynamic_threadgroup = translated.threadgroup_parameter_bytes;
    return b;
  } catch (const jit::CompileError& e) {
    if (spec.dialect != msl::Dialect::Metal || refused_shared_bytes(e.log()) == 0) throw fail(translated, e);
    if (!spec.program_entry.empty()) {
      throw std::runtime_error(label + " declares more than CUDA's 48 KB of static shared memory in threadgroup "
                               "arrays; pass the memory as a `threadgroup T* p [[threadgroup(i)]]` parameter "
                               "(any size the device allows).");
    }
  }
  // Over 48 KB: learn the bound from a build that keeps every kernel-scope
  // array allocated (ptxas drops arrays it sees unread, whose dynamic
  // offsets would still count), then move them to dynamic shared memory.
  msl::KernelSpec variant = spec;
  variant.threadgroup_storage = Storage::StaticKept;
  msl::TranslatedKernel kept = msl::translate(variant, msl::Target::Cuda);
  unsigned bound = 0;
  try {
    compile(kept);
  } catch (const jit::CompileError& e) {
    bound = refused_shared_bytes(e.log());
    if (bound == 0) throw fail(kept, e);
  }
  variant.threadgroup_storage = Storage::Dynamic;
  msl::TranslatedKernel dynamic = msl::translate(variant, msl::Target::Cuda);
  if (bound == 0 || dynamic.kernel_scope_threadgroup_arrays == 0) {
    throw std::runtime_error(label + " uses more than CUDA's 48 KB of static shared memory in threadgroup arrays "
                             "declared inside nested scopes; declare them at the kernel's own scope.");
  }
  try {
    b.cubin = compile(dynamic);
  } catch (const jit::CompileError& e) {
    throw fail(dynamic, e);
  }
  b.entry = dynamic.entry;
  // Our layout pads each array to its alignment (at most 16 bytes) in
  // declaration order, which ptxas's packing may beat by that much.
  b.dynamic_threadgroup = bound + 16u * static_cast<unsigned>(dynamic.kernel_scope_threadgroup_arrays);
  return b;
}

}  // namespace alloy::fast

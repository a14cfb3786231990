// Emitting a translation unit. One base emitter writes what both C++
// targets share (prelude, header, the kernel function template, the call
// into it); a CxxTarget supplies the little that differs: the runtime header,
// how the glue receives its arguments, and the glue around the call.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "alloy/msl/translate.h"
#include "msl/cpu_threads.h"
#include "msl/features.h"
#include "msl/lexer.h"
#include "msl/signature.h"

namespace alloy::msl {

class Writer;

// Everything the glue needs to know about the kernel.
struct GlueContext {
  const KernelSpec& spec;
  const std::string& kernel_name;
  const std::vector<KernelParam>& params;  // the kernel function's parameters
  const std::vector<GlueParam>& glue;      // one per non-attribute parameter, same order
  bool uses_sync;
  bool coroutines = false;  // CPU target: threads are coroutines (msl/cpu_threads.h)
  bool regions = false;     // CPU target: the kernel runs once per group, split into regions
  // metal_library: the entry's [[threadgroup(i)]] parameters point into
  // alloy_tg_memory (CxxTarget::threadgroup_memory).
  bool threadgroup_parameters = false;
};

class CxxTarget {
 public:
  virtual ~CxxTarget() = default;
  virtual Target target() const = 0;
  virtual const char* runtime_header() const = 0;  // "metal_cpu.h"
  virtual const char* description() const = 0;     // for the TU's first comment
  // The expression passing kernel parameter `p` (fed by glue parameter `g`).
  virtual std::string argument(const GlueContext& c, const KernelParam& p,
                               const GlueParam& g) const = 0;
  // Indentation of each argument of the call in the glue (one per line).
  virtual const char* call_indent() const = 0;
  // Writes the entry point around `call` (a full call expression, no `;`).
  virtual void glue(const GlueContext& c, const std::string& call, Writer& w) const = 0;
  // A bounds-checked kernel's alloy_msl::BoundsCheck, built in the glue for
  // the thread `t` (runtime/metal_bounds.h).
  virtual std::string bounds_check_argument() const = 0;
  // The same for a kernel split into regions, which runs once per group
  // (CPU only; msl/cpu_regions.h).
  virtual std::string bounds_check_group_argument() const { return ""; }
  // metal_library: declares `alloy_tg_memory`, the `bytes` of threadgroup
  // memory behind a program's [[threadgroup(i)]] parameters (16-aligned).
  virtual std::string threadgroup_memory(unsigned bytes) const = 0;
};

const CxxTarget& cpp_target();
const CxxTarget& cuda_target();

// The TU's first lines: what it is, how the CPU runs its threads (and why
// not faster, k.cpu_threads), the math mode, the runtime header.
void emit_prelude(const KernelSpec& spec, const CxxTarget& target, const TranslatedKernel& k,
                  const RuntimeFeatures& features, Writer& w);
// How the target runs a synchronising kernel's threads (CPU: fibers or
// coroutines; CUDA: as CUDA does), recorded in k.cpu_threads and `features`.
CpuThreadsPlan plan_threads(const KernelSpec& spec, const LexedKernel& lexed, const CxxTarget& target,
                            RuntimeFeatures& features, TranslatedKernel& k);
// Names the user's texts declare (never taken for invalid vector types).
std::set<std::string> all_user_names(const LexedKernel& lexed);
// The MLX headers the kernel includes, then its header, translated.
void emit_header_texts(const KernelSpec& spec, const LexedKernel& lexed, const std::set<std::string>& user_names,
                       Writer& w);

// The element type a buffer parameter points to: `T` or `atomic<T>`.
std::string pointee_type(const KernelSpec& spec, const KernelParam& p);

// `lexed`: the spec's own texts, which it rewrites.
void emit_cxx(const KernelSpec& spec, const LexedKernel& lexed, const CxxTarget& target,
              const std::vector<KernelParam>& params, TranslatedKernel& k);
// A whole program (spec.program_entry): the program translated, then the
// glue calling its entry point (msl/emitter_program.cpp).
void emit_program(const KernelSpec& spec, const LexedKernel& lexed, const CxxTarget& target, TranslatedKernel& k);
void emit_metal(const KernelSpec& spec, const std::vector<KernelParam>& params,
                TranslatedKernel& k);
// A CUDA body (Dialect::Cuda) with MLX's cuda_kernel signature.
void emit_cuda_body(const KernelSpec& spec, const std::vector<KernelParam>& params, TranslatedKernel& k);

}  // namespace alloy::msl

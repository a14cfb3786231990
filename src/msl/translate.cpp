#include "alloy/msl/translate.h"

#include <stdexcept>

#include "msl/analysis.h"
#include "msl/emitter.h"
#include "msl/lexer.h"
#include "msl/signature.h"

namespace alloy::msl {

TranslatedKernel translate(const KernelSpec& spec, Target target) {
  check_spec(spec);
  TranslatedKernel k;
  k.target = target;
  k.kernel_name = kernel_name(spec);
  // Each text is lexed once, here: the passes below all read these tokens.
  const LexedKernel lexed = lex_kernel(spec);
  k.analysis = analyze(spec, lexed);
  if (!spec.program_entry.empty()) {
    if (spec.dialect != Dialect::Metal)
      throw std::invalid_argument("[msl::translate] a whole program (metal_library) is written in Metal.");
    switch (target) {
      case Target::Metal:
        k.source = spec.header.empty() ? spec.source : spec.header + "\n" + spec.source;
        k.entry = spec.program_entry;
        break;
      case Target::Cpp: emit_program(spec, lexed, cpp_target(), k); break;
      case Target::Cuda: emit_program(spec, lexed, cuda_target(), k); break;
    }
    return k;
  }
  std::vector<KernelParam> params = kernel_params(spec, k.analysis);
  k.params = glue_params(params, static_cast<int>(spec.inputs.size()));
  if (spec.dialect == Dialect::Cuda) {
    if (target != Target::Cuda)
      throw std::invalid_argument("[msl::translate] kernel '" + spec.name +
                                  "' has a CUDA body: it compiles for the CUDA target only.");
    emit_cuda_body(spec, params, k);
    return k;
  }
  switch (target) {
    case Target::Metal: emit_metal(spec, params, k); break;
    case Target::Cpp: emit_cxx(spec, lexed, cpp_target(), params, k); break;
    case Target::Cuda: emit_cxx(spec, lexed, cuda_target(), params, k); break;
  }
  return k;
}

}  // namespace alloy::msl

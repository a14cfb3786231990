#include "alloy/msl/translate.h"

#include <stdexcept>

#include "msl/analysis.h"
#include "msl/cpu_inline_helpers.h"
#include "msl/emitter.h"
#include "msl/lexer.h"
#include "msl/signature.h"

namespace alloy::msl {

namespace {

TranslatedKernel translate_lexed(const KernelSpec& spec, const LexedKernel& lexed, Target target,
                                 const std::string& inlined) {
  TranslatedKernel k;
  k.target = target;
  k.kernel_name = kernel_name(spec);
  k.cpu_inlined = inlined;
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

}  // namespace

TranslatedKernel translate(const KernelSpec& spec, Target target) {
  check_spec(spec);
  // Each text is lexed once, here: the passes that follow all read these tokens.
  const LexedKernel lexed = lex_kernel(spec);
  // On the CPU, a helper of the header that synchronises is written out at
  // its calls (cpu_inline_helpers.h), where that lets regions take the
  // kernel; the texts so written are lexed in their turn.
  if (target == Target::Cpp && spec.program_entry.empty() && spec.dialect == Dialect::Metal &&
      spec.cpu_sync == KernelSpec::CpuSync::Auto) {
    std::string why_not;
    if (std::optional<InlinedHelpers> inlined = inline_sync_helpers(spec, lexed, &why_not)) {
      KernelSpec written = spec;
      written.source = std::move(inlined->source);
      written.header = std::move(inlined->header);
      // (An error there, the user's own, is the one the kernel as written
      // reports below, quoting its own lines.)
      try {
        TranslatedKernel k = translate_lexed(written, lex_kernel(written), target, inlined->note);
        // (With only helpers it does not call left out, a kernel may not
        // synchronise at all: its threads are then plain loops.)
        if (k.cpu_threads == "regions" || k.cpu_threads.empty()) return k;
        why_not = "regions cannot take the body with them written out either (" + k.cpu_threads + ")";
      } catch (const std::exception& e) {
        why_not = std::string("the body with them written out does not translate (") + e.what() + ")";
      }
    }
    if (!why_not.empty())
      return translate_lexed(spec, lexed, target,
                             "The header's synchronising helpers are not written out in the body: " + why_not);
  }
  return translate_lexed(spec, lexed, target, "");
}

}  // namespace alloy::msl

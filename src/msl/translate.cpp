#include "alloy/msl/translate.h"

#include <optional>
#include <stdexcept>
#include <tuple>

#include "alloy/msl/program.h"
#include "msl/analysis.h"
#include "msl/cpu_inline_helpers.h"
#include "msl/cpu_inline_macros.h"
#include "msl/lockstep.h"
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

TranslatedKernel translate_cpu_passes(const KernelSpec& spec, const LexedKernel& lexed, Target target,
                                      const std::string& note_so_far);

}  // namespace

TranslatedKernel translate(const KernelSpec& spec, Target target) {
  check_spec(spec);
  // Function constants a metal_kernel's header declares (MLX's quantized.h
  // does, for kernels it makes itself) get no values: Metal compiles them
  // unread, and reads them as unspecified. Here each is its type's T() and
  // `is_function_constant_defined` false; the Metal form keeps them as written.
  if (spec.program_entry.empty() && spec.dialect == Dialect::Metal && target != Target::Metal &&
      spec.header.find("function_constant") != std::string::npos) {
    KernelSpec specialized = spec;
    std::tie(specialized.header, specialized.source) = specialize_kernel_function_constants(spec.header, spec.source);
    if (specialized.header != spec.header) return translate(specialized, target);
  }
  // Each text is lexed once, here: the passes that follow all read these tokens.
  const LexedKernel lexed = lex_kernel(spec);
  // Threadgroup memory the lanes of a SIMD group share between statements
  // with no barrier gets one (lockstep.h); the body so written is lexed in
  // its turn. The race check (KernelSpec::race_check) reports such sharing
  // instead: by Metal's memory model it is a race, which lockstep lanes
  // settle.
  if ((target == Target::Cpp || target == Target::Cuda) && spec.program_entry.empty() &&
      spec.dialect == Dialect::Metal && !(spec.race_check && spec.bounds_check)) {
    if (std::optional<LockstepPoints> points = add_lockstep_points(spec, lexed, target)) {
      KernelSpec written = spec;
      written.source = std::move(points->source);
      return translate_cpu_passes(written, lex_kernel(written), target, points->note);
    }
  }
  return translate_cpu_passes(spec, lexed, target, "");
}

namespace {

// The passes of the CPU target that write the body's synchronising macros
// and helpers out (then regions may take it); `note` says what was already
// written into the body.
TranslatedKernel translate_cpu_passes(const KernelSpec& spec, const LexedKernel& lexed, Target target,
                                      const std::string& note_so_far) {
  // On the CPU, a macro or a helper of the header that synchronises is
  // written out at its calls (cpu_inline_macros.h, cpu_inline_helpers.h),
  // where that lets regions take the kernel; the texts so written are lexed
  // in their turn.
  if (target == Target::Cpp && spec.program_entry.empty() && spec.dialect == Dialect::Metal &&
      spec.cpu_sync == KernelSpec::CpuSync::Auto) {
    std::string why_not, note = note_so_far;
    const char* what = "macros";
    KernelSpec written = spec;
    std::optional<LexedKernel> rewritten;  // `written`'s texts lexed, once they differ from the kernel's
    // (An error in them, the user's own, is the one the kernel as written
    // reports below, quoting its own lines.)
    try {
      if (std::optional<InlinedHelpers> macros = inline_sync_macros(spec, lexed, &why_not)) {
        written.source = std::move(macros->source);
        written.header = std::move(macros->header);
        note += (note.empty() ? "" : "; ") + macros->note;
        rewritten.emplace(lex_kernel(written));
      }
      const bool wrote_macros = rewritten.has_value();
      if (why_not.empty()) {
        what = "helpers";
        if (std::optional<InlinedHelpers> helpers = inline_sync_helpers(written, rewritten ? *rewritten : lexed, &why_not)) {
          written.source = std::move(helpers->source);
          written.header = std::move(helpers->header);
          note += (note.empty() ? "" : "; ") + helpers->note;
          rewritten.emplace(lex_kernel(written));
        }
      }
      if (why_not.empty() && rewritten) {
        TranslatedKernel k = translate_lexed(written, *rewritten, target, note);
        // (With only macros or helpers it does not call left out, a kernel
        // may not synchronise at all: its threads are then plain loops.)
        if (k.cpu_threads == "regions" || k.cpu_threads.empty()) return k;
        what = !wrote_macros ? "helpers" : note.find("written out at") != std::string::npos ? "macros and helpers" : "macros";
        why_not = "regions cannot take the body with them written out either (" + k.cpu_threads + ")";
      }
    } catch (const std::exception& e) {
      why_not = std::string("the body with them written out does not translate (") + e.what() + ")";
    }
    if (!why_not.empty())
      return translate_lexed(spec, lexed, target,
                             (note_so_far.empty() ? "" : note_so_far + "; ") + "The header's synchronising " + what +
                                 " are not written out in the body: " + why_not);
  }
  return translate_lexed(spec, lexed, target, note_so_far);
}

}  // namespace

}  // namespace alloy::msl

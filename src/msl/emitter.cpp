#include "msl/emitter.h"

#include "msl/cpu_uniform_loops.h"
#include "msl/cpu_uniform_values.h"
#include "msl/features.h"
#include "msl/private_adds.h"
#include "msl/rewrite.h"
#include "msl/language_rules.h"
#include "msl/writer.h"

namespace alloy::msl {
namespace {

// The kernel function's own parameter declaration (docs/design/msl.md).
// On the CPU a metal_kernel's buffers are `__restrict__`, as CUDA's entry
// declares them: no output shares memory with another buffer (each is made
// for the call, a worker's copy of its own under private adds) and inputs
// are only read, so the compiler may keep a thread's reads of an input in
// registers across its stores to an output (what lets the loops of a
// region take a value shared by a row of threads out of the row's loop).
std::string kernel_param(const KernelSpec& spec, const KernelParam& p, bool restrict_buffers) {
  using K = KernelParam::Kind;
  const std::string pointer = restrict_buffers ? "* __restrict__ " : "* ";
  switch (p.kind) {
    case K::Input: return "const " + p.type + (p.is_scalar ? "& " : pointer) + p.name;
    case K::Shape: return "const int" + pointer + p.name;
    case K::Strides: return "const int64_t" + pointer + p.name;
    case K::Ndim: return "const int " + p.name;
    case K::Output: return pointee_type(spec, p) + pointer + p.name;
    case K::Attribute: return p.type + " " + p.name;
  }
  return "";
}

std::string math_mode_macro(const std::string& mode) {
  if (mode == "fast") return "ALLOY_MATH_MODE_FAST";
  if (mode == "relaxed") return "ALLOY_MATH_MODE_RELAXED";
  return "ALLOY_MATH_MODE_SAFE";
}

}  // namespace

// Whether the translation checks races (KernelSpec::race_check): the CPU's,
// which are bounds-checked too (the check rides on their rewrite).
static bool cpu_race_check(const KernelSpec& spec, const CxxTarget& target) {
  return spec.race_check && spec.bounds_check && !spec.tolerate_input_reads && target.target() == Target::Cpp;
}

void emit_prelude(const KernelSpec& spec, const CxxTarget& target, const TranslatedKernel& k,
                  const RuntimeFeatures& features, Writer& w) {
  const std::string what = spec.program_entry.empty() ? "MLX metal_kernel '" + spec.name + "'"
                                                      : "metal_library kernel '" + spec.program_entry + "'";
  w.generated("// " + k.kernel_name + ": " + what + " translated by alloy::msl for " + target.description() +
              ". Generated; do not edit.\n");
  // What verbose=True shows a user whose kernel is slow on the CPU.
  if (!k.cpu_threads.empty()) w.generated("// Threads run as " + k.cpu_threads + ".\n");
  if (!k.cpu_inlined.empty()) w.generated("// " + k.cpu_inlined + ".\n");
  if (k.analysis.fp_contract_off)
    w.generated("// Compiled without contracting a * b + c into an FMA: the kernel turns FP_CONTRACT off.\n");
  const bool races = cpu_race_check(spec, target);
  if (races)
    w.generated(k.cpu_threads.rfind("regions", 0) == 0
                    ? "// Race check: accesses to threadgroup arrays are checked between barriers.\n"
                    : "// Race check: not done: only kernels whose threads run as regions are checked.\n");
  // Before the runtime headers, so they can choose their math for the mode.
  w.generated("#define " + math_mode_macro(spec.math_mode) + " 1\n");
  if (races) w.generated("#define ALLOY_MSL_CPU_RACE_CHECK 1\n");
  // Only the parts of the runtime this kernel uses are parsed.
  w.generated(feature_defines(features));
  w.generated(std::string("#include \"") + target.runtime_header() + "\"\n");
  if (spec.bounds_check && spec.tolerate_input_reads) w.generated("#define ALLOY_BOUNDS_INPUT_READS_ONLY 1\n");
  if (spec.bounds_check) w.generated("#include \"metal_bounds.h\"\n");
  if (races) w.generated("#include \"metal_race.h\"\n");
  if (features.mlx_utils) w.generated("#include \"mlx_utils.h\"\n");
  w.generated("using namespace metal;\n");
  // What Metal's compiler predefines (spec 1.6.2: __METAL_VERSION__ as
  // MajorMinorPatch, __METAL__ from metal3.0), and <metal_config>'s
  // __HAVE_BFLOAT__, as code tests them: MSL 3.1, the version with bfloat;
  // not 3.2, whose <metal_logging> (MLX's logging.h takes it from 3.2) is
  // not provided.
  w.generated("#define __METAL_VERSION__ 310\n#define __METAL__ 1\n#define __HAVE_BFLOAT__ 1\n");
  // <metal_tensor>'s 4-bit and 2-bit integer formats (metal_fp4.h).
  if (features.tensor) w.generated("#define __HAVE_INT4B_FORMAT_TYPE__ 1\n#define __HAVE_INT2B_FORMAT_TYPE__ 1\n");
  if (spec.math_mode == "fast") {
    // Metal defines __FAST_MATH__ for fast math; bodies may test it. After
    // the runtime headers, so system headers are not affected.
    w.generated("#ifndef __FAST_MATH__\n#define __FAST_MATH__ 1\n#endif\n");
  }
}

CpuThreadsPlan plan_threads(const KernelSpec& spec, const LexedKernel& lexed, const CxxTarget& target,
                            RuntimeFeatures& features, TranslatedKernel& k) {
  if (target.target() != Target::Cpp) return {};
  CpuThreadsPlan plan = plan_cpu_threads(spec, lexed, k.analysis, features);
  if (!plan.whole_program) {
    k.private_add_outputs = add_only_outputs(spec, lexed);
    for (int j : k.private_add_outputs) plan.private_adds.push_back(spec.outputs[j].name);
  }
  if ((plan.coroutines || plan.regions_only) && spec.cpu_sync == KernelSpec::CpuSync::Auto)
    plan.regions = plan_regions(spec, lexed, k.analysis.attributes, plan.regions_why_not);
  // A metal_kernel that does not synchronise runs as one region too when its
  // threads come in rows (cpu_uniform_values.h): what a row shares is then
  // computed once a row (the seed's grid_sample forward, one core: 31 ms as
  // plain loops, 12 as a region). Otherwise its plain loop stays.
  if (!k.analysis.uses_sync && spec.program_entry.empty() && spec.cpu_sync == KernelSpec::CpuSync::Auto &&
      !spec.bounds_check && may_have_thread_rows(lexed.source.tokens)) {
    std::string why_not;
    auto rows = plan_regions(spec, lexed, k.analysis.attributes, why_not);
    if (rows && rows->rows) plan.regions = std::move(rows);
  }
  if (plan.regions_only && !plan.regions) {
    plan.fibers_because = std::string("simdgroup matrix operations run as regions or fibers") +
                          (spec.cpu_sync == KernelSpec::CpuSync::Auto
                               ? ", and regions cannot take this kernel: " + plan.regions_why_not
                               : ", and other models were asked for");
    plan.bodies.clear();
  }
  if (plan.regions) {
    plan.coroutines = false;
    features.cpu_regions = true;
    k.cpu_threads = "regions";
    k.cpu_optimization = 3;
    k.cpu_flags = {"--param=max-unswitch-level=4", "--param=max-unswitch-insns=400"};
  } else if (plan.coroutines) {
    features.cpu_coroutines = true;
    k.cpu_threads = "coroutines";
    if (!plan.regions_why_not.empty()) k.cpu_threads += ": not regions, as " + plan.regions_why_not;
  } else if (!plan.fibers_because.empty()) {
    k.cpu_threads = "fibers: " + plan.fibers_because;
  }
  return plan;
}

std::set<std::string> all_user_names(const LexedKernel& lexed) {
  std::set<std::string> user_names = user_declared_names(lexed.header);
  for (const std::string& n : user_declared_names(lexed.source)) user_names.insert(n);
  for (const IncludedFile& f : lexed.includes)
    for (const std::string& n : user_declared_names(f.lexed)) user_names.insert(n);
  return user_names;
}

void emit_header_texts(const KernelSpec& spec, const LexedKernel& lexed, const std::set<std::string>& user_names,
                       Writer& w) {
  // MLX's headers the kernel includes, translated like the header, before it.
  for (const IncludedFile& f : lexed.includes) {
    w.generated("// " + f.path + " (from the installed mlx package)\n");
    rewrite_user_code(f.lexed, Origin::Header, user_names, w);
    w.end_line();
  }
  if (!spec.header.empty()) {
    w.line_directive(Origin::Header, 1);
    rewrite_user_code(lexed.header, Origin::Header, user_names, w);
    w.line_directive(Origin::Generated);
  }
}

std::string pointee_type(const KernelSpec& spec, const KernelParam& p) {
  if (p.kind == KernelParam::Kind::Output && spec.atomic_outputs) return "atomic<" + p.type + ">";
  return p.type;
}

void emit_cxx(const KernelSpec& spec, const LexedKernel& lexed, const CxxTarget& target,
              const std::vector<KernelParam>& params, TranslatedKernel& k) {
  check_user_texts(lexed, /*source_at_program_scope=*/false);
  const std::set<std::string> user_names = all_user_names(lexed);
  const std::set<std::string> macros = macros_naming_anything(lexed);

  Writer w;
  RuntimeFeatures features = runtime_features(spec, k.analysis, lexed);
  const CpuThreadsPlan threads = plan_threads(spec, lexed, target, features, k);
  emit_prelude(spec, target, k, features, w);
  emit_header_texts(spec, lexed, user_names, w);

  std::string tmpl = template_header(spec);
  if (!tmpl.empty()) w.generated(tmpl + "\n");
  // A coroutine thread returns its coroutine; its arguments are copied into
  // its frame, so the bounds check is taken by value (the glue's is a temporary).
  w.generated(std::string("ALLOY_KERNEL_FN ") + (threads.coroutines ? "::alloy_msl::cpu::thread_task " : "void ") +
              k.kernel_name + "(");
  // Split into regions, the kernel runs once per group: each region reads
  // its thread's attributes from the group's state.
  const bool regions = threads.regions.has_value();
  auto passed = [&](const KernelParam& p) { return !(regions && p.kind == KernelParam::Kind::Attribute); };
  std::size_t written = 0;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (passed(params[i]))
      w.generated((written++ ? ",\n    " : "\n    ") + kernel_param(spec, params[i], target.target() == Target::Cpp));
  if (regions) w.generated(std::string(written++ ? ",\n    " : "\n    ") + "::alloy_msl::cpu::GroupThreads& alloy_g");
  const bool plain_adds = !threads.private_adds.empty();
  // (A type, PlainAdds<true> or <false>: the glue makes the kernel once for
  // each, so no loop over threads branches on it for every add.)
  if (plain_adds) w.generated(std::string(written++ ? ",\n    " : "\n    ") + "auto alloy_plain_adds");
  if (spec.bounds_check) w.generated(std::string(written == 0 ? "\n    " : ",\n    ") +
                                     (regions ? "const ::alloy_msl::BoundsCheck& alloy_bc_group"
                                      : threads.coroutines ? "::alloy_msl::BoundsCheck alloy_bc"
                                                           : "const ::alloy_msl::BoundsCheck& alloy_bc"));
  w.generated(") {\n");
  const auto storage =
      target.target() == Target::Cuda ? spec.threadgroup_storage : KernelSpec::ThreadgroupStorage::Static;
  if (storage == KernelSpec::ThreadgroupStorage::Dynamic)
    w.generated("  unsigned alloy_tg_cursor = 0;  // bytes of dynamic threadgroup memory taken\n");
  w.line_directive(Origin::Source, 1);
  if (spec.bounds_check) {
    // Slots: the inputs, then the outputs (the glue's buffer order), then the
    // threadgroup arrays the body declares.
    // (KernelSpec::tolerate_input_reads: the inputs only.)
    for (const ParamSpec& p : spec.inputs) k.bounds_names.push_back(p.name);
    if (!spec.tolerate_input_reads)
      for (const ParamSpec& p : spec.outputs) k.bounds_names.push_back(p.name);
    k.kernel_scope_threadgroup_arrays =
        rewrite_checked_body(lexed.source, user_names, w, storage, k.bounds_names, &threads, &macros,
                             cpu_race_check(spec, target), spec.tolerate_input_reads);
  } else {
    k.kernel_scope_threadgroup_arrays = rewrite_user_code(lexed.source, Origin::Source, user_names, w, storage,
                                                          /*whole_program=*/false, &threads, &macros);
  }
  w.line_directive(Origin::Generated);
  // A body with no synchronising call or `return` is still a coroutine.
  w.generated(threads.coroutines ? "co_return;\n}\n\n" : "}\n\n");

  GlueContext c{spec, k.kernel_name, params, k.params, k.analysis.uses_sync, threads.coroutines, regions};
  std::string call = k.kernel_name + template_values(spec, /*cpp_bools=*/true) + "(";
  std::size_t g = 0, args = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!passed(params[i])) continue;
    call += args++ ? ",\n" : "\n";
    call += target.call_indent();
    if (params[i].kind == KernelParam::Kind::Attribute)
      call += "t." + params[i].name;
    else
      call += target.argument(c, params[i], k.params[g++]);
  }
  if (regions) call += std::string(args++ ? ",\n" : "\n") + target.call_indent() + "alloy_g";
  if (plain_adds) call += std::string(args++ ? ",\n" : "\n") + target.call_indent() + "ALLOY_PLAIN_ADDS";
  // Split into regions, each region sets its thread in a copy of the group's check.
  if (spec.bounds_check) call += std::string(args == 0 ? "\n" : ",\n") + target.call_indent() +
                                 (regions ? target.bounds_check_group_argument() : target.bounds_check_argument());
  call += ")";
  if (plain_adds) {
    auto with = [&](const char* value) {
      std::string c = call;
      c.replace(c.find("ALLOY_PLAIN_ADDS"), 16, value);
      return c;
    };
    call = "(L->plain_adds != 0 ? " + with("::alloy_msl::cpu::PlainAdds<true>{}") + "\n" + target.call_indent() +
           ": " + with("::alloy_msl::cpu::PlainAdds<false>{}") + ")";
  }
  target.glue(c, call, w);

  k.entry = "alloy_kernel_main";
  k.source = w.take_text();
  k.lines = w.take_map();
}

}  // namespace alloy::msl

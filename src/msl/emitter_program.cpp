// A whole Metal program (metal_library) for a C++ target: the program as the
// user wrote it, rewritten by the same rules as a header (its `kernel`
// functions become functions like any other), then the target's glue calling
// the one entry point this translation runs. Buffers and values arrive as the
// glue's inputs and outputs; threadgroup parameters point into one block of
// threadgroup memory; attribute parameters take the thread's ids in the
// type they declare.
#include "alloy/msl/program.h"
#include "msl/analysis.h"
#include "msl/emitter.h"
#include "msl/rewrite.h"
#include "msl/language_rules.h"
#include "msl/writer.h"

#include <stdexcept>

namespace alloy::msl {
namespace {

constexpr unsigned kThreadgroupAlign = 16;

const ProgramKernel& find_entry(const ProgramInfo& info, const std::string& name) {
  for (const ProgramKernel& k : info.kernels)
    if (k.name == name) return k;
  throw std::invalid_argument("[metal_library] the program has no kernel '" + name + "'.");
}

// `T*`, or for an array parameter `T (*)[B][C]` (what `T p[A][B][C]` decays to).
std::string threadgroup_pointer_type(const ProgramParam& p) {
  if (p.array_dims.size() <= 1) return p.type + "*";
  std::string t = p.type + " (*)";
  for (std::size_t d = 1; d < p.array_dims.size(); ++d) t += "[" + p.array_dims[d] + "]";
  return t;
}

// A tensor parameter's argument: the buffer, the array's shape and strides
// (runtime/metal_tensor.h reverses them into Metal's innermost-first order).
// A quantized tensor's scales plane is the input after its data.
std::string tensor_argument(const GlueContext& c, const CxxTarget& target, const ProgramParam& p,
                            const std::vector<KernelParam>& params, const std::vector<GlueParam>& glue,
                            std::size_t buffer, std::size_t meta) {
  std::string scales;
  if (p.tensor_scales) scales = ", " + target.argument(c, params[buffer + 1], glue[buffer + 1]);
  return "::alloy_msl::bind_tensor<" + std::to_string(p.tensor_rank) + ">(" +
         target.argument(c, params[buffer], glue[buffer]) + ", " + target.argument(c, params[meta], glue[meta]) +
         ", " + target.argument(c, params[meta + 1], glue[meta + 1]) + scales + ")";
}

}  // namespace

void emit_program(const KernelSpec& spec, const LexedKernel& lexed, const CxxTarget& target, TranslatedKernel& k) {
  check_user_texts(lexed, /*source_at_program_scope=*/true);
  const ProgramInfo info = parse_program(spec.source, spec.header);
  const ProgramKernel& entry = find_entry(info, spec.program_entry);
  const std::set<std::string> user_names = all_user_names(lexed);

  Writer w;
  RuntimeFeatures features = runtime_features(spec, k.analysis, lexed);
  const CpuThreadsPlan threads = plan_threads(spec, lexed, target, features, k);
  emit_prelude(spec, target, k, features, w);
  emit_header_texts(spec, lexed, user_names, w);
  w.line_directive(Origin::Source, 1);
  rewrite_user_code(lexed.source, Origin::Source, user_names, w, KernelSpec::ThreadgroupStorage::Static,
                    /*whole_program=*/true, &threads);
  w.end_line();
  w.line_directive(Origin::Generated);

  // The glue's inputs (what the kernel reads) and outputs (what it writes),
  // in parameter order, as metal_kernel's glue takes them.
  using R = ProgramParam::Role;
  std::vector<KernelParam> params;
  int n_inputs = 0, n_outputs = 0;
  for (const ProgramParam& p : entry.params) {
    if (p.role == R::ReadBuffer || p.role == R::ConstantValue)
      params.push_back({KernelParam::Kind::Input, n_inputs++, p.name, p.type, p.role == R::ConstantValue, false});
    if (p.tensor_scales) params.push_back({KernelParam::Kind::Input, n_inputs++, p.name + "_scales", "uchar"});
  }
  for (const ProgramParam& p : entry.params) {
    if (p.role == R::WriteBuffer) params.push_back({KernelParam::Kind::Output, n_outputs++, p.name, p.type});
  }
  if (n_inputs != static_cast<int>(spec.inputs.size()) || n_outputs != static_cast<int>(spec.outputs.size()))
    throw std::invalid_argument("[metal_library] kernel '" + entry.name + "' reads " + std::to_string(n_inputs) +
                                " and writes " + std::to_string(n_outputs) + " buffers; the launch describes " +
                                std::to_string(spec.inputs.size()) + " and " + std::to_string(spec.outputs.size()) +
                                ".");
  // A tensor's shape and strides (those of the array bound to it, outermost
  // first) follow the buffers; glue index: the buffer's (outputs after inputs).
  std::vector<std::size_t> tensor_meta(entry.params.size(), 0);
  {
    int in = 0, out = 0;
    for (std::size_t i = 0; i < entry.params.size(); ++i) {
      const ProgramParam& p = entry.params[i];
      int buffer = -1;
      if (p.role == R::ReadBuffer || p.role == R::ConstantValue) buffer = in++;
      if (p.tensor_scales) ++in;
      if (p.role == R::WriteBuffer) buffer = n_inputs + out++;
      if (buffer < 0 || p.tensor_rank == 0) continue;
      tensor_meta[i] = params.size();
      params.push_back({KernelParam::Kind::Shape, buffer, p.name + "_shape", "int"});
      params.push_back({KernelParam::Kind::Strides, buffer, p.name + "_strides", "int64_t"});
    }
  }
  k.params = glue_params(params, n_inputs);

  // Threadgroup memory: each parameter's bytes at a 16-aligned offset.
  std::vector<unsigned> offsets;
  unsigned total = 0;
  for (const ProgramParam& p : entry.params) {
    if (p.role != R::Threadgroup) continue;
    if (offsets.size() >= spec.threadgroup_bytes.size())
      throw std::invalid_argument("[metal_library] kernel '" + entry.name +
                                  "': no threadgroup memory size for parameter '" + p.name + "'.");
    total = (total + kThreadgroupAlign - 1) / kThreadgroupAlign * kThreadgroupAlign;
    offsets.push_back(total);
    total += spec.threadgroup_bytes[offsets.size() - 1];
  }
  k.threadgroup_parameter_bytes = total;
  if (total > 0) w.generated(target.threadgroup_memory(total) + "\n");

  // Split into regions, the entry runs once per group and takes the group's
  // state in place of its attribute parameters (msl/cpu_regions.h).
  const bool regions = threads.regions.has_value();
  GlueContext c{spec, k.kernel_name, params, k.params, k.analysis.uses_sync, threads.coroutines, regions,
                k.threadgroup_parameter_bytes > 0};
  std::string call = entry.function + entry.template_args + "(";
  std::size_t in = 0, out = 0, tg = 0, args = 0;
  for (std::size_t i = 0; i < entry.params.size(); ++i) {
    const ProgramParam& p = entry.params[i];
    if (regions && p.role == R::Attribute) continue;
    call += args++ ? ",\n" : "\n";
    call += target.call_indent();
    switch (p.role) {
      case R::ReadBuffer: {
        const std::size_t g = in++;
        if (p.tensor_scales) ++in;
        call += tensor_meta[i] ? tensor_argument(c, target, p, params, k.params, g, tensor_meta[i])
                               : target.argument(c, params[g], k.params[g]);
        break;
      }
      case R::ConstantValue: {
        // A copy, which the `constant T&` binds to: the kernel then reads a
        // value the compiler knows no store can change (a reference into
        // the buffer is reloaded in loops whose stores might alias it). A
        // coroutine outlives the call's temporaries: it binds to the buffer.
        const std::size_t g = in++;
        call += c.coroutines ? target.argument(c, params[g], k.params[g])
                             : "static_cast<" + p.type + ">(" + target.argument(c, params[g], k.params[g]) + ")";
        break;
      }
      case R::WriteBuffer: {
        const std::size_t g = n_inputs + out++;
        call += tensor_meta[i] ? tensor_argument(c, target, p, params, k.params, g, tensor_meta[i])
                               : target.argument(c, params[g], k.params[g]);
        break;
      }
      case R::Threadgroup: {
        const unsigned offset = offsets[tg], bytes = spec.threadgroup_bytes[tg];
        ++tg;
        if (!p.array_dims.empty()) {
          // A sized array parameter must fit the memory the launch gave it.
          std::string array = p.type;
          for (const std::string& d : p.array_dims) array += "[" + d + "]";
          w.generated("static_assert(sizeof(" + array + ") <= " + std::to_string(bytes) +
                      "u, \"threadgroup parameter '" + p.name + "' needs more than the " + std::to_string(bytes) +
                      " bytes of threadgroup memory the launch gives it\");\n");
        }
        call += "reinterpret_cast<" + threadgroup_pointer_type(p) + ">(alloy_tg_memory + " + std::to_string(offset) +
                "u)";
        break;
      }
      case R::Attribute: call += "::alloy_msl::attribute_as<" + p.type + ">(t." + p.attribute + ")"; break;
    }
  }
  if (regions) call += std::string(args ? ",\n" : "\n") + target.call_indent() + "alloy_g";
  call += ")";
  target.glue(c, call, w);

  k.entry = "alloy_kernel_main";
  k.source = w.take_text();
  k.lines = w.take_map();
}

ProgramInfo check_program(const std::string& source, const std::string& header) {
  ProgramInfo info = parse_program(source, header);
  KernelSpec spec;
  spec.source = source;
  spec.header = header;
  const LexedKernel lexed = lex_kernel(spec);
  check_brackets(lexed.header);
  check_brackets(lexed.source);
  const std::set<std::string> user_names = all_user_names(lexed);
  Writer scratch;
  emit_header_texts(spec, lexed, user_names, scratch);
  rewrite_user_code(lexed.source, Origin::Source, user_names, scratch, KernelSpec::ThreadgroupStorage::Static,
                    /*whole_program=*/true);
  return info;
}

}  // namespace alloy::msl

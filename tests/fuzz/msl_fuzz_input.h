// How a fuzzer input drives the MSL front end. Shared by the libFuzzer
// target (tests/fuzz/msl_fuzz.cpp) and the regression test
// (tests/msl/fuzz_regressions_test.cpp), so a saved crash replays exactly.
//
// An input is text, so corpus and regression files read as what they are:
//
//   line 1        options, words separated by blanks (below)
//   then          the kernel source: an MSL body, a CUDA body or a whole program
//   "//@header"   (a line of its own, optional) the header follows
//   "//@log"      (a line of its own, optional) a compiler log to map follows
//
// Options: a word without '=' is flag letters:
//   P  a whole program (metal_library), U  a CUDA body (cuda_kernel);
//      neither: an MSL body (metal_kernel)
//   A  atomic outputs,  R / F  relaxed / fast math,
//   K / D  threadgroup storage StaticKept / Dynamic,
//   V  every function constant of a program gets a value
// and `key=value` words:
//   in=name:type[:s|:c],...   inputs (s: 0-d, c: constant memory); default inp:float
//   out=name:type,...         outputs; default out:float
//   tpl=name:T|I|B:value,...  template arguments (type, int, bool)
//   const=name:value,...      function constant values
//   tg=bytes,...              sizes of a program kernel's threadgroup parameters
//
// The front end documents three kinds of failure: CompileError (an error in
// the user's code), std::invalid_argument (a bad spec) and other
// std::runtime_error. Those are normal outcomes and are caught here; any
// other exception escapes run_input, and so does every crash.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "alloy/msl/program.h"
#include "alloy/msl/translate.h"

namespace alloy_fuzz {

namespace msl = alloy::msl;

struct Input {
  enum class Mode { MslBody, CudaBody, Program } mode = Mode::MslBody;
  msl::KernelSpec spec;  // inputs, outputs, template args, options; source/header
  std::map<std::string, std::string> constants;
  bool all_constants = false;
  std::vector<unsigned> threadgroup_bytes;
  std::string log;
  bool has_log = false;
};

// What one input did, for tests that want more than "it did not crash".
struct Outcome {
  int translations = 0;  // translations that succeeded
  int errors = 0;        // documented errors caught
};

inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// Never throws: a fuzzer input is any bytes.
inline unsigned to_unsigned(std::string_view s) {
  unsigned long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    v = std::min(v * 10 + static_cast<unsigned long>(c - '0'), 1ul << 20);  // what a launch could ask
  }
  return static_cast<unsigned>(v);
}

inline std::vector<msl::ParamSpec> params_of(std::string_view list) {
  std::vector<msl::ParamSpec> out;
  if (list.empty()) return out;
  for (std::string_view item : split(list, ',')) {
    std::vector<std::string_view> f = split(item, ':');
    msl::ParamSpec p;
    p.name = std::string(f[0]);
    p.type = f.size() > 1 ? std::string(f[1]) : "float";
    p.is_scalar = f.size() > 2 && f[2] == "s";
    p.in_constant = f.size() > 2 && f[2] == "c";
    out.push_back(std::move(p));
  }
  return out;
}

inline void read_options(std::string_view line, Input& in) {
  msl::KernelSpec& s = in.spec;
  s.inputs = {{"inp", "float"}};
  s.outputs = {{"out", "float"}};
  for (std::string_view word : split(line, ' ')) {
    std::size_t eq = word.find('=');
    if (eq == std::string_view::npos) {
      for (char c : word) {
        switch (c) {
          case 'P': in.mode = Input::Mode::Program; break;
          case 'U': in.mode = Input::Mode::CudaBody; break;
          case 'A': s.atomic_outputs = true; break;
          case 'R': s.math_mode = "relaxed"; break;
          case 'F': s.math_mode = "fast"; break;
          case 'K': s.threadgroup_storage = msl::KernelSpec::ThreadgroupStorage::StaticKept; break;
          case 'D': s.threadgroup_storage = msl::KernelSpec::ThreadgroupStorage::Dynamic; break;
          case 'V': in.all_constants = true; break;
          default: break;
        }
      }
      continue;
    }
    std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "in") s.inputs = params_of(value);
    if (key == "out") s.outputs = params_of(value);
    if (key == "tpl" && !value.empty()) {
      for (std::string_view item : split(value, ',')) {
        std::vector<std::string_view> f = split(item, ':');
        msl::TemplateArg a;
        a.name = std::string(f[0]);
        const std::string_view kind = f.size() > 1 ? f[1] : "T";
        a.kind = kind == "I" ? msl::TemplateArg::Int : kind == "B" ? msl::TemplateArg::Bool : msl::TemplateArg::Type;
        a.value = f.size() > 2 ? std::string(f[2]) : "float";
        s.template_args.push_back(std::move(a));
      }
    }
    if (key == "const" && !value.empty()) {
      for (std::string_view item : split(value, ',')) {
        std::vector<std::string_view> f = split(item, ':');
        in.constants[std::string(f[0])] = f.size() > 1 ? std::string(f[1]) : "1";
      }
    }
    if (key == "tg" && !value.empty())
      for (std::string_view item : split(value, ',')) in.threadgroup_bytes.push_back(to_unsigned(item));
  }
}

// Splits the input into options, source, header and log.
inline Input parse_input(std::string_view data) {
  Input in;
  std::size_t nl = data.find('\n');
  std::string_view options = data.substr(0, nl);
  if (!options.empty() && options.back() == '\r') options.remove_suffix(1);
  read_options(options, in);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : data.substr(nl + 1);
  // The markers end the text before them; the newline before a marker belongs to it.
  auto cut = [&](std::string_view marker, std::string& into) {
    std::size_t at = rest.find(marker);
    if (at == std::string_view::npos) return false;
    into = std::string(rest.substr(at + marker.size()));
    rest = rest.substr(0, at);
    return true;
  };
  in.has_log = cut("\n//@log\n", in.log);
  cut("\n//@header\n", in.spec.header);
  in.spec.source = std::string(rest);
  in.spec.name = "fuzz";
  if (in.mode == Input::Mode::CudaBody) in.spec.dialect = msl::Dialect::Cuda;
  return in;
}

// Runs `f`; a documented failure counts as an error, anything else escapes.
template <typename F>
bool attempt(Outcome& o, F&& f) {
  try {
    f();
    return true;
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {  // CompileError included
  }
  ++o.errors;
  return false;
}

// A log naming a few user and generated lines, as a compiler would, when the
// input brings none of its own.
inline std::string default_log(const msl::TranslatedKernel& k) {
  const int last = static_cast<int>(k.lines.lines.size());
  return "source:1:1: error: first\nsource:2:5: warning: second\n    2 |   x\n      |   ^~\n"
         "header:1:2: note: third\nsource(3): error: nvrtc\n" +
         k.lines.generated_file + ":" + std::to_string(last) + ":4: error: generated\n";
}

inline void translate_all(const Input& in, const msl::KernelSpec& spec, Outcome& o) {
  const msl::Target targets[] = {msl::Target::Cpp, msl::Target::Cuda, msl::Target::Metal};
  for (msl::Target t : targets) {
    msl::TranslatedKernel k;
    if (!attempt(o, [&] { k = msl::translate(spec, t); })) continue;
    ++o.translations;
    (void)msl::kernel_name(spec);
    if (t != msl::Target::Metal) (void)msl::cuda_threadgroups_per_block(k.analysis);
    const std::string log = in.has_log ? in.log : default_log(k);
    attempt(o, [&] { (void)msl::map_diagnostics(k, log, spec); });
  }
}

// The element type the launcher gives the front end for a parameter's
// declared type: vectors by their scalar, a type it cannot check as float.
inline std::string element_type(std::string t) {
  if (t.rfind("packed_", 0) == 0) t = t.substr(7);
  static const std::map<std::string, std::string> scalars = {
      {"float", "float"},        {"half", "float16_t"},     {"bfloat", "bfloat16_t"}, {"int", "int32_t"},
      {"uint", "uint32_t"},      {"short", "int16_t"},      {"ushort", "uint16_t"},   {"char", "int8_t"},
      {"uchar", "uint8_t"},      {"long", "int64_t"},       {"ulong", "uint64_t"},    {"bool", "bool"},
      {"float16_t", "float16_t"}, {"bfloat16_t", "bfloat16_t"}, {"int32_t", "int32_t"}, {"uint32_t", "uint32_t"}};
  if (auto it = scalars.find(t); it != scalars.end()) return it->second;
  if (t.size() > 1 && t.back() >= '2' && t.back() <= '4')
    if (auto it = scalars.find(t.substr(0, t.size() - 1)); it != scalars.end()) return it->second;
  return "float";
}

// metal_library's path: check the program as the library is made, give the
// function constants their values as a kernel is made, then translate each
// entry point with the parameters a launch would describe.
inline void run_program(const Input& in, Outcome& o) {
  msl::ProgramInfo info;
  if (!attempt(o, [&] { info = msl::check_program(in.spec.source, in.spec.header); })) return;
  std::map<std::string, std::string> values = in.constants;
  if (in.all_constants)
    for (const msl::FunctionConstant& c : info.function_constants) values.emplace(c.name, c.type == "bool" ? "true" : "1");
  std::string source;
  if (!attempt(o, [&] { source = msl::specialize_function_constants(in.spec.source, values); })) return;
  using R = msl::ProgramParam::Role;
  std::size_t n = 0;
  for (const msl::ProgramKernel& k : info.kernels) {
    if (++n > 8) break;  // enough to reach every path; more only costs time
    msl::KernelSpec spec = in.spec;
    spec.name = k.name;
    spec.program_entry = k.name;
    spec.source = source;
    spec.inputs.clear();
    spec.outputs.clear();
    spec.template_args.clear();
    std::size_t tg = 0;
    for (std::size_t i = 0; i < k.params.size(); ++i) {
      const msl::ProgramParam& p = k.params[i];
      msl::ParamSpec s;
      s.name = p.name.empty() ? "buffer" + std::to_string(i) : p.name;
      s.type = element_type(p.type);
      s.is_scalar = p.role == R::ConstantValue;
      if (p.role == R::ReadBuffer || p.role == R::ConstantValue) spec.inputs.push_back(s);
      if (p.role == R::WriteBuffer) spec.outputs.push_back(s);
      if (p.role == R::Threadgroup)
        spec.threadgroup_bytes.push_back(tg < in.threadgroup_bytes.size() ? in.threadgroup_bytes[tg++] : 256u);
    }
    translate_all(in, spec, o);
  }
}

// The whole input through the front end, as the library drives it.
inline Outcome run_input(const std::uint8_t* data, std::size_t size) {
  Outcome o;
  const Input in = parse_input(std::string_view(reinterpret_cast<const char*>(data), size));
  switch (in.mode) {
    case Input::Mode::Program: run_program(in, o); break;
    case Input::Mode::MslBody:
      attempt(o, [&] { (void)msl::analyze(in.spec); });
      translate_all(in, in.spec, o);
      break;
    case Input::Mode::CudaBody: translate_all(in, in.spec, o); break;
  }
  return o;
}

}  // namespace alloy_fuzz

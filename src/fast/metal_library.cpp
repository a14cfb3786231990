// mx.fast.metal_library: a whole Metal program whose kernels are launched by
// binding parameters by name, as Metal's host API binds buffers by index. A
// launch checks its arguments against the entry's parameters, finds or
// translates the variant (per device, dtypes and threadgroup sizes) in the
// cache metal_kernel uses, and builds the same CustomKernel node.
#include <algorithm>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include <cstdio>

#include "alloy/errors.h"
#include "alloy/fast.h"
#include "alloy/msl/program.h"
#include "alloy/ops.h"
#include "alloy/ops_math.h"
#include "fast/kernel_support.h"
#include "fast/library_launch.h"
#include "fast/prepared_launch.h"
#include "ops/op_utils.h"
#include "primitives/custom_kernel.h"

namespace alloy::fast {

struct MetalLibrary::State {
  std::string source, header, math_mode;
  msl::ProgramInfo info;
  std::string definition_key;  // with the per-call key, keys the variant cache
};

struct LibraryKernel::State {
  std::shared_ptr<const MetalLibrary::State> library;
  const msl::ProgramKernel* kernel;  // inside library->info
  std::string source;         // the program with its function constants' values
  std::string constants_key;  // those values, for the variant cache
  std::mutex memo_mutex;
  std::vector<std::pair<std::string, std::shared_ptr<KernelVariant>>> memo;
};

namespace {

using Role = msl::ProgramParam::Role;

// A parameter's element type as the host sees it: the dtype of the array
// elements and how many of them one element of the type spans (float4: 4;
// float3: 4, as Metal aligns it; packed_float3: 3).
struct ElementType {
  Dtype dtype;
  int span = 1;
};

std::optional<Dtype> msl_scalar(const std::string& s) {
  static const std::map<std::string, Dtype> aliases = {
      {"int", Dtype::int32},     {"uint", Dtype::uint32},          {"short", Dtype::int16},
      {"ushort", Dtype::uint16}, {"char", Dtype::int8},
      {"uchar", Dtype::uint8},   {"long", Dtype::int64},           {"ulong", Dtype::uint64},
      {"unsigned int", Dtype::uint32}, {"unsigned", Dtype::uint32}, {"unsigned short", Dtype::uint16},
      {"unsigned char", Dtype::uint8}, {"uint32_t", Dtype::uint32}, {"size_t", Dtype::uint64},
      {"atomic_int", Dtype::int32},    {"atomic_uint", Dtype::uint32}, {"atomic_float", Dtype::float32},
      {"atomic_bool", Dtype::bool_},   {"metal_fp8_e4m3_format", Dtype::uint8},
      {"metal_fp8_e5m2_format", Dtype::uint8}, {"metal_fp8_ue8m0_format", Dtype::uint8},
      {"metal_fp4_e2m1_format", Dtype::uint8}, {"int4b_format", Dtype::uint8},
      {"uint4b_format", Dtype::uint8}, {"int2b_format", Dtype::uint8}, {"uint2b_format", Dtype::uint8}};
  if (auto it = aliases.find(s); it != aliases.end()) return it->second;
  if (s.rfind("atomic<", 0) == 0 && s.back() == '>') return msl_scalar(s.substr(7, s.size() - 8));
  try {
    return dtype_from_name(s);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

// nullopt for a type the host cannot check (a struct of the user's).
std::optional<ElementType> element_type(const std::string& type) {
  if (auto d = msl_scalar(type)) return ElementType{*d, 1};
  std::string t = type;
  bool packed = t.rfind("packed_", 0) == 0;
  if (packed) t = t.substr(7);
  if (t.size() < 2) return std::nullopt;
  char n = t.back();
  if (n < '2' || n > '4') return std::nullopt;
  auto d = msl_scalar(t.substr(0, t.size() - 1));
  if (!d) return std::nullopt;
  int lanes = n - '0';
  return ElementType{*d, (lanes == 3 && !packed) ? 4 : lanes};
}

std::string declared(const msl::ProgramParam& p) {
  if (p.tensor_rank > 0)
    return std::string("tensor<device ") + (p.role == Role::ReadBuffer ? "const " : "") + p.type + ", dextents<int, " +
           std::to_string(p.tensor_rank) + ">>";
  switch (p.role) {
    case Role::ReadBuffer: return "device const " + p.type + "*";
    case Role::ConstantValue: return "constant " + p.type + "&";
    case Role::WriteBuffer: return "device " + p.type + "*";
    case Role::Threadgroup: return "threadgroup " + p.type + (p.array_dims.empty() ? "*" : "[...]");
    case Role::Attribute: return p.type;
  }
  return p.type;
}

std::string dtype_text(Dtype d) { return std::string("mx.") + dtype_info(d).name; }

// The packed formats (metal_fp4.h), lowest bits first: a tensor of one takes
// uint8 arrays, or uint32 words (of mx.quantize(mode="mxfp4"), or affine
// quantization of as many bits), and counts `per_byte` codes a byte along
// its last axis.
struct PackedFormat {
  std::string_view type, codes;  // the MSL type; what its codes are called in errors
  int per_byte;
};
constexpr PackedFormat kPackedFormats[] = {{"metal_fp4_e2m1_format", "FP4", 2},
                                           {"int4b_format", "4-bit integer", 2},
                                           {"uint4b_format", "4-bit integer", 2},
                                           {"int2b_format", "2-bit integer", 4},
                                           {"uint2b_format", "2-bit integer", 4}};
const PackedFormat* packed_format(const msl::ProgramParam& p) {
  for (const PackedFormat& f : kPackedFormats)
    if (p.type == f.type) return &f;
  return nullptr;
}
// Codes per array element of dtype `d`; 0: not a packed format.
int codes_per_element(const msl::ProgramParam& p, Dtype d) {
  const PackedFormat* f = packed_format(p);
  return !f ? 0 : d == Dtype::uint32 ? 4 * f->per_byte : f->per_byte;
}

// What the kernel gets for a 4-bit tensor: its bytes (words viewed as the
// four bytes each holds, in memory order: the same codes in the same order).
array packed_bytes(const array& a, const Stream& s) {
  return a.dtype() == Dtype::uint32 ? view(contiguous(a, false, s), Dtype::uint8, s) : a;
}

// The value of an integral literal dimension; nullopt for an expression.
std::optional<long> literal_dim(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 0);
  while (end && (*end == 'u' || *end == 'U')) ++end;
  if (!end || *end) return std::nullopt;
  return v;
}

// An integral number of bytes from a LibraryArg; nullopt when it is not one.
std::optional<int64_t> integral(const LibraryArg& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return *i;
  if (auto* d = std::get_if<double>(&a)) {
    if (*d == static_cast<double>(static_cast<int64_t>(*d))) return static_cast<int64_t>(*d);
  }
  return std::nullopt;
}

std::string kind_of(const LibraryArg& a) {
  if (std::holds_alternative<array>(a)) return "an array";
  if (std::holds_alternative<OutputSpec>(a)) return "an output (shape, dtype)";
  if (std::holds_alternative<QuantizedTensorArg>(a)) return "a quantized tensor (data, scales)";
  if (std::holds_alternative<bool>(a)) return "a bool";
  return "a number";
}

}  // namespace

// ---- MetalLibrary ----------------------------------------------------------

MetalLibrary metal_library(const std::string& source, const std::string& header, const std::string& math_mode) {
  if (math_mode != "safe" && math_mode != "relaxed" && math_mode != "fast")
    throw std::invalid_argument("[metal_library] math_mode must be 'safe', 'relaxed' or 'fast', not '" + math_mode +
                                "'.");
  auto s = std::make_shared<MetalLibrary::State>();
  s->source = msl::expand_kernel_macros(source);  // kernels written by macros are kernels too
  s->header = header;
  s->math_mode = math_mode;
  s->info = msl::check_program(s->source, header);
  s->definition_key = "metal_library\x1f" + source + "\x1f" + header + "\x1f" + math_mode;
  return MetalLibrary(s);
}

std::vector<std::string> MetalLibrary::kernel_names() const {
  std::vector<std::string> names;
  for (const msl::ProgramKernel& k : state_->info.kernels) names.push_back(k.name);
  return names;
}

const std::vector<std::string>& MetalLibrary::warnings() const { return state_->info.warnings; }

std::vector<std::string> MetalLibrary::function_constants() const {
  std::vector<std::string> out;
  for (const msl::FunctionConstant& c : state_->info.function_constants)
    out.push_back(c.type + " " + c.name + " [[function_constant(" + std::to_string(c.index) + ")]]");
  return out;
}

namespace {

// A C++ literal of the constant's type for `value`.
std::string constant_literal(const msl::FunctionConstant& c, double value) {
  if (c.type == "bool") return value != 0 ? "true" : "false";
  const bool floating = c.type.find("float") != std::string::npos || c.type.find("half") != std::string::npos ||
                        c.type.find("double") != std::string::npos;
  if (floating) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", value);
    return buf;
  }
  if (value != static_cast<double>(static_cast<int64_t>(value))) {
    throw std::invalid_argument("[metal_library] function constant '" + c.name + "' (" + c.type +
                                ") takes an integer, not " + std::to_string(value) + ".");
  }
  return std::to_string(static_cast<int64_t>(value)) + "ll";
}

}  // namespace

LibraryKernel MetalLibrary::kernel(const std::string& name, const std::map<std::string, double>& constants) const {
  for (const msl::ProgramKernel& k : state_->info.kernels) {
    if (k.name != name) continue;
    auto ks = std::make_shared<LibraryKernel::State>();
    ks->library = state_;
    ks->kernel = &k;
    std::map<std::string, std::string> literals;
    for (const auto& [key, value] : constants) {
      const msl::FunctionConstant* found = nullptr;
      for (const msl::FunctionConstant& c : state_->info.function_constants) {
        if (c.name == key || std::to_string(c.index) == key) found = &c;
      }
      if (!found) {
        std::string declared;
        for (const std::string& d : function_constants()) declared += (declared.empty() ? "" : ", ") + d;
        throw std::invalid_argument("[metal_library] the program declares no function constant '" + key + "'" +
                                    (declared.empty() ? " (it declares none)." : "; it declares " + declared + "."));
      }
      literals[found->name] = constant_literal(*found, value);
    }
    ks->source = msl::specialize_function_constants(state_->source, literals);
    for (const auto& [n, v] : literals) ks->constants_key += n + "=" + v + ";";
    return LibraryKernel(ks);
  }
  std::string names;
  for (const msl::ProgramKernel& k : state_->info.kernels) names += (names.empty() ? "'" : ", '") + k.name + "'";
  throw std::invalid_argument("[metal_library] the library has no kernel '" + name + "'; its kernels are " + names +
                              ".");
}

// ---- LibraryKernel ---------------------------------------------------------

static PreparedLaunch prepare_library_launch(LibraryKernel::State& st, const std::vector<msl::ParamSpec>& in_specs,
                                      const std::vector<msl::ParamSpec>& out_specs,
                                      const std::vector<unsigned>& tg_bytes, const Dims3& grid_in,
                                      const Dims3& threadgroup_in, Dispatch dispatch, bool gpu, bool verbose,
                                      const std::optional<double>& requested_timeout) {
  const msl::ProgramKernel& k = *st.kernel;
  const MetalLibrary::State& lib = *st.library;
  const std::string label = "[metal_library] kernel '" + k.name + "'";
  auto bad = [&](const std::string& what) { return std::invalid_argument(label + ": " + what); };
  const msl::Target target = gpu ? msl::Target::Cuda : msl::Target::Cpp;
  std::string call_key(1, cpu_sync_key(target));
  // Geometry.
  std::array<int, 3> g{std::get<0>(grid_in), std::get<1>(grid_in), std::get<2>(grid_in)};
  std::array<int, 3> t{std::get<0>(threadgroup_in), std::get<1>(threadgroup_in), std::get<2>(threadgroup_in)};
  for (int i = 0; i < 3; ++i) {
    if (g[i] <= 0) throw bad("grid " + dims_to_string(grid_in) + " must be positive in every dimension.");
    if (t[i] <= 0) throw bad("threadgroup " + dims_to_string(threadgroup_in) + " must be positive in every dimension.");
  }
  const size_t threads = static_cast<size_t>(t[0]) * t[1] * t[2];
  if (k.max_total_threads_per_threadgroup > 0 && threads > static_cast<size_t>(k.max_total_threads_per_threadgroup))
    throw bad("threadgroup " + dims_to_string(threadgroup_in) + " has " + std::to_string(threads) +
              " threads; the kernel declares [[max_total_threads_per_threadgroup(" +
              std::to_string(k.max_total_threads_per_threadgroup) + ")]].");
  if (threads > kMaxThreadsPerThreadgroup)
    throw bad("threadgroup " + dims_to_string(threadgroup_in) + " has " + std::to_string(threads) +
              " threads; the limit is " + std::to_string(kMaxThreadsPerThreadgroup) + ".");
  std::array<unsigned, 3> grid{}, tg{};
  for (int i = 0; i < 3; ++i) {
    uint64_t n = dispatch == Dispatch::Threadgroups ? uint64_t(g[i]) * t[i] : uint64_t(g[i]);
    if (n > 0xffffffffull) throw bad("grid " + dims_to_string(grid_in) + " has more than 2^32 threads in a dimension.");
    grid[i] = static_cast<unsigned>(n);
    // dispatchThreads clamps the threadgroup to the grid, as metal_kernel does.
    tg[i] = static_cast<unsigned>(std::min<uint64_t>(t[i], grid[i]));
  }

  // The variant: per device, dtypes and threadgroup sizes.
  for (const msl::ParamSpec& s : in_specs) {
    call_key += s.is_scalar ? 's' : 'd';
    call_key += s.type;
    call_key += ',';
  }
  call_key += '|';
  for (const msl::ParamSpec& s : out_specs) call_key += s.type + ",";
  call_key += '|';
  for (unsigned b : tg_bytes) call_key += std::to_string(b) + ",";

  std::shared_ptr<KernelVariant> variant;
  {
    std::lock_guard<std::mutex> lock(st.memo_mutex);
    for (auto& [key, v] : st.memo)
      if (key == call_key) variant = v;
  }
  if (!variant) {
    variant = variant_cache().get(lib.definition_key + "\x1d" + k.name + "\x1d" + st.constants_key + "\x1d" + call_key, [&] {
      auto v = std::make_shared<KernelVariant>();
      msl::KernelSpec& spec = v->spec;
      spec.name = k.name;
      spec.program_entry = k.name;
      spec.source = st.source;
      spec.header = lib.header;
      spec.math_mode = lib.math_mode;
      spec.inputs = in_specs;
      spec.outputs = out_specs;
      spec.threadgroup_bytes = tg_bytes;
      translate_variant(*v, target);
      return v;
    });
    std::lock_guard<std::mutex> lock(st.memo_mutex);
    st.memo.emplace_back(call_key, variant);
  }

  if (verbose) {
    const msl::TranslatedKernel& tr =
        variant->translated.source.empty() ? msl::translate(variant->spec, target) : variant->translated;
    std::cout << msl::translate(variant->spec, msl::Target::Metal).source << "\n"
              << "// ---- translated for " << (gpu ? "CUDA" : "the CPU") << " ----\n"
              << tr.source << std::endl;
  }
  const double timeout = launch_timeout(requested_timeout, /*gpu_unpolled=*/false, label);
  return PreparedLaunch{std::move(variant), grid, tg, std::nullopt, /*ensure_row_contiguous=*/true, 0, timeout, {}};
}


const std::string& LibraryKernel::name() const { return state_->kernel->name; }

int LibraryKernel::max_total_threads_per_threadgroup() const {
  return state_->kernel->max_total_threads_per_threadgroup;
}

std::vector<std::string> LibraryKernel::output_names() const {
  std::vector<std::string> names;
  for (const msl::ProgramParam& p : state_->kernel->params)
    if (p.role == Role::WriteBuffer) names.push_back(p.name);
  return names;
}

std::vector<std::string> LibraryKernel::arg_names() const {
  std::vector<std::string> names;
  for (const msl::ProgramParam& p : state_->kernel->params)
    if (p.role != Role::Attribute) names.push_back(p.name);
  return names;
}

std::string LibraryKernel::buffer_name(int index) const {
  for (const msl::ProgramParam& p : state_->kernel->params) {
    bool buffer = p.role == Role::ReadBuffer || p.role == Role::WriteBuffer || p.role == Role::ConstantValue;
    if (buffer && p.index == index) return p.name;
  }
  throw std::invalid_argument("[metal_library] kernel '" + name() + "' has no parameter at [[buffer(" +
                              std::to_string(index) + ")]].");
}

std::vector<array> LibraryKernel::operator()(const LibraryCall& call) const {
  const msl::ProgramKernel& k = *state_->kernel;
  const std::string label = "[metal_library] kernel '" + k.name + "'";
  auto bad = [&](const std::string& what) { return std::invalid_argument(label + ": " + what); };
  auto wrong_type = [&](const std::string& what) { return ArgumentTypeError(label + ": " + what); };

  // Arguments by parameter.
  std::vector<const LibraryArg*> bound(k.params.size(), nullptr);
  for (const auto& [key, value] : call.args) {
    size_t i = 0;
    for (; i < k.params.size(); ++i)
      if (k.params[i].role != Role::Attribute && k.params[i].name == key) break;
    if (i == k.params.size()) {
      std::string names;
      for (const std::string& n : arg_names()) names += (names.empty() ? "'" : ", '") + n + "'";
      bool attribute = std::any_of(k.params.begin(), k.params.end(),
                                   [&](const msl::ProgramParam& p) { return p.role == Role::Attribute && p.name == key; });
      throw bad(attribute ? "'" + key + "' is a thread-position attribute, filled by the launch; do not pass it."
                          : "no parameter is named '" + key + "'; the kernel takes " + names + ".");
    }
    if (bound[i]) throw bad("'" + key + "' is given twice.");
    bound[i] = &value;
  }

  Stream stream = to_stream(call.stream);
  const bool gpu = stream.device.type == Device::gpu;
  std::vector<array> inputs, in_out_sources;
  std::vector<Shape> out_shapes;
  std::vector<Dtype> out_dtypes;
  std::vector<int> from_input;
  std::vector<msl::ParamSpec> in_specs, out_specs;
  std::vector<unsigned> tg_bytes;
  std::vector<bool> strided_inputs;  // tensor parameters keep their arrays' strides
  auto check_rank = [&](const msl::ProgramParam& p, size_t ndim) {
    if (p.tensor_rank > 0 && ndim != static_cast<size_t>(p.tensor_rank))
      throw bad("parameter '" + p.name + "' (" + declared(p) + ") takes an array of " +
                std::to_string(p.tensor_rank) + " dimensions; got " + std::to_string(ndim) + ".");
  };

  auto check_size = [&](const msl::ProgramParam& p, const ElementType& e, size_t size) {
    if (size % e.span != 0)
      throw bad("parameter '" + p.name + "' (" + declared(p) + ") takes " + std::to_string(e.span) + " " +
                dtype_info(e.dtype).name + " elements per " + p.type + ", but the array has " +
                std::to_string(size) + " elements, which " + std::to_string(e.span) + " does not divide.");
  };
  auto check_dtype = [&](const msl::ProgramParam& p, const ElementType& e, Dtype d) {
    if (codes_per_element(p, d)) {
      if (d != Dtype::uint8 && d != Dtype::uint32)
        throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") takes packed " +
                         std::string(packed_format(p)->codes) + " codes, " +
                         (packed_format(p)->per_byte == 4 ? "four" : "two") +
                         " a byte (lowest bits first): mx.uint8 elements, or mx.uint32 words (as "
                         "mx.quantize(mode=\"mxfp4\") and affine quantization pack them); got " +
                         dtype_text(d) + ".");
      return;
    }
    if (d != e.dtype)
      throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") takes " + dtype_text(e.dtype) +
                       " elements; got " + dtype_text(d) + ".");
  };
  auto spec_of = [](const msl::ProgramParam& p, Dtype d, bool scalar, size_t position) {
    msl::ParamSpec s;
    s.name = p.name.empty() ? "buffer" + std::to_string(position) : p.name;
    s.type = dtype_info(d).msl_name;
    s.is_scalar = scalar;
    return s;
  };

  // Reads (buffers and values) first, in parameter order: the glue's inputs.
  for (size_t i = 0; i < k.params.size(); ++i) {
    const msl::ProgramParam& p = k.params[i];
    if (p.role == Role::Attribute) continue;
    if (!bound[i])
      throw bad("missing argument '" + p.name + "' (" + declared(p) + (p.role == Role::Threadgroup ? ": its size in bytes" : "") + ").");
    const LibraryArg& a = *bound[i];
    const std::optional<ElementType> e = element_type(p.type);
    if (p.role == Role::ReadBuffer && p.tensor_scales) {
      const QuantizedTensorArg* q = std::get_if<QuantizedTensorArg>(&a);
      if (!q)
        throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") is a quantized tensor: pass (data, scales), "
                         "its uint8 codes and its uint8 E8M0 scales (one per 32 elements along the last axis), "
                         "not " + kind_of(a) + ".");
      if (e) check_dtype(p, *e, q->data.dtype());
      check_rank(p, q->data.ndim());
      if (q->scales.dtype() != Dtype::uint8)
        throw wrong_type("parameter '" + p.name + "': the scales plane holds uint8 E8M0 scales; got " +
                         dtype_text(q->scales.dtype()) + ".");
      Shape want = q->data.shape();
      const int per = codes_per_element(p, q->data.dtype());
      if (per) want.back() *= per;
      want.back() = (want.back() + 31) / 32;
      if (q->scales.shape() != want)
        throw bad("parameter '" + p.name + "': the scales plane must have shape " + shape_to_string(want) +
                  " (one scale per 32 elements along the data's last axis, Metal's dimension 0" +
                  (per ? ", " + std::to_string(per) + " " + std::string(packed_format(p)->codes) + " codes to an array element"
                       : std::string()) +
                  "); got " +
                  shape_to_string(q->scales.shape()) + ".");
      const array data = per ? packed_bytes(q->data, stream) : q->data;
      inputs.push_back(data);
      strided_inputs.push_back(!per);  // packed 4-bit codes: made row-contiguous
      in_specs.push_back(spec_of(p, data.dtype(), false, i));
      inputs.push_back(q->scales);
      strided_inputs.push_back(false);  // the plane is packed (row-contiguous)
      msl::ParamSpec scales = spec_of(p, Dtype::uint8, false, i);
      scales.name += "_scales";
      in_specs.push_back(scales);
    } else if (p.role == Role::ReadBuffer) {
      const array* arr = std::get_if<array>(&a);
      if (!arr) throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") takes an array, not " + kind_of(a) + ".");
      if (e) {
        check_dtype(p, *e, arr->dtype());
        check_size(p, *e, arr->size());
      }
      check_rank(p, arr->ndim());
      const bool packed = codes_per_element(p, arr->dtype());
      const array data = packed ? packed_bytes(*arr, stream) : *arr;
      inputs.push_back(data);
      strided_inputs.push_back(p.tensor_rank > 0 && !packed);
      in_specs.push_back(spec_of(p, data.dtype(), false, i));
    } else if (p.role == Role::ConstantValue) {
      if (const array* arr = std::get_if<array>(&a)) {
        if (e && arr->size() != static_cast<size_t>(e->span))
          throw bad("parameter '" + p.name + "' (" + declared(p) + ") takes one " + p.type + "; the array has " +
                    std::to_string(arr->size()) + " elements.");
        array v = e && arr->dtype() != e->dtype ? astype(*arr, e->dtype, stream) : *arr;
        inputs.push_back(v);
        strided_inputs.push_back(false);
        in_specs.push_back(spec_of(p, v.dtype(), true, i));
      } else if (std::holds_alternative<OutputSpec>(a)) {
        throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") takes a number or a 0-d array, not " +
                         kind_of(a) + ".");
      } else {
        if (!e || e->span != 1)
          throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") takes an array holding its " + p.type +
                           " value; a number converts only to a scalar type.");
        double v = std::holds_alternative<bool>(a)    ? (std::get<bool>(a) ? 1.0 : 0.0)
                   : std::holds_alternative<int64_t>(a) ? static_cast<double>(std::get<int64_t>(a))
                                                        : std::get<double>(a);
        array scalar = std::holds_alternative<int64_t>(a) ? array(std::get<int64_t>(a), e->dtype) : array(v, e->dtype);
        inputs.push_back(scalar);
        strided_inputs.push_back(false);
        in_specs.push_back(spec_of(p, e->dtype, true, i));
      }
    }
  }
  // Then the outputs, and threadgroup memory.
  for (size_t i = 0; i < k.params.size(); ++i) {
    const msl::ProgramParam& p = k.params[i];
    const std::optional<ElementType> e = element_type(p.type);
    if (p.role == Role::WriteBuffer) {
      const LibraryArg& a = *bound[i];
      if (const OutputSpec* o = std::get_if<OutputSpec>(&a)) {
        size_t size = 1;
        for (int d : o->shape) {
          if (d < 0) throw bad("output '" + p.name + "' has a negative dimension.");
          size *= static_cast<size_t>(d);
        }
        if (e) {
          check_dtype(p, *e, o->dtype);
          check_size(p, *e, size);
        }
        check_rank(p, o->shape.size());
        out_shapes.push_back(o->shape);
        out_dtypes.push_back(o->dtype);
        from_input.push_back(-1);
      } else if (const array* arr = std::get_if<array>(&a)) {
        if (e) {
          check_dtype(p, *e, arr->dtype());
          check_size(p, *e, arr->size());
        }
        check_rank(p, arr->ndim());
        out_shapes.push_back(arr->shape());
        out_dtypes.push_back(arr->dtype());
        from_input.push_back(-2 - static_cast<int>(in_out_sources.size()));  // fixed up below
        in_out_sources.push_back(*arr);
      } else {
        throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") is written by the kernel: pass "
                         "(shape, dtype) for a fresh output or an array it starts from, not " + kind_of(a) + ".");
      }
      out_specs.push_back(spec_of(p, out_dtypes.back(), false, i));
    } else if (p.role == Role::Threadgroup) {
      std::optional<int64_t> bytes = integral(*bound[i]);
      if (!bytes || std::holds_alternative<bool>(*bound[i]) || *bytes < 0)
        throw wrong_type("parameter '" + p.name + "' (" + declared(p) + ") takes its size in bytes (an int >= 0), "
                         "as setThreadgroupMemoryLength does; got " + kind_of(*bound[i]) + ".");
      if (!p.array_dims.empty() && e) {
        std::optional<long> count = 1;
        for (const std::string& d : p.array_dims) {
          auto v = literal_dim(d);
          count = (count && v) ? std::optional<long>(*count * *v) : std::nullopt;
        }
        const int64_t need = count ? *count * static_cast<int64_t>(e->span * size_of(e->dtype)) : 0;
        if (count && *bytes < need)
          throw bad("parameter '" + p.name + "' (threadgroup " + p.type + " " + p.name + "[" + p.array_dims[0] +
                    "]...) needs " + std::to_string(need) + " bytes of threadgroup memory; the launch gives " +
                    std::to_string(*bytes) + ".");
      }
      tg_bytes.push_back(static_cast<unsigned>(*bytes));
    }
  }
  const size_t n_kernel_inputs = inputs.size();
  for (int& f : from_input)
    if (f <= -2) f = static_cast<int>(n_kernel_inputs) + (-2 - f);
  inputs.insert(inputs.end(), in_out_sources.begin(), in_out_sources.end());

  PreparedLaunch p = prepare_library_launch(*state_, in_specs, out_specs, tg_bytes, call.grid, call.threadgroup,
                                            call.dispatch, gpu, call.verbose, call.timeout);
  if (out_shapes.empty()) return {};  // nothing observable to compute
  p.output_from_input = std::move(from_input);
  p.strided_inputs = std::move(strided_inputs);
  auto prim = std::make_shared<CustomKernel>(stream, std::move(p));
  return array::make_arrays(out_shapes, out_dtypes, prim, inputs);
}
const msl::ProgramKernel& program_kernel(const LibraryKernel& k) { return *k.state().kernel; }

PreparedLaunch prepare_encoded_launch(const LibraryKernel& k, const std::vector<unsigned>& threadgroup_bytes,
                                      const Dims3& grid, const Dims3& threadgroup, Dispatch dispatch, bool gpu) {
  std::vector<msl::ParamSpec> in_specs, out_specs;
  const msl::ProgramKernel& pk = program_kernel(k);
  for (size_t i = 0; i < pk.params.size(); ++i) {
    const msl::ProgramParam& p = pk.params[i];
    if (p.role != Role::ReadBuffer && p.role != Role::ConstantValue && p.role != Role::WriteBuffer) continue;
    msl::ParamSpec s;
    s.name = p.name.empty() ? "buffer" + std::to_string(i) : p.name;
    const std::optional<ElementType> e = element_type(p.type);
    s.type = e ? dtype_info(e->dtype).msl_name : "uint8_t";
    s.is_scalar = p.role == Role::ConstantValue;
    (p.role == Role::WriteBuffer ? out_specs : in_specs).push_back(s);
  }
  return prepare_library_launch(k.state(), in_specs, out_specs, threadgroup_bytes, grid, threadgroup, dispatch, gpu,
                                /*verbose=*/false, std::nullopt);
}

}  // namespace alloy::fast

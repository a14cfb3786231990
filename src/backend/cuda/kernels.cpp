#include "backend/cuda/kernels.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "alloy/allocator.h"
#include "backend/cuda/aot_kernels.h"
#include "backend/cuda/fault.h"
#include "backend/cpu/strided.h"
#include "jit/cuda_compile.h"
#include "jit/embedded_headers.h"

namespace alloy::cuda {

const char* device_type_name(Dtype d) {
  switch (d) {
    case Dtype::bool_: return "bool";
    case Dtype::uint8: return "uint8_t";
    case Dtype::uint16: return "uint16_t";
    case Dtype::uint32: return "uint32_t";
    case Dtype::uint64: return "uint64_t";
    case Dtype::int8: return "int8_t";
    case Dtype::int16: return "int16_t";
    case Dtype::int32: return "int32_t";
    case Dtype::int64: return "int64_t";
    case Dtype::float16: return "__half";
    case Dtype::bfloat16: return "__nv_bfloat16";
    case Dtype::float32: return "float";
    case Dtype::float64: return "double";
    case Dtype::complex64: return "alloy::complex64_t";
  }
  return "float";
}

Dtype bits_dtype(Dtype d) {
  switch (size_of(d)) {
    case 1: return Dtype::uint8;
    case 2: return Dtype::uint16;
    case 4: return Dtype::uint32;
    default: return Dtype::uint64;
  }
}

namespace {

// The element functors written once for both backends (src/backend/common/),
// embedded into the library and handed to NVRTC under their source paths.
const char* const kCommonHeaders[] = {"math_shim.h",   "unary_ops.h",  "binary_ops.h",
                                      "ternary_ops.h", "reduce_ops.h", "scan_ops.h",
                                      "sort_ops.h"};

std::vector<std::pair<std::string, std::string>> common_headers() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* name : kCommonHeaders) {
    bool found = false;
    for (const auto& [embedded, text] : embedded_headers()) {
      if (embedded == name) {
        out.emplace_back(std::string("backend/common/") + name, std::string(text));
        found = true;
        break;
      }
    }
    if (!found) {
      throw std::runtime_error(std::string("[cuda kernels] the shared header ") + name +
                               " is not embedded in the library.");
    }
  }
  return out;
}

struct LoadedModule {
  cuda_driver::Module module;
  CUfunction function = nullptr;
};

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<std::string, std::unique_ptr<LoadedModule>>& modules() {
  static auto* m = new std::unordered_map<std::string, std::unique_ptr<LoadedModule>>();
  return *m;
}

std::string file_name_for(const std::string& key) {
  std::string f = "alloy_";
  for (char c : key) f += (c == '/' || c == ' ' || c == ',') ? '_' : c;
  return f + ".cu";
}

}  // namespace

jit::NvrtcOptions kernel_compile_options(const std::string& arch) {
  jit::NvrtcOptions opts;
  opts.arch = arch;
  opts.extra_headers = common_headers();
  // Every op module starts with the same includes: NVRTC's automatic
  // precompiled header skips their parse after the first compile.
  opts.use_pch = true;
  // Its notes when a later module's includes differ are not diagnostics.
  opts.extra_options.push_back("--diag-suppress=630");
  return opts;
}

CUfunction kernel(const std::string& family_key, const std::string& name, const SourceFn& make_source) {
  const std::string key = family_key + "/" + name;
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto& mods = modules();
  static unsigned loaded_in = 0;  // the context generation of the loaded modules
  if (loaded_in != context_generation()) {
    // A GPU fault destroyed the context they were loaded in.
    for (auto& [k, m] : mods) m->module.forget();
    mods.clear();
    loaded_in = context_generation();
  }
  auto it = mods.find(key);
  if (it != mods.end()) return it->second->function;
  static const jit::NvrtcOptions opts = kernel_compile_options(device_arch());
  std::string source = make_source(name);
  jit::Cache::Bytes image;
  // Fused chains (mx.compile) are generated per program: never ahead of time.
  const bool may_be_aot = family_key.rfind("fused/", 0) != 0;
  if (auto aot = may_be_aot ? aot_image(key, source, opts) : std::nullopt) {
    image = std::make_shared<const std::string>(std::move(aot->bytes));
  } else {
    try {
      image = jit::compile_cuda(source, file_name_for(key), opts);
    } catch (const jit::CompileError& e) {
      throw std::runtime_error("[cuda kernels] the kernel '" + key + "' failed to compile:\n" + e.log() +
                               "\n--- source ---\n" + source);
    } catch (const std::runtime_error& e) {
      // NVRTC or its headers missing: say why it was needed at all.
      throw std::runtime_error("[cuda kernels] the op kernel '" + key + "' for " + opts.arch +
                               " is not among the kernels compiled ahead of time (" + aot_status() +
                               "), and compiling it now failed: " + e.what());
    }
  }
  ensure_context();
  auto m = std::make_unique<LoadedModule>();
  m->module = cuda_driver::Module(image->data());
  m->function = m->module.function(name.c_str());
  CUfunction fn = m->function;
  mods.emplace(key, std::move(m));
  return fn;
}

array scratch(size_t n, Dtype d) {
  Buffer b = allocator(Device(Device::gpu)).malloc(std::max<size_t>(n, 1) * size_of(d));
  return array(std::make_shared<Data>(b), {static_cast<ShapeElem>(n)}, {1}, d);
}

int sm_count() {
  static const int n = [] {
    ensure_context();
    return cuda_driver::device_attribute(cuda_driver::kMultiprocessorCount);
  }();
  return n;
}

unsigned grid_blocks(int64_t work, unsigned block) {
  const int64_t max_blocks = int64_t(sm_count()) * 32;
  int64_t need = (work + block - 1) / block;
  if (need < 1) need = 1;
  return static_cast<unsigned>(need < max_blocks ? need : max_blocks);
}

template <int N>
StridedLayout<N> make_layout(const Shape& shape, const std::array<const Strides*, N>& strides, const char* op) {
  std::vector<Strides> st;
  for (const Strides* s : strides) st.push_back(*s);
  cpu::CollapsedLayout c = cpu::collapse_dims(shape, st);
  StridedLayout<N> L{};
  if (c.shape.empty()) {  // every dim has size 1: one element
    L.ndim = 1;
    L.shape[0] = 1;
    return L;
  }
  if (static_cast<int>(c.shape.size()) > kMaxDims) {
    throw std::invalid_argument(std::string("[") + op + "] the GPU kernels handle at most " +
                                std::to_string(kMaxDims) + " non-mergeable dimensions, got " +
                                std::to_string(c.shape.size()) + ".");
  }
  L.ndim = static_cast<int32_t>(c.shape.size());
  for (int d = 0; d < L.ndim; ++d) {
    L.shape[d] = static_cast<int32_t>(c.shape[d]);
    for (int k = 0; k < N; ++k) L.strides[k][d] = c.strides[k][d];
  }
  return L;
}

template <int N>
std::string strided_suffix(const StridedLayout<N>& layout, const std::vector<size_t>& spans) {
  bool small = true;
  size_t n = 1;
  for (int d = 0; d < layout.ndim; ++d) n *= static_cast<size_t>(layout.shape[d]);
  small = n < (size_t(1) << 31);
  for (size_t s : spans) small = small && s < (size_t(1) << 31);
  if (small && layout.ndim <= 3) return "s" + std::to_string(layout.ndim);
  return "sn";
}

template StridedLayout<1> make_layout<1>(const Shape&, const std::array<const Strides*, 1>&, const char*);
template StridedLayout<2> make_layout<2>(const Shape&, const std::array<const Strides*, 2>&, const char*);
template StridedLayout<3> make_layout<3>(const Shape&, const std::array<const Strides*, 3>&, const char*);
template StridedLayout<4> make_layout<4>(const Shape&, const std::array<const Strides*, 4>&, const char*);
template std::string strided_suffix<2>(const StridedLayout<2>&, const std::vector<size_t>&);
template std::string strided_suffix<3>(const StridedLayout<3>&, const std::vector<size_t>&);
template std::string strided_suffix<4>(const StridedLayout<4>&, const std::vector<size_t>&);

void allocate_row_contiguous(array& out) { out.set_data(allocator(Device(Device::gpu)).malloc(out.nbytes())); }

void allocate_like(array& out, const array& like) {
  if (like.flags().row_contiguous) {
    allocate_row_contiguous(out);
    return;
  }
  Buffer b = allocator(Device(Device::gpu)).malloc(like.data_size() * out.itemsize());
  out.set_data(std::make_shared<Data>(b), like.data_size(), like.strides(), like.flags());
}

}  // namespace alloy::cuda

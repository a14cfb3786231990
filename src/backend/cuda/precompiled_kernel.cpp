// GPU evaluation of precompiled_cuda_kernel: the user's image is loaded once
// per process (by its digest), then launched with MLX's argument order.
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "alloy/allocator.h"
#include "backend/cuda/custom_kernel.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/fault.h"
#include "backend/cuda/kernels.h"
#include "jit/digest.h"
#include "primitives/precompiled_kernel.h"

namespace alloy {

namespace {

// The function `name` of `image`, loaded on first use. Errors name the kernel.
cuda_driver::CUfunction load_function(const PrecompiledCudaKernel& k) {
  static std::mutex mutex;
  static auto* modules = new std::unordered_map<std::string, std::unique_ptr<cuda_driver::Module>>();
  const auto& l = k.launch();
  const std::string key = jit::digest_hex(*l.image) + "/" + l.name;
  std::lock_guard<std::mutex> lock(mutex);
  static unsigned loaded_in = 0;  // the context generation of the modules
  if (loaded_in != cuda::context_generation()) {
    for (auto& [k, m] : *modules) m->forget();  // died with the context a GPU fault destroyed
    modules->clear();
    loaded_in = cuda::context_generation();
  }
  auto it = modules->find(key);
  if (it == modules->end()) {
    cuda::ensure_context();
    auto m = std::make_unique<cuda_driver::Module>();
    try {
      *m = cuda_driver::Module(l.image->data());
    } catch (const std::exception& e) {
      throw std::runtime_error(k.label() + ": the driver cannot load compiled_source on this " +
                               cuda::device_arch() + " GPU (a cubin built for another architecture, or PTX newer "
                               "than the driver?): " + e.what());
    }
    it = modules->emplace(key, std::move(m)).first;
  }
  try {
    return it->second->function(l.name.c_str());
  } catch (const std::exception&) {
    throw std::runtime_error(k.label() + ": compiled_source has no kernel named '" + l.name +
                             "' (the name must be the extern \"C\" function's, or its mangled name).");
  }
}

}  // namespace

void PrecompiledCudaKernel::eval_gpu(const std::vector<array>& inputs_in, std::vector<array>& outputs) {
  const Launch& l = launch();
  cuda_driver::CUfunction fn = load_function(*this);
  cuda::CUstream cs = cuda::stream_for(stream());
  std::vector<array> inputs = inputs_in;
  if (l.ensure_row_contiguous) {
    for (array& in : inputs) in = cuda::row_contiguous(in, cs, "precompiled_cuda_kernel");
  }
  for (array& o : outputs) {
    o.set_data(allocator(Device(Device::gpu)).malloc(o.nbytes()));
    if (l.init_value && o.size() > 0) {
      cuda::FillLaunch fill(o.raw_data(), o.size(), static_cast<unsigned>(o.itemsize()),
                            cuda::fill_bits(*l.init_value, o.dtype()));
      const unsigned g[3] = {fill.blocks, 1, 1}, b[3] = {fill.block, 1, 1};
      cuda_driver::launch(fill.function, g, b, 0, cs, fill.args());
    }
  }
  // Argument storage: a device pointer per array, then each scalar as the
  // kernel declares it (bool: 1 byte, int: int32, float: float32).
  std::vector<uint64_t> slots;
  slots.reserve(inputs.size() + outputs.size() + l.scalars.size());
  for (const array& in : inputs) slots.push_back(reinterpret_cast<uint64_t>(in.raw_data()));
  for (const array& o : outputs) slots.push_back(reinterpret_cast<uint64_t>(o.raw_data()));
  for (const fast::ScalarArg& s : l.scalars) {
    uint64_t v = 0;
    if (const bool* b = std::get_if<bool>(&s)) std::memcpy(&v, b, sizeof(bool));
    else if (const int* i = std::get_if<int>(&s)) std::memcpy(&v, i, sizeof(int32_t));
    else std::memcpy(&v, &std::get<float>(s), sizeof(float));
    slots.push_back(v);
  }
  std::vector<void*> params(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) params[i] = &slots[i];
  params.push_back(nullptr);
  try {
    cuda_driver::launch(fn, l.blocks.data(), l.block.data(), l.shared_memory, cs, params.data());
  } catch (const std::exception& e) {
    throw std::runtime_error(label() + ": " + e.what());
  }
  cuda::note_pending(stream());
}

}  // namespace alloy

// The host API for C++ extensions (alloy/metal.h): libraries from .metal
// files through fast::metal_library, and an encoder that turns a kernel and
// its index-bound buffers into a prepared launch on the stream's backend.
#include "alloy/metal.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "backend/cpu/custom_kernel.h"
#include "backend/cuda/custom_kernel.h"
#include "backend/cuda/device.h"
#include "core/streams.h"
#include "fast/library_launch.h"
#include "msl/builtins.h"

namespace alloy::metal {

namespace {

std::string read_program(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument("[metal] cannot read the Metal library '" + path + "'.");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Metal's limit on setBytes.
constexpr size_t kMaxBytes = 4096;

}  // namespace

// ---- shared memory ---------------------------------------------------------

Buffer allocate_shared(size_t bytes, alloy::Device d) {
  if (d.type == alloy::Device::cpu) {
    void* p = std::calloc(bytes ? bytes : 1, 1);
    if (!p) throw std::bad_alloc();
    return Buffer{p, bytes, d};
  }
  cuda::ensure_context();
  cuda_driver::CUdeviceptr p = 0;
  constexpr unsigned kAttachGlobal = 1;  // CU_MEM_ATTACH_GLOBAL: any stream may use it
  cuda::check(cuda_driver::api().cuMemAllocManaged(&p, bytes ? bytes : 1, kAttachGlobal), "metal",
              "cuMemAllocManaged (a shared buffer)");
  std::memset(reinterpret_cast<void*>(p), 0, bytes);
  return Buffer{reinterpret_cast<void*>(p), bytes, d};
}

void free_shared(const Buffer& b) {
  if (!b.ptr) return;
  if (b.device.type == alloy::Device::cpu) {
    std::free(b.ptr);
    return;
  }
  cuda_driver::api().cuMemFree(reinterpret_cast<cuda_driver::CUdeviceptr>(b.ptr));
}

// ---- Device ------------------------------------------------------------------

Device& device(alloy::Device d) {
  static Device* cpu = new Device(alloy::Device(alloy::Device::cpu));  // never freed: lives with the process
  static Device* gpu = new Device(alloy::Device(alloy::Device::gpu));
  return d.type == alloy::Device::cpu ? *cpu : *gpu;
}

Library* Device::get_library(const std::string& name, const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = libraries_.find(name);
  if (it != libraries_.end()) return it->second.get();
  std::string file = path;
  if (std::filesystem::is_directory(path)) file = (std::filesystem::path(path) / (name + ".metal")).string();
  auto lib = std::make_unique<Library>(name, fast::metal_library(read_program(file)));
  return libraries_.emplace(name, std::move(lib)).first->second.get();
}

Kernel* Device::get_kernel(const std::string& name, const std::string& library_path) {
  const std::string lib_name = std::filesystem::path(library_path).stem().string() + "@" + library_path;
  return get_kernel(name, get_library(lib_name, library_path));
}

Kernel* Device::get_kernel(const std::string& name, Library* library) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Library*> search;
  if (library) {
    search.push_back(library);
  } else {
    for (auto& [n, l] : libraries_) search.push_back(l.get());
  }
  std::string known;
  for (Library* l : search) {
    const std::string key = l->name() + "\x1f" + name;
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second.get();
    for (const std::string& k : l->library().kernel_names()) {
      if (k == name) return kernels_.emplace(key, std::make_unique<Kernel>(l->library().kernel(name))).first->second.get();
      known += (known.empty() ? "'" : ", '") + k + "'";
    }
  }
  if (search.empty())
    throw std::invalid_argument("[metal] no library is loaded to find kernel '" + name +
                                "' in: pass the .metal file's path (get_kernel(name, path) or get_library).");
  throw std::invalid_argument("[metal] no kernel '" + name + "' in the loaded libraries; their kernels are " + known +
                              ".");
}

CommandEncoder& Device::get_command_encoder(int index) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = encoders_.find(index);
  if (it == encoders_.end()) it = encoders_.emplace(index, CommandEncoder(Stream(index, device_))).first;
  return it->second;
}

// ---- CommandEncoder ------------------------------------------------------------

struct CommandEncoder::State {
  Stream stream;
  const Kernel* kernel = nullptr;
  struct Binding {
    void* ptr = nullptr;               // a buffer on the stream's device
    std::vector<unsigned char> bytes;  // or bytes set by set_bytes
    bool is_bytes = false;
  };
  std::map<int, Binding> buffers;
  std::map<int, size_t> threadgroup;

  void dispatch(MTL::Size grid, MTL::Size group, fast::Dispatch how);
};

CommandEncoder::CommandEncoder(Stream s) : state_(std::make_shared<State>()) { state_->stream = s; }

void CommandEncoder::set_compute_pipeline_state(const Kernel* kernel) { state_->kernel = kernel; }

void CommandEncoder::set_input_array(const array& a, int index, int64_t offset) {
  state_->buffers[index] = {static_cast<char*>(a.raw_data()) + offset, {}, false};
}

void CommandEncoder::set_output_array(array& a, int index, int64_t offset) {
  state_->buffers[index] = {static_cast<char*>(a.raw_data()) + offset, {}, false};
}

void CommandEncoder::set_buffer(const Buffer& buffer, size_t offset, int index) {
  state_->buffers[index] = {static_cast<char*>(buffer.ptr) + offset, {}, false};
}

void CommandEncoder::set_bytes(const void* data, size_t size, int index) {
  if (size > kMaxBytes)
    throw std::invalid_argument("[metal] set_bytes of " + std::to_string(size) + " bytes at index " +
                                std::to_string(index) + ": Metal allows at most 4 KB; bind a buffer instead.");
  const auto* p = static_cast<const unsigned char*>(data);
  state_->buffers[index] = {nullptr, std::vector<unsigned char>(p, p + size), true};
}

void CommandEncoder::set_threadgroup_memory_length(size_t bytes, int index) { state_->threadgroup[index] = bytes; }

void CommandEncoder::dispatch_threads(MTL::Size grid, MTL::Size threadgroup) {
  state_->dispatch(grid, threadgroup, fast::Dispatch::Threads);
}

void CommandEncoder::dispatch_threadgroups(MTL::Size groups, MTL::Size threadgroup) {
  state_->dispatch(groups, threadgroup, fast::Dispatch::Threadgroups);
}

namespace {
// Metal asks a device buffer's offset to be a multiple of its element type's
// size (at most 16 bytes); a buffer bound off that boundary is an error there,
// and a CUDA kernel's vector access would fault on it. Said here, naming the
// parameter, instead. (Element types of structs are not known: not checked.)
void check_offset_alignment(const std::string& kernel, const msl::ProgramParam& p, const void* ptr) {
  const auto align = msl::metal_type_alignment(p.type);
  if (!align) return;
  const unsigned need = std::min(*align, 16u);
  const auto off = reinterpret_cast<std::uintptr_t>(ptr) % need;
  if (off == 0) return;
  throw std::invalid_argument("[metal] kernel '" + kernel + "': the buffer bound for parameter '" + p.name +
                              "' (" + p.type + ") starts " + std::to_string(off) + " bytes past a " +
                              std::to_string(need) + "-byte boundary; Metal requires a device buffer's offset "
                              "to be a multiple of its element type's size (" + std::to_string(need) + ").");
}
}  // namespace

void CommandEncoder::State::dispatch(MTL::Size grid, MTL::Size group, fast::Dispatch how) {
  if (!kernel) throw std::invalid_argument("[metal] dispatch before set_compute_pipeline_state.");
  const msl::ProgramKernel& k = fast::program_kernel(kernel->kernel());
  const bool gpu = stream.device.type == alloy::Device::gpu;
  using Role = msl::ProgramParam::Role;
  std::vector<void*> inputs, outputs;
  std::vector<unsigned> tg_bytes;
  std::vector<array> values;  // set_bytes values copied to the GPU, alive until the launch is issued
  bool wait = false;          // a value's copy reads host memory that dies here
  for (int pass = 0; pass < 2; ++pass) {  // reads first, then writes: the glue's order
    for (const msl::ProgramParam& p : k.params) {
      if (p.role == Role::Attribute) continue;
      if (p.role == Role::Threadgroup) {
        if (pass == 0) {
          auto it = threadgroup.find(p.index);
          tg_bytes.push_back(it == threadgroup.end() ? 0u : static_cast<unsigned>(it->second));
        }
        continue;
      }
      if (p.tensor_rank > 0)
        throw std::invalid_argument("[metal] kernel '" + k.name + "': parameter '" + p.name +
                                    "' is a tensor, which this host API cannot bind yet (MTLTensor); launch the "
                                    "kernel through mx.fast.metal_library on the CPU.");
      const bool write = p.role == Role::WriteBuffer;
      if (write != (pass == 1)) continue;
      auto it = buffers.find(p.index);
      if (it == buffers.end())
        throw std::invalid_argument("[metal] kernel '" + k.name + "': nothing is bound at [[buffer(" +
                                    std::to_string(p.index) + ")]] for parameter '" + p.name + "'.");
      State::Binding& b = it->second;
      void* ptr = b.ptr;
      if (b.is_bytes) {
        if (write)
          throw std::invalid_argument("[metal] kernel '" + k.name + "': parameter '" + p.name +
                                      "' is written by the kernel; bind a buffer, not bytes.");
        if (!gpu) {
          ptr = b.bytes.data();
        } else {
          Buffer host = allocator(alloy::Device(alloy::Device::cpu)).malloc(b.bytes.size());
          std::copy(b.bytes.begin(), b.bytes.end(), static_cast<unsigned char*>(host.ptr));
          array h(std::make_shared<Data>(host), {static_cast<int>(b.bytes.size())}, {1}, Dtype::uint8);
          values.push_back(inputs_on_device({h}, stream)[0]);
          ptr = values.back().raw_data();
          wait = wait || b.bytes.size() > 16;  // larger values are copied asynchronously from `host`
          values.push_back(h);
        }
      }
      if (!b.is_bytes) check_offset_alignment(k.name, p, ptr);
      (write ? outputs : inputs).push_back(ptr);
    }
  }
  const fast::Dims3 g{static_cast<int>(grid.width), static_cast<int>(grid.height), static_cast<int>(grid.depth)};
  const fast::Dims3 t{static_cast<int>(group.width), static_cast<int>(group.height), static_cast<int>(group.depth)};
  fast::PreparedLaunch launch = fast::prepare_encoded_launch(kernel->kernel(), tg_bytes, g, t, how, gpu);
  if (gpu) {
    cuda::run_encoded(launch, inputs, outputs, stream);
    if (wait) synchronize(stream);
  } else {
    cpu::run_encoded(launch, inputs, outputs);
  }
}

}  // namespace alloy::metal

// The host side of Metal for C++ extensions, as MLX's Metal backend offers
// it to a custom Primitive's eval_gpu: a device per stream, kernels from
// .metal files, and a command encoder that binds buffers and bytes by index
// and dispatches. Here it runs on both of Alloy's devices: a kernel
// dispatched from eval_cpu runs its C++ translation on the CPU, from
// eval_gpu its CUDA translation on the stream's CUDA stream. Both spellings
// work: MLX's (`set_input_array`, `dispatch_threads`) and metal-cpp's
// (`setBuffer`, `dispatchThreads`) that older MLX code uses.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "alloy/allocator.h"
#include "alloy/array.h"
#include "alloy/device.h"
#include "alloy/fast.h"
#include "alloy/metal_cpp/types.h"

namespace alloy::metal {

// A compiled .metal program (fast::metal_library underneath).
class Library {
 public:
  Library(std::string name, fast::MetalLibrary lib) : name_(std::move(name)), lib_(std::move(lib)) {}
  const std::string& name() const { return name_; }
  const fast::MetalLibrary& library() const { return lib_; }

 private:
  std::string name_;
  fast::MetalLibrary lib_;
};

// A kernel ready to dispatch: Metal's compute pipeline state.
class Kernel {
 public:
  explicit Kernel(fast::LibraryKernel k) : kernel_(std::move(k)) {}
  const fast::LibraryKernel& kernel() const { return kernel_; }
  const std::string& name() const { return kernel_.name(); }

 private:
  fast::LibraryKernel kernel_;
};

// Records a kernel and its bindings, then runs it at dispatch, in order with
// the other work of its stream. Bindings stay set across dispatches, as in
// Metal. A handle: copies share one encoder.
class CommandEncoder {
 public:
  explicit CommandEncoder(Stream s);

  // `encoder->setBuffer(...)` as metal-cpp code writes it.
  CommandEncoder* operator->() { return this; }

  void set_compute_pipeline_state(const Kernel* kernel);
  // The array's data (already evaluated, on the stream's device) at buffer
  // index `index`; `offset` in bytes past the array's first element.
  void set_input_array(const array& a, int index, int64_t offset = 0);
  void set_output_array(array& a, int index, int64_t offset = 0);
  // An allocation, `offset` bytes in (metal-cpp's setBuffer).
  void set_buffer(const Buffer& buffer, size_t offset, int index);
  // `size` bytes copied now (setBytes: at most 4 KB, as Metal allows).
  void set_bytes(const void* data, size_t size, int index);
  template <class T>
  void set_bytes(const T& value, int index) {
    set_bytes(&value, sizeof(T), index);
  }
  void set_threadgroup_memory_length(size_t bytes, int index);
  // dispatchThreads: `grid` counts threads; dispatchThreadgroups: threadgroups.
  void dispatch_threads(MTL::Size grid, MTL::Size threadgroup);
  void dispatch_threadgroups(MTL::Size groups, MTL::Size threadgroup);

  // metal-cpp's spellings.
  void setComputePipelineState(const Kernel* k) { set_compute_pipeline_state(k); }
  void setBuffer(const Buffer& b, size_t offset, int index) { set_buffer(b, offset, index); }
  void setBytes(const void* data, size_t size, int index) { set_bytes(data, size, index); }
  void setThreadgroupMemoryLength(size_t bytes, int index) { set_threadgroup_memory_length(bytes, index); }
  void dispatchThreads(MTL::Size grid, MTL::Size threadgroup) { dispatch_threads(grid, threadgroup); }
  void dispatchThreadgroups(MTL::Size groups, MTL::Size threadgroup) { dispatch_threadgroups(groups, threadgroup); }

  struct State;

 private:
  std::shared_ptr<State> state_;
};

// One device's kernels and encoders.
class Device {
 public:
  explicit Device(alloy::Device d) : device_(d) {}
  // The program in `path` (a .metal file, or a directory holding
  // `<name>.metal`), compiled once and kept under `name`.
  Library* get_library(const std::string& name, const std::string& path);
  // A kernel of `library` (or, without one, of any library loaded so far);
  // std::invalid_argument naming the kernels there are when none matches.
  Kernel* get_kernel(const std::string& name, Library* library = nullptr);
  // A kernel of the .metal file at `library_path` (loaded on first use).
  Kernel* get_kernel(const std::string& name, const std::string& library_path);
  // The encoder of stream `index` on this device.
  CommandEncoder& get_command_encoder(int index);

 private:
  alloy::Device device_;
  std::mutex mutex_;  // eval threads of several streams may ask at once
  std::map<std::string, std::unique_ptr<Library>> libraries_;
  std::map<std::string, std::unique_ptr<Kernel>> kernels_;  // by library name + kernel name
  std::map<int, CommandEncoder> encoders_;
};

// Memory the host and the device's kernels use at one address, as Metal's
// shared storage mode gives (metal-cpp's newBuffer): CUDA managed memory on
// the GPU, host memory on the CPU. Freed with free_shared.
Buffer allocate_shared(size_t bytes, alloy::Device d);
void free_shared(const Buffer& b);

// The device of a stream (or a device); one per device for the process.
Device& device(alloy::Device d);
inline Device& device(const Stream& s) { return device(s.device); }

}  // namespace alloy::metal

// A header-only subset of Apple's metal-cpp (Foundation and Metal), enough for
// host programs that compile a Metal library from source, make buffers with
// shared storage, and encode compute dispatches: they compile on Linux with
// their include lines changed to this one and run on Alloy's default device
// (an NVIDIA GPU, or the CPU). Objects follow metal-cpp's ownership: what a
// `new...`/`alloc` call returns is owned (release() it); what other calls
// return (commandBuffer(), computeCommandEncoder()) is autoreleased, here
// freed with its owner.
//
// Underneath: MTL::Library is fast::metal_library, a pipeline state one of
// its kernels, a shared buffer alloy::metal::allocate_shared (CUDA managed
// memory on the GPU), and a command buffer replays its dispatches through
// alloy::metal::CommandEncoder on the device's default stream at commit().
// Errors Metal reports through NS::Error** (a library that does not compile)
// are reported the same way; errors found at dispatch throw.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "alloy/alloy.h"
#include "alloy/metal_cpp/types.h"

namespace NS {

enum StringEncoding : UInteger { ASCIIStringEncoding = 1, UTF8StringEncoding = 4 };

class Object {
 public:
  virtual ~Object() = default;
  Object* retain() {
    refs_.fetch_add(1);
    return this;
  }
  void release() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }
  UInteger retainCount() const { return refs_.load(); }

 private:
  std::atomic<UInteger> refs_{1};
};

class String : public Object {
 public:
  explicit String(std::string s) : s_(std::move(s)) {}
  // Autoreleased in metal-cpp; owned by the pool of strings here (freed at exit).
  static String* string(const char* s, StringEncoding) {
    static std::vector<std::unique_ptr<String>>* pool = new std::vector<std::unique_ptr<String>>();
    pool->push_back(std::make_unique<String>(s ? s : ""));
    return pool->back().get();
  }
  const char* utf8String() const { return s_.c_str(); }
  const char* cString(StringEncoding) const { return s_.c_str(); }
  UInteger length() const { return s_.size(); }

 private:
  std::string s_;
};

class Error : public Object {
 public:
  explicit Error(std::string what) : what_(std::move(what)) {}
  String* localizedDescription() const { return String::string(what_.c_str(), UTF8StringEncoding); }

 private:
  std::string what_;
};

}  // namespace NS

namespace MTL {

enum ResourceOptions : NS::UInteger {
  ResourceCPUCacheModeDefaultCache = 0,
  ResourceStorageModeShared = 0,
  ResourceStorageModeManaged = 1 << 4,
  ResourceStorageModePrivate = 2 << 4,
};

enum CommandBufferStatus : NS::UInteger {
  CommandBufferStatusNotEnqueued = 0,
  CommandBufferStatusCommitted = 2,
  CommandBufferStatusCompleted = 4,
  CommandBufferStatusError = 5,
};

class Buffer : public NS::Object {
 public:
  explicit Buffer(alloy::Buffer b) : b_(b) {}
  ~Buffer() override { alloy::metal::free_shared(b_); }
  void* contents() const { return b_.ptr; }
  NS::UInteger length() const { return b_.size; }
  const alloy::Buffer& memory() const { return b_; }
  // Managed storage's hint; shared memory needs nothing.
  void didModifyRange(NS::UInteger, NS::UInteger) {}

 private:
  alloy::Buffer b_;
};

class Function : public NS::Object {
 public:
  explicit Function(alloy::fast::LibraryKernel k) : k_(std::move(k)) {}
  NS::String* name() const { return NS::String::string(k_.name().c_str(), NS::UTF8StringEncoding); }
  const alloy::fast::LibraryKernel& kernel() const { return k_; }

 private:
  alloy::fast::LibraryKernel k_;
};

class CompileOptions : public NS::Object {
 public:
  static CompileOptions* alloc() { return new CompileOptions(); }
  CompileOptions* init() { return this; }
  void setFastMathEnabled(bool on) { fast_math_ = on; }
  bool fastMathEnabled() const { return fast_math_; }

 private:
  bool fast_math_ = false;  // Metal's default is true; Alloy keeps exact math unless asked
};

class Library : public NS::Object {
 public:
  explicit Library(alloy::fast::MetalLibrary lib) : lib_(std::move(lib)) {}
  // nullptr when the library has no such kernel, as Metal.
  Function* newFunction(const NS::String* name) const {
    for (const std::string& k : lib_.kernel_names())
      if (k == name->utf8String()) return new Function(lib_.kernel(k));
    return nullptr;
  }
  const alloy::fast::MetalLibrary& library() const { return lib_; }

 private:
  alloy::fast::MetalLibrary lib_;
};

class ComputePipelineState : public NS::Object {
 public:
  explicit ComputePipelineState(alloy::fast::LibraryKernel k) : kernel_(std::move(k)) {}
  NS::UInteger maxTotalThreadsPerThreadgroup() const {
    int m = kernel_.kernel().max_total_threads_per_threadgroup();
    return m > 0 ? m : 1024;
  }
  NS::UInteger threadExecutionWidth() const { return 32; }
  const alloy::metal::Kernel* kernel() const { return &kernel_; }

 private:
  alloy::metal::Kernel kernel_;
};

class CommandBuffer;

class ComputeCommandEncoder : public NS::Object {
 public:
  explicit ComputeCommandEncoder(CommandBuffer* owner) : owner_(owner) {}
  void setComputePipelineState(const ComputePipelineState* p) { state_.pipeline = p; }
  void setBuffer(const Buffer* b, NS::UInteger offset, NS::UInteger index) {
    state_.bindings[index] = Binding{b, offset, {}};
  }
  void setBytes(const void* bytes, NS::UInteger length, NS::UInteger index) {
    const auto* p = static_cast<const unsigned char*>(bytes);
    state_.bindings[index] = Binding{nullptr, 0, std::vector<unsigned char>(p, p + length)};
  }
  void setThreadgroupMemoryLength(NS::UInteger length, NS::UInteger index) { state_.threadgroup[index] = length; }
  void dispatchThreads(Size grid, Size threadgroup) { record(grid, threadgroup, false); }
  void dispatchThreadgroups(Size groups, Size threadgroup) { record(groups, threadgroup, true); }
  void endEncoding() {}

  struct Binding {
    const Buffer* buffer;
    NS::UInteger offset;
    std::vector<unsigned char> bytes;
  };
  struct State {
    const ComputePipelineState* pipeline = nullptr;
    std::map<NS::UInteger, Binding> bindings;
    std::map<NS::UInteger, NS::UInteger> threadgroup;
  };
  struct Dispatch {
    State state;
    Size grid, threadgroup;
    bool groups;
  };
  const std::vector<Dispatch>& dispatches() const { return dispatches_; }

 private:
  void record(Size grid, Size tg, bool groups) { dispatches_.push_back({state_, grid, tg, groups}); }
  CommandBuffer* owner_;
  State state_;
  std::vector<Dispatch> dispatches_;
};

class CommandBuffer : public NS::Object {
 public:
  explicit CommandBuffer(alloy::Stream s) : stream_(s) {}
  ~CommandBuffer() override {
    for (ComputeCommandEncoder* e : encoders_) e->release();
  }
  // Autoreleased: lives as long as this command buffer.
  ComputeCommandEncoder* computeCommandEncoder() {
    encoders_.push_back(new ComputeCommandEncoder(this));
    return encoders_.back();
  }
  // Runs every recorded dispatch, in order, on the device's stream.
  void commit() {
    alloy::metal::CommandEncoder& enc = alloy::metal::device(stream_).get_command_encoder(stream_.index);
    for (ComputeCommandEncoder* e : encoders_) {
      for (const ComputeCommandEncoder::Dispatch& d : e->dispatches()) {
        enc.set_compute_pipeline_state(d.state.pipeline ? d.state.pipeline->kernel() : nullptr);
        for (const auto& [index, b] : d.state.bindings) {
          if (b.buffer) {
            enc.set_buffer(b.buffer->memory(), b.offset, static_cast<int>(index));
          } else {
            enc.set_bytes(b.bytes.data(), b.bytes.size(), static_cast<int>(index));
          }
        }
        for (const auto& [index, bytes] : d.state.threadgroup)
          enc.set_threadgroup_memory_length(bytes, static_cast<int>(index));
        if (d.groups)
          enc.dispatch_threadgroups(d.grid, d.threadgroup);
        else
          enc.dispatch_threads(d.grid, d.threadgroup);
      }
    }
    status_ = CommandBufferStatusCommitted;
  }
  void waitUntilCompleted() {
    alloy::synchronize(stream_);
    status_ = CommandBufferStatusCompleted;
  }
  CommandBufferStatus status() const { return status_; }

 private:
  alloy::Stream stream_;
  std::vector<ComputeCommandEncoder*> encoders_;
  CommandBufferStatus status_ = CommandBufferStatusNotEnqueued;
};

class CommandQueue : public NS::Object {
 public:
  explicit CommandQueue(alloy::Stream s) : stream_(s) {}
  ~CommandQueue() override {
    for (CommandBuffer* b : buffers_) b->release();
  }
  // Autoreleased: lives as long as this queue.
  CommandBuffer* commandBuffer() {
    buffers_.push_back(new CommandBuffer(stream_));
    return buffers_.back();
  }

 private:
  alloy::Stream stream_;
  std::vector<CommandBuffer*> buffers_;
};

class Device : public NS::Object {
 public:
  explicit Device(alloy::Device d) : device_(d) {}
  NS::String* name() const {
    return NS::String::string(device_.type == alloy::Device::gpu ? "Alloy GPU (CUDA)" : "Alloy CPU",
                              NS::UTF8StringEncoding);
  }
  alloy::Device device() const { return device_; }

  Buffer* newBuffer(NS::UInteger length, ResourceOptions) const {
    return new Buffer(alloy::metal::allocate_shared(length, device_));
  }
  // A buffer holding a copy of `length` bytes at `pointer`.
  Buffer* newBuffer(const void* pointer, NS::UInteger length, ResourceOptions options) const {
    Buffer* b = newBuffer(length, options);
    std::memcpy(b->contents(), pointer, length);
    return b;
  }
  Library* newLibrary(const NS::String* source, const CompileOptions* options, NS::Error** error) const {
    try {
      return new Library(alloy::fast::metal_library(source->utf8String(), "",
                                                    options && options->fastMathEnabled() ? "fast" : "safe"));
    } catch (const std::exception& e) {
      if (error) *error = new NS::Error(e.what());
      return nullptr;
    }
  }
  // The app's default library: the .metal file $ALLOY_METAL_DEFAULT_LIBRARY
  // names, else default.metal beside the executable (where Xcode would put
  // default.metallib). nullptr when there is none, as Metal.
  Library* newDefaultLibrary() const {
    std::string path;
    if (const char* e = std::getenv("ALLOY_METAL_DEFAULT_LIBRARY")) {
      path = e;
    } else {
      char exe[4096];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
      if (n <= 0) return nullptr;
      exe[n] = 0;
      path = std::string(exe);
      path = path.substr(0, path.rfind('/') + 1) + "default.metal";
    }
    std::ifstream f(path);
    if (!f) return nullptr;
    std::stringstream s;
    s << f.rdbuf();
    return newLibrary(NS::String::string(s.str().c_str(), NS::UTF8StringEncoding), nullptr, nullptr);
  }
  ComputePipelineState* newComputePipelineState(const Function* function, NS::Error** error) const {
    if (!function) {
      if (error) *error = new NS::Error("newComputePipelineState: no function");
      return nullptr;
    }
    return new ComputePipelineState(function->kernel());
  }
  CommandQueue* newCommandQueue() const { return new CommandQueue(alloy::default_stream(device_)); }

 private:
  alloy::Device device_;
};

// Alloy's default device (the GPU when there is one).
inline Device* CreateSystemDefaultDevice() { return new Device(alloy::default_device()); }

}  // namespace MTL

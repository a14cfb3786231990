// Memory: an allocator per device behind one interface, with the counters
// mx.get_active_memory / get_peak_memory / get_cache_memory report.
#pragma once

#include <cstddef>
#include <new>
#include <string>

#include "alloy/device.h"

namespace alloy {

// Buffer::stream when no stream's queued work uses the memory, and when
// several streams' may.
inline constexpr int kNoStream = -1;
inline constexpr int kManyStreams = -2;

struct Buffer {
  void* ptr = nullptr;
  size_t size = 0;
  Device device;
  // GPU memory: the CUDA context it was allocated in (a GPU fault rebuilds
  // the context, and memory of older ones is gone).
  unsigned generation = 0;
  // GPU memory: the stream (its index) whose work writes it. Work on another
  // stream that reads it, or gets the block after it is freed, is first
  // ordered after that stream's (backend/cuda/allocator.cpp).
  int stream = kNoStream;
  // A second stream already ordered after the writer, which reads it too
  // (kManyStreams: more than one).
  int also_read_on = kNoStream;
};

// An allocation the device cannot give: a std::bad_alloc (Python's
// MemoryError) that says how much was asked of which device, and what the
// allocator held then. MLX says "[malloc] Unable to allocate N bytes." (or
// crashes, on its CPU backend, for a 4 TB request).
class OutOfMemory : public std::bad_alloc {
 public:
  OutOfMemory(size_t bytes, Device device, size_t active_bytes);
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Buffer malloc(size_t size) = 0;
  // MLX's older name for malloc (C++ extensions written against it call it).
  Buffer malloc_or_wait(size_t size) { return malloc(size); }
  virtual void free(Buffer b) = 0;
  virtual size_t active_memory() const = 0;
  virtual size_t peak_memory() const = 0;
  virtual void reset_peak_memory() = 0;
  virtual size_t cache_memory() const { return 0; }
  virtual void clear_cache() {}
  // Keeps freed blocks held for reuse under `bytes` from now on.
  virtual void set_cache_limit(size_t bytes) {}
  // Above `bytes` of active memory, an allocation first gives the cache back.
  virtual void set_memory_limit(size_t bytes) {}
};

Allocator& allocator(Device d);
// The allocator of the device whose primitive this thread is evaluating
// (a custom Primitive's eval_gpu gets GPU memory), else the default device's.
Allocator& allocator();

size_t get_active_memory();
size_t get_peak_memory();
void reset_peak_memory();
size_t get_cache_memory();
void clear_cache();

// MLX's limits; each setter returns the previous value. The memory limit
// defaults to the GPU's memory (the machine's RAM without a GPU) and the cache
// limit to the memory limit. The wired limit matters only to macOS's unified
// memory: it is kept and reported, with no effect here (as MLX off macOS).
size_t get_memory_limit();
size_t set_memory_limit(size_t bytes);
size_t set_cache_limit(size_t bytes);
size_t set_wired_limit(size_t bytes);

}  // namespace alloy

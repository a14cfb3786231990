// Memory: an allocator per device behind one interface, with the counters
// mx.get_active_memory / get_peak_memory / get_cache_memory report.
#pragma once

#include <cstddef>

#include "alloy/device.h"

namespace alloy {

struct Buffer {
  void* ptr = nullptr;
  size_t size = 0;
  Device device;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Buffer malloc(size_t size) = 0;
  virtual void free(Buffer b) = 0;
  virtual size_t active_memory() const = 0;
  virtual size_t peak_memory() const = 0;
  virtual void reset_peak_memory() = 0;
  virtual size_t cache_memory() const { return 0; }
  virtual void clear_cache() {}
};

Allocator& allocator(Device d);

size_t get_active_memory();
size_t get_peak_memory();
void reset_peak_memory();
size_t get_cache_memory();
void clear_cache();

}  // namespace alloy

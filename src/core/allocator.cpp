#include "alloy/allocator.h"

#include <stdexcept>

namespace alloy {

Allocator& cpu_allocator();

namespace {
Allocator* gpu_allocator_ptr = nullptr;
}

void register_allocator(Device::DeviceType t, Allocator* a) {
  if (t == Device::gpu) gpu_allocator_ptr = a;
}

Allocator& allocator(Device d) {
  if (d.type == Device::cpu) return cpu_allocator();
  if (!gpu_allocator_ptr) {
    throw std::runtime_error("[allocator] no GPU allocator is available.");
  }
  return *gpu_allocator_ptr;
}

size_t get_active_memory() {
  return cpu_allocator().active_memory() + (gpu_allocator_ptr ? gpu_allocator_ptr->active_memory() : 0);
}
size_t get_peak_memory() {
  return cpu_allocator().peak_memory() + (gpu_allocator_ptr ? gpu_allocator_ptr->peak_memory() : 0);
}
void reset_peak_memory() {
  cpu_allocator().reset_peak_memory();
  if (gpu_allocator_ptr) gpu_allocator_ptr->reset_peak_memory();
}
size_t get_cache_memory() { return gpu_allocator_ptr ? gpu_allocator_ptr->cache_memory() : 0; }
void clear_cache() {
  if (gpu_allocator_ptr) gpu_allocator_ptr->clear_cache();
}

}  // namespace alloy

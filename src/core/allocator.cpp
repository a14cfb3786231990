#include "alloy/allocator.h"

#include <stdexcept>

namespace alloy {

// Provided by the backends.
Allocator& cpu_allocator();
Allocator* gpu_allocator();  // null when no GPU can be used

Allocator& allocator(Device d) {
  if (d.type == Device::cpu) return cpu_allocator();
  Allocator* g = gpu_allocator();
  if (!g) throw std::runtime_error("[allocator] no GPU is available.");
  return *g;
}

namespace {
template <typename F>
size_t both(F f) {
  Allocator* g = gpu_allocator();
  return f(cpu_allocator()) + (g ? f(*g) : 0);
}
}  // namespace

size_t get_active_memory() { return both([](Allocator& a) { return a.active_memory(); }); }
size_t get_peak_memory() { return both([](Allocator& a) { return a.peak_memory(); }); }
void reset_peak_memory() {
  cpu_allocator().reset_peak_memory();
  if (Allocator* g = gpu_allocator()) g->reset_peak_memory();
}
size_t get_cache_memory() { return both([](Allocator& a) { return a.cache_memory(); }); }
void clear_cache() {
  if (Allocator* g = gpu_allocator()) g->clear_cache();
}

}  // namespace alloy

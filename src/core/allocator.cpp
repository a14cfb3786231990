#include "alloy/allocator.h"
#include "core/streams.h"

#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <unistd.h>

#include "core/gpu_availability.h"

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

Allocator& allocator() {
  const Device* d = evaluating_device();
  return allocator(d ? *d : default_device());
}

namespace {
std::string human_bytes(size_t bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return text;
}
}  // namespace

OutOfMemory::OutOfMemory(size_t bytes, Device device, size_t active_bytes)
    : message_("[malloc] Unable to allocate " + std::to_string(bytes) + " bytes (" + human_bytes(bytes) + ") on the " +
               (device.type == Device::cpu ? "CPU" : "GPU") + "; " + human_bytes(active_bytes) +
               " were in use by arrays then.") {}

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
  cpu_allocator().clear_cache();
  if (Allocator* g = gpu_allocator()) g->clear_cache();
}

namespace {
struct Limits {
  size_t memory, cache, wired = 0;
};
std::mutex& limits_mutex() {
  static std::mutex m;
  return m;
}
Limits& limits() {
  static Limits l = [] {
    size_t total = 0;
    if (gpu_allocator()) {
      total = gpu_total_memory();
    } else {
      total = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
    }
    return Limits{total, total};
  }();
  return l;
}
}  // namespace

size_t get_memory_limit() {
  std::lock_guard<std::mutex> lock(limits_mutex());
  return limits().memory;
}
size_t set_memory_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(limits_mutex());
  size_t previous = limits().memory;
  limits().memory = bytes;
  cpu_allocator().set_memory_limit(bytes);
  if (Allocator* g = gpu_allocator()) g->set_memory_limit(bytes);
  return previous;
}
size_t set_cache_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(limits_mutex());
  size_t previous = limits().cache;
  limits().cache = bytes;
  cpu_allocator().set_cache_limit(bytes);
  if (Allocator* g = gpu_allocator()) g->set_cache_limit(bytes);
  return previous;
}
size_t set_wired_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(limits_mutex());
  size_t previous = limits().wired;
  limits().wired = bytes;
  return previous;
}

}  // namespace alloy

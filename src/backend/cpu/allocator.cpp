// Host memory: aligned malloc with the counters mx.get_active_memory reports.
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "alloy/allocator.h"
#include "backend/common/guard_zone.h"

namespace alloy {
namespace {

class CpuAllocator final : public Allocator {
 public:
  Buffer malloc(size_t size) override {
    // 64-byte alignment: cache lines, and vector loads in JIT kernels.
    size_t rounded = (size + 63) / 64 * 64;
    size_t guard = guard_zone_bytes(rounded);
    void* base = rounded == 0 ? nullptr : std::aligned_alloc(64, rounded + 2 * guard);
    if (rounded != 0 && base == nullptr) {
      throw std::bad_alloc();
    }
    void* p = base ? static_cast<char*>(base) + guard : nullptr;
    size_t now = active_.fetch_add(rounded) + rounded;
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return Buffer{p, rounded, Device(Device::cpu, 0)};
  }
  void free(Buffer b) override {
    if (!b.ptr) return;
    std::free(static_cast<char*>(b.ptr) - guard_zone_bytes(b.size));
    active_.fetch_sub(b.size);
  }
  size_t active_memory() const override { return active_.load(); }
  size_t peak_memory() const override { return peak_.load(); }
  void reset_peak_memory() override { peak_.store(active_.load()); }

 private:
  std::atomic<size_t> active_{0};
  std::atomic<size_t> peak_{0};
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator* a = new CpuAllocator();  // outlives static arrays at exit
  return *a;
}

}  // namespace alloy

// Host memory: aligned malloc with the counters mx.get_active_memory reports.
#include <atomic>
#include <cstdlib>
#include <new>

#include <sys/mman.h>
#include <string>

#include "alloy/allocator.h"
#include "backend/common/guard_zone.h"

namespace alloy {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kHugeFrom = size_t(4) << 20;

class CpuAllocator final : public Allocator {
 public:
  Buffer malloc(size_t size) override {
    // 64-byte alignment: cache lines, and vector loads in JIT kernels.
    size_t rounded = (size + 63) / 64 * 64;
    size_t guard = guard_zone_bytes(rounded);
    void* base = nullptr;
    if (rounded >= kHugeFrom) {
      // Large arrays on transparent huge pages where the system allows it
      // (THP "madvise" mode, the usual default): a fresh 256 MB output then
      // takes 128 page faults instead of 65,536, which otherwise cost more
      // than the op itself. numpy does the same.
      const size_t total = (rounded + 2 * guard + kHugePage - 1) / kHugePage * kHugePage;
      base = std::aligned_alloc(kHugePage, total);
      if (base) ::madvise(base, total, MADV_HUGEPAGE);  // advice only: failure changes nothing
    } else if (rounded != 0) {
      base = std::aligned_alloc(64, rounded + 2 * guard);
    }
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

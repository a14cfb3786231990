// Host memory: aligned malloc with the counters mx.get_active_memory reports,
// and a cache of large freed blocks.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "alloy/allocator.h"
#include "backend/common/guard_zone.h"

namespace alloy {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kHugeFrom = size_t(4) << 20;

// Blocks of 4 MB and more freed by arrays are kept for the next allocation
// of the same size, up to a cache limit (mx.set_cache_limit; by default an
// eighth of physical memory, at most 4 GB): their pages are already mapped,
// so a loop that makes and drops same-size arrays does not fault and zero
// fresh pages on every op (measured: an uncompiled chain of 10 ops over 64M
// floats, one 256 MB output per op). Smaller blocks go back to malloc.
class CpuAllocator final : public Allocator {
 public:
  Buffer malloc(size_t size) override {
    // 64-byte alignment: cache lines, and vector loads in JIT kernels.
    size_t rounded = (size + 63) / 64 * 64;
    size_t guard = guard_zone_bytes(rounded);
    void* base = nullptr;
    if (rounded >= kHugeFrom) base = take_cached(rounded);
    if (!base && rounded >= kHugeFrom) {
      // Large arrays on transparent huge pages where the system allows it
      // (THP "madvise" mode, the usual default): a fresh 256 MB output then
      // takes 128 page faults instead of 65,536, which otherwise cost more
      // than the op itself. numpy does the same.
      const size_t total = (rounded + 2 * guard + kHugePage - 1) / kHugePage * kHugePage;
      base = std::aligned_alloc(kHugePage, total);
      if (!base && release_cache()) base = std::aligned_alloc(kHugePage, total);
      if (base) ::madvise(base, total, MADV_HUGEPAGE);  // advice only: failure changes nothing
    } else if (!base && rounded != 0) {
      base = std::aligned_alloc(64, rounded + 2 * guard);
    }
    if (rounded != 0 && base == nullptr) throw OutOfMemory(size, Device(Device::cpu, 0), active_.load());
    void* p = base ? static_cast<char*>(base) + guard : nullptr;
    size_t now = active_.fetch_add(rounded) + rounded;
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return Buffer{p, rounded, Device(Device::cpu, 0)};
  }
  void free(Buffer b) override {
    if (!b.ptr) return;
    void* base = static_cast<char*>(b.ptr) - guard_zone_bytes(b.size);
    active_.fetch_sub(b.size);
    if (b.size >= kHugeFrom && keep_cached(base, b.size)) return;
    std::free(base);
  }
  size_t active_memory() const override { return active_.load(); }
  size_t peak_memory() const override { return peak_.load(); }
  void reset_peak_memory() override { peak_.store(active_.load()); }
  size_t cache_memory() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  void clear_cache() override { release_cache(); }
  void set_cache_limit(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_limit_ = bytes;
    trim_locked(cache_limit_);
  }
  void set_memory_limit(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_limit_ = bytes;
  }

 private:
  void* take_cached(size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* base = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    return base;
  }
  bool keep_cached(void* base, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Over the memory limit the block goes back to the system instead.
    if (cached_ + size > cache_limit_ || active_.load() + cached_ + size > memory_limit_) return false;
    free_[size].push_back(base);
    cached_ += size;
    return true;
  }
  // Frees every cached block; true when there was one.
  bool release_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool any = cached_ > 0;
    trim_locked(0);
    return any;
  }
  // Frees cached blocks, largest first, until at most `limit` bytes remain.
  void trim_locked(size_t limit) {
    for (auto it = free_.rbegin(); it != free_.rend() && cached_ > limit; ++it) {
      auto& blocks = it->second;
      while (!blocks.empty() && cached_ > limit) {
        std::free(blocks.back());
        blocks.pop_back();
        cached_ -= it->first;
      }
    }
  }
  static size_t default_cache_limit() {
    const size_t physical = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
    return std::min<size_t>(physical / 8, size_t(4) << 30);
  }

  std::atomic<size_t> active_{0};
  std::atomic<size_t> peak_{0};
  mutable std::mutex mutex_;
  std::map<size_t, std::vector<void*>> free_;  // size -> cached blocks (their base addresses)
  size_t cached_ = 0;
  size_t cache_limit_ = default_cache_limit(), memory_limit_ = SIZE_MAX;
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator* a = new CpuAllocator();  // outlives static arrays at exit
  return *a;
}

}  // namespace alloy

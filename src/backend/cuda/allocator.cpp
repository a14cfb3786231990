// GPU memory: a caching allocator over cuMemAlloc. Freed blocks go to size
// buckets and are reused by later allocations of the same bucket, so steady
// workloads never call the driver. A block freed on the host may still be
// read or written by kernels queued before the free, so reuse is ordered:
// - on the same stream, by the stream itself; whatever fills a block must be
//   queued on that stream too (cuda::upload), never a synchronous copy
//   outside it: our streams are non-blocking, and the queued kernels would
//   overwrite it (tests/python/test_gpu_buffer_reuse.py);
// - on another stream, by a wait queued there for the stream (or streams)
//   that last used the block (Buffer::stream, cuda::order_after). Blocks of
//   the asking stream are preferred, so that costs nothing in steady state.
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "alloy/allocator.h"
#include "backend/common/guard_zone.h"
#include "backend/cuda/device.h"
#include "backend/cuda/fault.h"
#include "backend/cuda/graph_eval.h"
#include "core/streams.h"

namespace alloy {
namespace {

size_t bucket_size(size_t n) {
  if (n <= 512) return 512;
  if (n <= (size_t(1) << 20)) {  // powers of two up to 1 MiB
    size_t b = 512;
    while (b < n) b <<= 1;
    return b;
  }
  constexpr size_t kMiB = size_t(1) << 20;  // then whole MiBs
  return (n + kMiB - 1) / kMiB * kMiB;
}

// The GPU stream whose work a new block serves: the primitive's being
// evaluated on this thread, else null (unknown: any stream may use it).
const Stream* asking_stream() {
  const Stream* s = evaluating_stream();
  return s && s->device.type == Device::gpu ? s : nullptr;
}

class CudaAllocator final : public Allocator {
 public:
  Buffer malloc(size_t size) override {
    size_t b = bucket_size(size);
    const Stream* asker = asking_stream();
    const int stream = asker ? asker->index : kManyStreams;
    std::lock_guard<std::mutex> lock(mutex_);
    forget_old_context_locked();
    void* p = nullptr;
    auto it = free_.find(b);
    if (it != free_.end() && !it->second.empty()) p = take_locked(it->second, asker);
    if (p) {
      cached_ -= b;
    } else {
      cuda::ensure_context();
      // Over the memory limit, hand the cache back before asking for more.
      if (active_ + cached_ + b > memory_limit_ && cached_ > 0) release_cache_locked();
      cuda_driver::CUdeviceptr d = 0;
      const size_t guard = guard_zone_bytes(b);
      auto r = cuda_driver::api().cuMemAlloc(&d, b + 2 * guard);
      if (r != cuda_driver::CUDA_SUCCESS) {
        release_cache_locked();  // give the cache back and try once more
        r = cuda_driver::api().cuMemAlloc(&d, b + 2 * guard);
        // Out of memory is bad_alloc; anything else (a lost context) says what it is.
        if (r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */) throw OutOfMemory(b, Device(Device::gpu, 0), active_);
        if (r != cuda_driver::CUDA_SUCCESS) cuda::check(r, "gpu allocator", "cuMemAlloc");
      }
      p = reinterpret_cast<void*>(d + guard);
    }
    active_ += b;
    if (active_ > peak_) peak_ = active_;
    return Buffer{p, b, Device(Device::gpu, 0), generation_, stream};
  }

  void free(Buffer b) override {
    if (!b.ptr) return;
    if (cuda::t_capture_stream && cuda::defer_free_while_capturing(b)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    forget_old_context_locked();
    active_ -= b.size;
    if (b.generation != generation_) return;  // it died with its context
    // Queued work of every stream that read it may still use it.
    free_[b.size].push_back({b.ptr, b.also_read_on == kNoStream ? b.stream : kManyStreams});
    cached_ += b.size;
    if (cached_ > cache_limit_) trim_cache_locked(cache_limit_);
  }

  void set_cache_limit(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_limit_ = bytes;
    if (cached_ > cache_limit_) trim_cache_locked(cache_limit_);
  }
  void set_memory_limit(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_limit_ = bytes;
  }

  size_t active_memory() const override { return active_; }
  size_t peak_memory() const override { return peak_; }
  void reset_peak_memory() override { peak_ = active_; }
  size_t cache_memory() const override { return cached_; }
  void clear_cache() override {
    std::lock_guard<std::mutex> lock(mutex_);
    release_cache_locked();
  }

 private:
  struct FreeBlock {
    void* ptr;
    int stream;  // the stream whose queued work may still use it (kManyStreams: several)
  };

  // A block of `blocks` for work on `asker` (null: unknown), ordered after
  // the work of other streams that may still use it. With one stream this
  // is the last block freed, as before; with several, a recent block of the
  // same stream (or of none) is preferred, and taking another's queues a wait.
  // Null when none may be taken.
  static void* take_locked(std::vector<FreeBlock>& blocks, const Stream* asker) {
    size_t pick = blocks.size() - 1;
    if (cuda::several_streams()) {
      // Already ordered for the asker: unused blocks, and its own (an unknown
      // asker owns none).
      auto ordered = [asker](int last_user) { return last_user == kNoStream || (asker && last_user == asker->index); };
      constexpr size_t kLook = 16;  // how far back to look for one of ours
      for (size_t i = blocks.size(), seen = 0; i-- > 0 && seen < kLook; ++seen) {
        if (ordered(blocks[i].stream)) {
          pick = i;
          break;
        }
      }
      const int last_user = blocks[pick].stream;
      if (!ordered(last_user)) {
        // A tape being recorded on this thread (graph_eval.cpp) cannot wait
        // for another stream's work queued since its recording began (its
        // launch would overwrite a block that work still reads: three
        // threads' deep chains under load, on an H100): a new block.
        if (cuda::t_capture_stream) return nullptr;
        // Without a stream to queue the wait on, the host waits.
        if (asker) {
          cuda::order_after(*asker, last_user);
        } else {
          cuda::synchronize_all();
        }
      }
    }
    void* p = blocks[pick].ptr;
    blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(pick));
    return p;
  }

  // After a GPU fault rebuilt the context, the cached blocks are gone with
  // the old one: forget them (cuMemFree would only fail).
  void forget_old_context_locked() {
    const unsigned now = cuda::context_generation();
    if (now == generation_) return;
    free_.clear();
    cached_ = 0;
    generation_ = now;
  }

  void release_cache_locked() {
    trim_cache_locked(0);
    free_.clear();
  }

  // Frees cached blocks, largest first, until at most `limit` bytes remain.
  void trim_cache_locked(size_t limit) {
    cuda::synchronize_all();  // blocks may still be read by queued work
    for (auto it = free_.rbegin(); it != free_.rend() && cached_ > limit; ++it) {
      auto& ptrs = it->second;
      while (!ptrs.empty() && cached_ > limit) {
        cuda_driver::api().cuMemFree(reinterpret_cast<cuda_driver::CUdeviceptr>(ptrs.back().ptr) -
                                     guard_zone_bytes(it->first));
        ptrs.pop_back();
        cached_ -= it->first;
      }
    }
  }

  std::mutex mutex_;
  std::map<size_t, std::vector<FreeBlock>> free_;
  unsigned generation_ = 0;  // the context the cached blocks belong to
  size_t active_ = 0, peak_ = 0, cached_ = 0;
  size_t cache_limit_ = SIZE_MAX, memory_limit_ = SIZE_MAX;
};

}  // namespace

Allocator* gpu_allocator() {
  if (!cuda_driver::is_available()) return nullptr;
  static CudaAllocator* a = new CudaAllocator();  // outlives static arrays at exit
  return a;
}

}  // namespace alloy

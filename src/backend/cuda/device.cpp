#include "backend/cuda/device.h"
#include "backend/cuda/graph_eval.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "alloy/allocator.h"
#include "backend/cuda/cublas.h"
#include "backend/cuda/fault.h"
#include "core/gpu_availability.h"
#include "jit/nvrtc.h"

namespace alloy {

namespace {

// cuBLAS (and the cuBLASLt it pulls in) takes about 60 ms to load; on a
// thread of its own, started by the first use of the GPU, it overlaps the
// context's creation, which takes longer, so a program's first matmul does
// not wait for it. Once the context exists the thread also makes cuBLAS's
// handle (cublas.cpp's prepare_handle). A GPU fault's context reset waits
// for it (wait_idle).
// CPU-only programs never start it. The thread is joined before the process
// tears anything down (Python's atexit, else this static's destructor): a
// program that ended while cuBLASLt's initialisers still ran inside dlopen
// crashed (SIGSEGV after its last line, H200).
class CublasPrefetch {
 public:
  void start() {
    std::call_once(started_, [this] {
      std::lock_guard<std::mutex> lock(mutex_);
      std::lock_guard<std::mutex> done_lock(done_mutex_);  // until running_ and thread_id_ are set
      running_ = true;
      // prepare_handle's ensure_context waits for the main thread's context
      // (make_current holds its mutex while creating it).
      thread_ = std::thread([this] {
        if (cuda::cublas::available()) cuda::cublas::prepare_handle();
        std::lock_guard<std::mutex> lock(done_mutex_);
        running_ = false;
        done_.notify_all();
      });
      thread_id_ = thread_.get_id();
    });
  }
  void join() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (thread_.joinable()) thread_.join();
  }
  // Waits until the thread's work is over, for at most `limit`; at once on
  // the thread itself. Returns whether it is over.
  bool wait_idle(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(done_mutex_);
    if (std::this_thread::get_id() == thread_id_) return true;
    return done_.wait_for(lock, limit, [this] { return !running_; });
  }
  ~CublasPrefetch() { join(); }

 private:
  std::once_flag started_;
  std::mutex mutex_;
  std::thread thread_;
  std::mutex done_mutex_;
  std::condition_variable done_;
  bool running_ = false;       // under done_mutex_
  std::thread::id thread_id_;  // under done_mutex_
};

CublasPrefetch& cublas_prefetch() {
  static CublasPrefetch p;
  return p;
}

}  // namespace

bool gpu_is_available() { return cuda_driver::is_available(); }
void gpu_finish_background_loads() { cublas_prefetch().join(); }

namespace cuda {
bool wait_for_background_loads(std::chrono::milliseconds limit) { return cublas_prefetch().wait_idle(limit); }
}  // namespace cuda
const std::string& gpu_arch() { return cuda::device_arch(); }
const std::string& gpu_kernel_arch() { return cuda::kernel_arch(); }
std::string gpu_name() { return cuda_driver::device_name(0); }
size_t gpu_total_memory() { return cuda_driver::device_total_memory(0); }
std::string gpu_unavailable_reason() {
  return cuda_driver::is_available() ? std::string() : cuda_driver::unavailable_reason();
}

// CPU streams run their work inside eval: nothing is ever left to wait for.
void synchronize(StreamOrDevice s) {
  Stream stream = to_stream(s);
  if (stream.device.type == Device::gpu) cuda::synchronize(stream);
}

namespace cuda {
namespace {
// Work queued and work waited for, as counts: `queued` grows after each
// enqueue (note_pending); `waited` becomes the count a wait read before it
// began, once that wait is over. A thread may skip its wait only when
// `waited` covers what it saw queued: a flag cleared when a wait *begins*
// let a second thread return while the first still waited for its work,
// and read a result the GPU had not written (three threads' deep chains
// under an 8-process load on an H100).
struct WorkCounts {
  std::atomic<uint64_t> queued{0}, waited{0};
  void note() { queued.fetch_add(1, std::memory_order_acq_rel); }
  // The count to wait for, or 0 when everything queued was waited for.
  uint64_t outstanding() const {
    const uint64_t q = queued.load(std::memory_order_acquire);
    return waited.load(std::memory_order_acquire) >= q ? 0 : q;
  }
  void done(uint64_t count) {
    uint64_t w = waited.load(std::memory_order_acquire);
    while (w < count && !waited.compare_exchange_weak(w, count, std::memory_order_acq_rel)) {
    }
  }
};
// One slot per Alloy GPU stream; created under the mutex, then read without it.
struct StreamSlot {
  CUstream stream = nullptr;
  WorkCounts work;
};
std::mutex mutex;
std::unordered_map<int, std::unique_ptr<StreamSlot>> slots;
unsigned slots_generation = 0;  // the context the streams belong to
WorkCounts all_work;            // over every stream: synchronize_all's early out
std::atomic<bool> several{false};  // a second stream was made (several_streams)

// After a GPU fault rebuilt the context its streams are gone: the slots are
// dropped (leaked: threads may still hold pointers, which they check
// against the generation before use). Under `mutex`.
void forget_old_streams_locked() {
  if (slots_generation == context_generation()) return;
  for (auto& [index, slot] : slots) slot.release();
  slots.clear();
  slots_generation = context_generation();
}

StreamSlot& slot_for(const Stream& s) {
  thread_local int last_index = -1;
  thread_local StreamSlot* last_slot = nullptr;
  thread_local unsigned last_generation = 0;
  if (s.index == last_index && last_generation == context_generation()) return *last_slot;
  ensure_context();
  std::lock_guard<std::mutex> lock(mutex);
  forget_old_streams_locked();
  last_generation = slots_generation;
  auto& slot = slots[s.index];
  if (!slot) {
    slot = std::make_unique<StreamSlot>();
    check(cuda_driver::api().cuStreamCreate(&slot->stream, cuda_driver::kStreamNonBlocking), "gpu", "cuStreamCreate");
    if (slots.size() > 1) several.store(true, std::memory_order_release);
  }
  last_index = s.index;
  last_slot = slot.get();
  return *slot;
}
}  // namespace

void ensure_context() {
  if (gpu_unusable()) throw std::runtime_error("[gpu] " + gpu_unusable_message());
  thread_local unsigned current = ~0u;  // the generation made current on this thread
  const unsigned now = context_generation();
  if (current != now) {
    cublas_prefetch().start();
    install_fault_handler();
    cuda_driver::make_current(0);
    current = now;
  }
}

CUstream stream_for(const Stream& s) {
  if (t_capture_stream) return t_capture_stream;  // recording a tape (graph_eval.cpp)
  return slot_for(s).stream;
}

void note_pending(const Stream& s) {
  slot_for(s).work.note();
  all_work.note();
}

bool several_streams() { return several.load(std::memory_order_acquire); }

void order_after(const Stream& waiting, int producer) {
  if (producer == kNoStream || producer == waiting.index || !several_streams()) return;
  // While a tape is recorded, its stream was ordered after every other one
  // before recording began (run_tape_as_graph), and a recorded wait on an
  // event from outside the recording is refused.
  if (t_capture_stream) return;
  const CUstream target = stream_for(waiting);
  thread_local std::vector<CUstream> sources;
  sources.clear();
  {
    std::lock_guard<std::mutex> lock(mutex);
    forget_old_streams_locked();
    for (auto& [index, slot] : slots) {
      if (slot->stream != target && (producer == kManyStreams || index == producer)) sources.push_back(slot->stream);
    }
  }
  const auto& a = cuda_driver::api();
  for (CUstream source : sources) {
    // An event marks what is queued there now; the driver keeps it until the
    // wait is done, so it is destroyed at once.
    cuda_driver::CUevent event = nullptr;
    check(a.cuEventCreate(&event, cuda_driver::kEventDisableTiming), "gpu streams", "cuEventCreate");
    const auto recorded = a.cuEventRecord(event, source);
    const auto waited = recorded == cuda_driver::CUDA_SUCCESS ? a.cuStreamWaitEvent(target, event, 0) : recorded;
    a.cuEventDestroy(event);
    check(waited, "gpu streams", recorded == cuda_driver::CUDA_SUCCESS ? "cuStreamWaitEvent" : "cuEventRecord");
  }
}

void synchronize_all() {
  const uint64_t all_target = all_work.outstanding();
  if (all_target == 0) return;
  // The work pending there died with a context the driver would not let us
  // rebuild; what needs it fails on its own, and CPU evals go on.
  if (gpu_unusable()) return;
  const uint64_t mark = batch_mark();
  ensure_context();
  // Waited on outside the lock. The list is kept per thread, so the wait
  // after every eval allocates nothing.
  thread_local std::vector<CUstream> todo;
  thread_local std::vector<std::pair<StreamSlot*, uint64_t>> targets;
  todo.clear();
  targets.clear();
  {
    std::lock_guard<std::mutex> lock(mutex);
    forget_old_streams_locked();
    for (auto& [index, slot] : slots) {
      if (const uint64_t target = slot->work.outstanding()) {
        todo.push_back(slot->stream);
        targets.emplace_back(slot.get(), target);
      }
    }
  }
  // Every stream is waited for even when one wait throws (a stopped kernel):
  // the others' work may still be running. A wait that threw is over too
  // (a stopped kernel's stream was drained; a failed one's work is lost).
  std::exception_ptr first;
  for (size_t i = 0; i < todo.size(); ++i) {
    try {
      wait_stoppable(todo[i], 0, "gpu");
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    targets[i].first->work.done(targets[i].second);
  }
  all_work.done(all_target);
  if (first) std::rethrow_exception(first);
  end_batch(mark, todo);
}

void synchronize(const Stream& s) {
  StreamSlot& slot = slot_for(s);
  if (const uint64_t target = slot.work.outstanding()) {
    try {
      wait_stoppable(slot.stream, 0, "synchronize");
    } catch (...) {
      slot.work.done(target);  // over even when it throws, as in synchronize_all
      throw;
    }
    slot.work.done(target);
  }
}

void upload(void* dst, const void* src, size_t bytes, const Stream& s, const char* where) {
  if (bytes == 0) return;
  const CUstream stream = stream_for(s);
  check(cuda_driver::api().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, stream), where,
        "cuMemcpyHtoDAsync");
  check(cuda_driver::api().cuStreamSynchronize(stream), where, "cuStreamSynchronize");
}

CUstream side_stream() {
  static std::mutex side_mutex;
  static CUstream s = nullptr;
  static unsigned made_in = 0;
  std::lock_guard<std::mutex> lock(side_mutex);
  if (!s || made_in != context_generation()) {
    ensure_context();
    check(cuda_driver::api().cuStreamCreate(&s, cuda_driver::kStreamNonBlocking), "gpu", "cuStreamCreate (side)");
    made_in = context_generation();
  }
  return s;
}

void write_fresh(CUdeviceptr dst, const void* src, size_t bytes, const char* where) {
  if (bytes == 0) return;
  ensure_context();
  const CUstream s = side_stream();
  const auto& a = cuda_driver::api();
  check(a.cuMemcpyHtoDAsync(dst, src, bytes, s), where, "cuMemcpyHtoDAsync");
  check(a.cuStreamSynchronize(s), where, "cuStreamSynchronize");
}

const std::string& device_arch() {
  static const std::string arch = [] {
    ensure_context();
    int major = cuda_driver::device_attribute(cuda_driver::kComputeCapabilityMajor);
    int minor = cuda_driver::device_attribute(cuda_driver::kComputeCapabilityMinor);
    return "sm_" + std::to_string(major) + std::to_string(minor);
  }();
  return arch;
}

const std::string& kernel_arch() {
  static const std::string arch = jit::with_arch_features(device_arch());
  return arch;
}

}  // namespace cuda
}  // namespace alloy

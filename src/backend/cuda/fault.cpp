#include "backend/cuda/fault.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "backend/cuda/device.h"
#include "fast/kernel_cache.h"
#include "fast/prepared_launch.h"

namespace alloy::cuda {

namespace {

std::atomic<unsigned> generation{0};

// The custom kernels launched since the last clean wait (the first few).
constexpr size_t kBatchKept = 8;
std::mutex batch_mutex;
// Each with its launch number, and once its launch returned the stream and
// its number among the returned ones: a clean wait ends only the launches
// it covered (threads wait for each other's streams, or launch while one
// waits).
struct BatchEntry {
  uint64_t number = 0, launched = 0;  // launched: 0 until the launch returned
  cuda_driver::CUstream stream = nullptr;
  std::shared_ptr<fast::KernelVariant> variant;
};
std::vector<BatchEntry> batch;
size_t batch_more = 0;
uint64_t launches = 0, launched = 0;  // custom launches begun and returned so far (guarded by batch_mutex)

std::mutex rebuild_mutex;  // one rebuild at a time; guards summary
std::string summary;
thread_local bool in_handler = false;

// Set when a fault could not be recovered from: GPU work is refused, and
// `summary` (written before, never after) tells why.
std::atomic<bool> unusable{false};

// What faulted, and whether custom kernels were in it (then bounds_check
// can find the access).
struct BatchStory {
  std::string text;
  bool custom = false;
};

BatchStory describe_batch() {
  std::vector<std::shared_ptr<fast::KernelVariant>> kernels;
  size_t more = 0;
  {
    std::lock_guard<std::mutex> lock(batch_mutex);
    for (auto& e : batch) kernels.push_back(std::move(e.variant));
    batch.clear();
    more = batch_more;
    batch_more = 0;
  }
  if (kernels.empty()) return {"in a built-in op (no custom kernel ran since the last wait)", false};
  std::string s = "in " + fast::kernel_label(*kernels[0]);
  if (kernels.size() == 1 && more == 0) return {s, true};
  // The others once each, in launch order, with how often they ran.
  std::vector<std::pair<std::string, size_t>> others;
  for (size_t i = 1; i < kernels.size(); ++i) {
    const std::string label = fast::kernel_label(*kernels[i]);
    auto it = std::find_if(others.begin(), others.end(), [&](const auto& o) { return o.first == label; });
    if (it == others.end())
      others.emplace_back(label, 1);
    else
      ++it->second;
  }
  s += " (the first custom kernel launched since the last wait; then";
  for (size_t i = 0; i < others.size(); ++i) {
    s += (i ? ", " : " ") + others[i].first;
    if (others[i].second > 1) s += " x" + std::to_string(others[i].second);
  }
  if (more) s += " and " + std::to_string(more) + " more launches";
  return {s + ")", true};
}

constexpr const char* kBoundsHint =
    " To find the faulting access, run the kernel with compile_options={\"bounds_check\": True} (or set "
    "ALLOY_BOUNDS_CHECK=1): the first out-of-bounds access is then named before it can fault.";

// CUDA_ERROR_MISALIGNED_ADDRESS: bounds checks cannot name it (the access is
// inside its buffer); what usually causes it in a Metal kernel is a cast.
constexpr cuda_driver::CUresult kMisalignedAddress = 716;
constexpr const char* kMisalignedHint =
    " A misaligned address is usually a vector read or written where its start is not a multiple of its "
    "size: *reinterpret_cast<const float4*>(p + i) in a cuda_kernel, or in a Metal kernel a vector pointer "
    "that did not come from a cast in the kernel's own code (a parameter, a struct member; casts such as "
    "*((device const float4*)(p + i)) are read at any address, as Apple's GPUs do). Read such data element by "
    "element, or keep each vector's start aligned to its size.";

void on_fault(cuda_driver::CUresult result, const char* where, const char* call) {
  if (in_handler) return;  // a call of the rebuild itself failed: its own error says so
  struct Guard {
    Guard() { in_handler = true; }
    ~Guard() { in_handler = false; }
  } guard;
  // The cuBLAS thread (device.cpp) may be inside cuBLAS on this context
  // (dlopen's initialisers, cublasCreate): a reset under it killed the
  // process (SIGSEGV, H200, test_gpu_faults.py's recovery case, when the
  // thread also ran a GEMM). On a faulted context its calls return at once,
  // so it ends soon; the wait is bounded (and taken before rebuild_mutex) so
  // that a thread holding something it needs cannot deadlock us.
  wait_for_background_loads(std::chrono::seconds(5));
  // Threads that meet the fault together queue here: the first explains it
  // and rebuilds; the others then see what it left.
  std::lock_guard<std::mutex> lock(rebuild_mutex);
  if (unusable.load(std::memory_order_acquire)) {
    throw std::runtime_error(std::string("[") + where + "] " + gpu_unusable_message());
  }
  const std::string error = cuda_driver::error_text(result);
  const auto& api = cuda_driver::api();
  const bool still_faulted = cuda_driver::is_context_fault(api.cuCtxSynchronize());
  if (!still_faulted) {
    if (summary.empty()) return;  // a context gone for another reason: the call's own error
    // This call met the old context, which another thread has rebuilt since.
    throw std::runtime_error(std::string("[") + where + "] " + call + " failed (" + error +
                             ") on the GPU context lost " + summary +
                             ", which has been rebuilt since: new GPU work runs; arrays that were in GPU memory are "
                             "lost.");
  }
  const BatchStory what = describe_batch();
  std::string outcome =
      "The GPU context was rebuilt: new GPU work runs; arrays that were in GPU memory are lost, arrays already "
      "copied to the host stay valid.";
  summary = "after a GPU fault " + what.text + " (" + error + ")";
  try {
    cuda_driver::reset_primary_context(0);
    generation.fetch_add(1, std::memory_order_acq_rel);
  } catch (const std::exception& e) {
    // Measured on H200s with driver 580 (scripts/probes/context_reset.sh):
    // after an illegal address neither the reset primary context nor a
    // context made with cuCtxCreate can be retained or made again (both
    // return the fault), so the process's GPU is gone for good. Say so once,
    // clearly, and refuse GPU work from now on rather than fail later with
    // bare driver errors.
    unusable.store(true, std::memory_order_release);
    outcome = std::string("The CUDA driver does not let this process recover its GPU (rebuilding the context "
                          "failed: ") +
              e.what() +
              "): GPU work in this process now raises an error, while CPU work (mx.cpu) and arrays already copied "
              "to the host stay valid. Restart the process to use the GPU again.";
  }
  if (what.custom) outcome += result == kMisalignedAddress ? kMisalignedHint : kBoundsHint;
  throw std::runtime_error(std::string("[") + where + "] GPU fault " + what.text + ": " + error + " (seen by " +
                           call + "). " + outcome);
}

}  // namespace

unsigned context_generation() { return generation.load(std::memory_order_acquire); }

uint64_t note_custom_launch(const std::shared_ptr<fast::KernelVariant>& v) {
  std::lock_guard<std::mutex> lock(batch_mutex);
  ++launches;
  if (batch.size() < kBatchKept)
    batch.push_back({launches, 0, nullptr, v});
  else
    ++batch_more;
  return launches;
}

void note_launched(uint64_t launch, cuda_driver::CUstream stream) {
  std::lock_guard<std::mutex> lock(batch_mutex);
  ++launched;
  for (BatchEntry& e : batch)
    if (e.number == launch) {
      e.launched = launched;
      e.stream = stream;
    }
}

uint64_t batch_mark() {
  std::lock_guard<std::mutex> lock(batch_mutex);
  return launched;
}

void end_batch(uint64_t mark, const std::vector<cuda_driver::CUstream>& streams) {
  std::lock_guard<std::mutex> lock(batch_mutex);
  std::erase_if(batch, [&](const BatchEntry& e) {
    return e.launched != 0 && e.launched <= mark && std::find(streams.begin(), streams.end(), e.stream) != streams.end();
  });
  if (batch.empty() && launches == launched && launched == mark) batch_more = 0;
}

bool gpu_unusable() { return unusable.load(std::memory_order_acquire); }

std::string gpu_unusable_message() {
  return "the GPU cannot be used in this process " + summary +
         ", which the CUDA driver does not let a process recover from: restart the process to use the GPU again "
         "(CPU work and arrays copied to the host stay valid)";
}

std::string last_fault_summary() {
  std::lock_guard<std::mutex> lock(rebuild_mutex);
  return summary;
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] { cuda_driver::set_fault_handler(&on_fault); });
}

}  // namespace alloy::cuda

namespace alloy {

// core/streams.h: whether an array's memory died with an old GPU context.
unsigned gpu_context_generation() { return cuda::context_generation(); }

std::string gpu_memory_lost_message() {
  return "[gpu] this array's device memory was lost " + cuda::last_fault_summary() +
         "; recompute it (arrays copied to the host before the fault stay valid)";
}

}  // namespace alloy

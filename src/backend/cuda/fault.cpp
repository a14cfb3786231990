#include "backend/cuda/fault.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "fast/kernel_cache.h"
#include "fast/prepared_launch.h"

namespace alloy::cuda {

namespace {

std::atomic<unsigned> generation{0};

// The custom kernels launched since the last clean wait (the first few).
constexpr size_t kBatchKept = 8;
std::mutex batch_mutex;
std::vector<std::shared_ptr<fast::KernelVariant>> batch;
size_t batch_more = 0;

std::mutex rebuild_mutex;  // one rebuild at a time; guards summary
std::string summary;
thread_local bool in_handler = false;

std::string describe_batch() {
  std::vector<std::shared_ptr<fast::KernelVariant>> kernels;
  size_t more = 0;
  {
    std::lock_guard<std::mutex> lock(batch_mutex);
    kernels.swap(batch);
    more = batch_more;
    batch_more = 0;
  }
  if (kernels.empty()) return "in a built-in op (no custom kernel ran since the last wait)";
  std::string s = "in " + fast::kernel_label(*kernels[0]);
  if (kernels.size() == 1 && more == 0) return s;
  s += " (the first custom kernel launched since the last wait; then";
  for (size_t i = 1; i < kernels.size(); ++i) s += (i > 1 ? ", " : " ") + fast::kernel_label(*kernels[i]);
  if (more) s += " and " + std::to_string(more) + " more";
  return s + ")";
}

void on_fault(cuda_driver::CUresult result, const char* where, const char* call) {
  if (in_handler) return;  // a call of the rebuild itself failed: its own error says so
  struct Guard {
    Guard() { in_handler = true; }
    ~Guard() { in_handler = false; }
  } guard;
  const std::string what = describe_batch();
  const std::string error = cuda_driver::error_text(result);
  std::lock_guard<std::mutex> lock(rebuild_mutex);
  // Another thread may have rebuilt the context already, and this call only
  // reported the old one's fault: then the current context works.
  const auto& api = cuda_driver::api();
  const bool still_faulted = cuda_driver::is_context_fault(api.cuCtxSynchronize());
  std::string outcome =
      "The GPU context was rebuilt: new GPU work runs; arrays that were in GPU memory are lost, arrays already "
      "copied to the host stay valid.";
  if (still_faulted) {
    try {
      cuda_driver::reset_primary_context(0);
      generation.fetch_add(1, std::memory_order_acq_rel);
      summary = "after a GPU fault " + what + " (" + error + ")";
    } catch (const std::exception& e) {
      // Seen on an H200 (driver 580): the context made anew still reports
      // the fault. Say so rather than fail later with a bare driver error.
      outcome = std::string("The GPU context could not be rebuilt (") + e.what() +
                "): GPU work in this process will keep failing; arrays already copied to the host stay valid. "
                "Restart the process to use the GPU again.";
    }
  }
  throw std::runtime_error(std::string("[") + where + "] GPU fault " + what + ": " + error + " (seen by " + call +
                           "). " + outcome);
}

}  // namespace

unsigned context_generation() { return generation.load(std::memory_order_acquire); }

void note_custom_launch(const std::shared_ptr<fast::KernelVariant>& v) {
  std::lock_guard<std::mutex> lock(batch_mutex);
  if (batch.size() < kBatchKept)
    batch.push_back(v);
  else
    ++batch_more;
}

void end_batch() {
  std::lock_guard<std::mutex> lock(batch_mutex);
  batch.clear();
  batch_more = 0;
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

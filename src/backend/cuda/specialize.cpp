// Layout-specialized metal_kernel variants: counting launches per layout,
// and the background thread that builds them.
#include "backend/cuda/specialize.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "alloy/fast.h"
#include "core/env_switch.h"
#include "fast/kernel_support.h"

namespace alloy::cuda {

namespace {

bool specializing_on() {
  static const bool on = switched_on("ALLOY_SPECIALIZE");
  return on;
}

// One set of input layouts seen for a variant.
struct Seen {
  std::vector<msl::KernelSpec::InputLayout> layouts;  // by input index; empty for inputs not read
  unsigned launches = 0;
  std::shared_ptr<fast::KernelVariant> variant;  // set when its build is queued
  std::atomic<bool> built{false};                // the build finished (and succeeded)
};

// Per generic variant (fast::KernelVariant::cuda_specialized).
struct Specializations {
  std::mutex mutex;
  std::vector<std::unique_ptr<Seen>> seen;
  unsigned queued = 0;
};

// The single builder thread. Never destroyed: at exit it is waited for
// between builds (NVRTC must not be unloaded under a running compile).
class Builder {
 public:
  void enqueue(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
    // A forked child has no builder thread (only the forking thread goes on).
    if (started_in_ != getpid()) {
      if (started_in_ == 0) std::atexit([] { builder().stop(); });
      started_in_ = getpid();
      busy_ = false;
      std::thread([this] { run(); }).detach();
    }
    changed_.notify_all();
  }
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return jobs_.empty() && !busy_; });
  }
  static Builder& builder() {
    static auto* b = new Builder();
    return *b;
  }

 private:
  void stop() {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
    jobs_.clear();
    changed_.notify_all();
    changed_.wait(lock, [this] { return !busy_; });
  }
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      job();
      lock.lock();
      busy_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  pid_t started_in_ = 0;  // the process whose builder thread runs
  bool busy_ = false, stopping_ = false;
};

std::atomic<unsigned> built_count{0};

bool reads_layout(msl::GlueParam::Kind k) {
  return k == msl::GlueParam::Shape || k == msl::GlueParam::Strides || k == msl::GlueParam::Ndim;
}

// Input i's layout is read when bit i is set (at most 64 inputs are tracked);
// with `sizes`, its element count too.
bool same_layouts(const std::vector<msl::KernelSpec::InputLayout>& a, const KernelInput* inputs, size_t n_inputs,
                  uint64_t read, bool sizes) {
  if (a.size() != n_inputs) return false;
  for (size_t i = 0; i < n_inputs; ++i) {
    if (!(read >> i & 1u)) continue;
    const KernelInput& in = inputs[i];
    if (a[i].shape.size() != static_cast<size_t>(in.ndim) || (sizes && a[i].elements != in.elements) ||
        !std::equal(a[i].shape.begin(), a[i].shape.end(), in.shape) ||
        !std::equal(a[i].strides.begin(), a[i].strides.end(), in.strides)) {
      return false;
    }
  }
  return true;
}

}  // namespace

fast::KernelVariant* specialized_variant(fast::KernelVariant& v, const fast::CudaLaunchPlan& plan,
                                         const KernelInput* inputs, size_t n_inputs) {
  if (v.spec.dialect != msl::Dialect::Metal || !v.spec.program_entry.empty() || !v.spec.constant_layouts.empty() ||
      v.spec.cuda_launch_bound || !specializing_on()) {
    return nullptr;
  }
  // Which inputs' layouts the body reads (an output's, in a metal_library
  // tensor kernel, never: those are not metal_kernel bodies).
  if (n_inputs > 64) return nullptr;
  uint64_t read = 0;
  for (const auto& p : plan.params) {
    if (reads_layout(p.kind) && p.index >= 0 && static_cast<size_t>(p.index) < n_inputs) read |= uint64_t{1} << p.index;
  }
  if (!read) return nullptr;
  // A build that clamps every input read (alloy.mlx's, KernelSpec::
  // tolerate_input_reads) takes every input's layout and element count as
  // constants. (A body that reads no layout is not specialized for its
  // sizes alone: each build is an NVRTC compile in the background.)
  const bool sizes = v.spec.bounds_check && v.spec.tolerate_input_reads;
  if (sizes) read = n_inputs == 64 ? ~uint64_t{0} : (uint64_t{1} << n_inputs) - 1;
  {
    std::lock_guard<std::mutex> lock(v.compile_mutex);
    if (!v.cuda_specialized) v.cuda_specialized = std::make_shared<Specializations>();
  }
  auto& s = *static_cast<Specializations*>(v.cuda_specialized.get());
  std::lock_guard<std::mutex> lock(s.mutex);
  Seen* seen = nullptr;
  for (auto& e : s.seen) {
    if (same_layouts(e->layouts, inputs, n_inputs, read, sizes)) {
      seen = e.get();
      break;
    }
  }
  if (!seen) {
    if (s.seen.size() >= 4 * kMaxSpecialized) return nullptr;  // layouts that change at every call
    auto e = std::make_unique<Seen>();
    e->layouts.resize(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      if (!(read >> i & 1u)) continue;
      e->layouts[i].shape.assign(inputs[i].shape, inputs[i].shape + inputs[i].ndim);
      e->layouts[i].strides.assign(inputs[i].strides, inputs[i].strides + inputs[i].ndim);
      if (sizes) e->layouts[i].elements = inputs[i].elements;
    }
    seen = e.get();
    s.seen.push_back(std::move(e));
  }
  if (seen->built.load(std::memory_order_acquire)) return seen->variant.get();
  if (++seen->launches < kLaunchesBeforeSpecializing || seen->variant || s.queued >= kMaxSpecialized) return nullptr;
  ++s.queued;
  seen->variant = std::make_shared<fast::KernelVariant>();
  seen->variant->spec = v.spec;
  seen->variant->spec.constant_layouts = seen->layouts;
  // The job holds the variant (and the generic one's state) alive.
  std::shared_ptr<void> keep = v.cuda_specialized;
  Builder::builder().enqueue([seen, keep, variant = seen->variant] {
    try {
      fast::translate_variant(*variant, msl::Target::Cuda);
      variant->cuda_plan = launch_plan(*variant);
      seen->built.store(true, std::memory_order_release);
      built_count.fetch_add(1, std::memory_order_relaxed);
    } catch (...) {
      // The generic build keeps running these layouts.
    }
  });
  return nullptr;
}

void wait_for_specializations() { Builder::builder().wait_idle(); }

}  // namespace alloy::cuda

namespace alloy::fast {

void wait_for_specialized_kernels() { cuda::wait_for_specializations(); }

unsigned specialized_kernels_built() { return cuda::built_count.load(std::memory_order_relaxed); }

}  // namespace alloy::fast

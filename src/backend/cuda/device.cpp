#include "backend/cuda/device.h"

#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/gpu_availability.h"

namespace alloy {

bool gpu_is_available() { return cuda_driver::is_available(); }
std::string gpu_unavailable_reason() {
  return cuda_driver::is_available() ? std::string() : cuda_driver::unavailable_reason();
}

namespace cuda {
namespace {
std::mutex mutex;
std::unordered_map<int, CUstream> streams;
std::unordered_set<int> pending;
}  // namespace

void ensure_context() {
  thread_local bool current = false;
  if (!current) {
    cuda_driver::make_current(0);
    current = true;
  }
}

CUstream stream_for(const Stream& s) {
  ensure_context();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = streams.find(s.index);
  if (it != streams.end()) return it->second;
  CUstream cs = nullptr;
  check(cuda_driver::api().cuStreamCreate(&cs, cuda_driver::kStreamNonBlocking), "gpu", "cuStreamCreate");
  streams.emplace(s.index, cs);
  return cs;
}

void note_pending(const Stream& s) {
  std::lock_guard<std::mutex> lock(mutex);
  pending.insert(s.index);
}

void synchronize_all() {
  std::vector<CUstream> todo;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (int i : pending) todo.push_back(streams.at(i));
    pending.clear();
  }
  if (todo.empty()) return;
  ensure_context();
  for (auto s : todo) check(cuda_driver::api().cuStreamSynchronize(s), "gpu", "cuStreamSynchronize");
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

}  // namespace cuda
}  // namespace alloy

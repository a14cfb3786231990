// Stopping Metal kernels on the GPU (issue 14): the device-side poll is
// msl/runtime/cuda_cancel.h; here the host owns the flag it reads, sets it
// on Ctrl-C, SIGALRM or a kernel's timeout, and waits so that those stop
// the wait instead of hanging it.
#include <chrono>
#include <mutex>
#include <thread>

#include "alloy/errors.h"
#include "backend/cuda/device.h"
#include "backend/cuda/fault.h"
#include "jit/cpu_interrupt.h"

namespace alloy::cuda {

namespace {

constexpr const char* kFlagSymbol = "alloy_msl_cancel_flag";

// The device int every translated module polls; 0 while nothing is stopped.
// Made again in the context a GPU fault's rebuild creates.
CUdeviceptr cancel_flag() {
  static std::mutex mutex;
  static CUdeviceptr flag = 0;
  static unsigned made_in = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (!flag || made_in != context_generation()) {
    ensure_context();
    CUdeviceptr p = 0;
    check(cuda_driver::api().cuMemAlloc(&p, sizeof(int)), "gpu", "cuMemAlloc (cancellation flag)");
    const int zero = 0;
    write_fresh(p, &zero, sizeof zero, "gpu (cancellation flag)");
    flag = p;
    made_in = context_generation();
  }
  return flag;
}

// Setting the flag must not wait behind the runaway kernel: a copy on the
// side stream runs on a copy engine while every SM is busy.
void write_flag(int value) {
  static const int values[2] = {0, 1};  // static: an async copy reads its source later
  const auto& api = cuda_driver::api();
  check(api.cuMemcpyHtoDAsync(cancel_flag(), &values[value ? 1 : 0], sizeof(int), side_stream()), "gpu",
        "cuMemcpyHtoDAsync (cancellation flag)");
  if (!value) check(api.cuStreamSynchronize(side_stream()), "gpu", "cuStreamSynchronize (cancel)");
}

const char* signal_name(int sig) { return sig == 2 ? "SIGINT" : sig == 14 ? "SIGALRM" : "a signal"; }

}  // namespace

void install_cancel_flag(cuda_driver::CUmodule module) {
  CUdeviceptr symbol = 0;
  size_t bytes = 0;
  const auto& api = cuda_driver::api();
  if (api.cuModuleGetGlobal(&symbol, &bytes, module, kFlagSymbol) != cuda_driver::CUDA_SUCCESS) return;
  const CUdeviceptr flag = cancel_flag();
  write_fresh(symbol, &flag, sizeof flag, "gpu (cancellation flag address)");
}

void request_cancel() {
  cuda_driver::make_current(0);  // the signal watcher's thread may not have it yet
  write_flag(1);
}

void stop_if_interrupted(const jit::InterruptWindow& window, const std::string& what) {
  if (const int sig = window.signal()) {
    throw KernelInterrupted("[" + what + "] stopped by " + signal_name(sig) +
                            " before its launch (the signal came while it was prepared); its outputs are not valid");
  }
}

void wait_stoppable(CUstream s, double timeout_s, const std::string& what) {
  const auto& api = cuda_driver::api();
  cuda_driver::CUresult r = api.cuStreamQuery(s);
  if (r == cuda_driver::CUDA_SUCCESS) return;  // the common case costs one query
  if (r != cuda_driver::kErrorNotReady) check(r, what.c_str(), "cuStreamQuery");
  jit::arm_interrupts();
  jit::InterruptScope interrupt([](void*) { request_cancel(); }, nullptr);
  bool timed_out = false;
  if (timeout_s > 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while ((r = api.cuStreamQuery(s)) == cuda_driver::kErrorNotReady) {
      if (std::chrono::steady_clock::now() >= deadline) {
        timed_out = true;
        request_cancel();
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  check(api.cuStreamSynchronize(s), what.c_str(), "cuStreamSynchronize");
  const int sig = interrupt.signal();
  if (!sig && !timed_out) return;
  write_flag(0);
  if (sig) {
    throw KernelInterrupted("[" + what + "] the GPU work was stopped by " + signal_name(sig) +
                            " (Metal kernels end their loops when stopped); its outputs are not valid");
  }
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", timeout_s);
  throw KernelTimeout("[" + what + "] ran past its timeout of " + seconds + " s on the GPU and was stopped");
}

}  // namespace alloy::cuda

// The CUDA device as the backend sees it: context, streams, synchronisation.
#pragma once

#include <chrono>
#include <string>

#include "alloy/device.h"
#include "jit/cuda_driver.h"

namespace alloy::jit {
class InterruptWindow;
}  // namespace alloy::jit

namespace alloy::cuda {

using cuda_driver::CUdeviceptr;
using cuda_driver::CUstream;

// Makes the context current on this thread (cheap after the first call).
void ensure_context();
// Waits, for at most `limit`, until the thread that loads cuBLAS (started
// by the first ensure_context) is done with the GPU; true at once on that
// thread or when it never started. A context reset under its cuBLAS calls
// crashed the process (fault.cpp).
bool wait_for_background_loads(std::chrono::milliseconds limit);
// The CUDA stream behind an Alloy GPU stream (created on first use).
CUstream stream_for(const Stream& s);
// Blocks until every stream that ran work since the last call is idle.
void synchronize_all();
// Waits for one stream, if it ran work since it was last waited for.
void synchronize(const Stream& s);
// Marks a stream as having pending work.
void note_pending(const Stream& s);
// Whether a second GPU stream has been made. Until then nothing is ever
// queued on two streams, and ordering across them costs nothing.
bool several_streams();
// Queues on `waiting` a wait for everything queued so far on the stream
// with index `producer` (on every other stream for kManyStreams; nothing for
// kNoStream or `waiting` itself). Work queued on one non-blocking stream is
// not ordered after another's otherwise.
void order_after(const Stream& waiting, int producer);
// Copies host bytes into a buffer from the GPU allocator. A block it hands
// back may still be read or written by kernels queued on the stream before
// its last array was freed on the host, so the copy is queued on `s` after
// them; it is finished on return, so every stream sees the bytes and `src`
// may go. (A plain synchronous cuMemcpyHtoD is ordered with none of our
// streams, which are non-blocking, and those kernels could overwrite it.)
void upload(void* dst, const void* src, size_t bytes, const Stream& s, const char* where);
// A stream of the backend's own, for small copies that must not wait behind
// the Alloy streams' work (made again after a context rebuild).
CUstream side_stream();
// Copies host bytes into device memory no queued work uses (fresh from the
// driver, or a module's global) and returns when they are there for every
// stream. A plain cuMemcpyHtoD from pageable memory returns once the bytes
// are staged; the DMA may land after a kernel on one of our non-blocking
// streams has read the old value (seen: an FFT's scale read as 0). The copy
// goes on the side stream, so it waits behind nothing else.
void write_fresh(CUdeviceptr dst, const void* src, size_t bytes, const char* where);
// Stopping runaway Metal kernels (msl/runtime/cuda_cancel.h). A module
// translated from Metal gets the address of the process's cancellation flag.
void install_cancel_flag(cuda_driver::CUmodule module);
// Sets the flag: every running Metal kernel's unbounded loops end within
// about a millisecond. Any thread (the signal watcher too).
void request_cancel();
// Waits for `s` (all pending streams when null) with Ctrl-C and SIGALRM
// stopping the kernels and `deadline_s` > 0 (seconds from now) doing the
// same; throws KernelInterrupted / KernelTimeout naming `what` then, after
// the flag is cleared. The caller's outputs are not valid after a throw.
void wait_stoppable(CUstream s, double deadline_s, const std::string& what);
// Throws KernelInterrupted naming `what` when a signal came inside `window`
// (the kernel was compiling): called before the launch, which then never runs.
void stop_if_interrupted(const jit::InterruptWindow& window, const std::string& what);
// "sm_90" for the current device.
const std::string& device_arch();
// What user kernels (metal_kernel, metal_library, cuda_kernel) are compiled
// for: jit::with_arch_features(device_arch()) (gpu_kernel_arch()).
const std::string& kernel_arch();

// Throws "[where] call failed: ..." on a driver error.
inline void check(cuda_driver::CUresult r, const char* where, const char* call) {
  if (r != cuda_driver::CUDA_SUCCESS) cuda_driver::check(r, where, call);
}

}  // namespace alloy::cuda

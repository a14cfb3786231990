// The CUDA driver API, loaded at run time (dlopen libcuda.so.1), so one build
// of Alloy runs on machines without a GPU or driver. Only the calls Alloy uses
// are bound; the types are declared here (opaque handles, ints) so building
// needs no CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace alloy::cuda_driver {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
struct CUgraph_st;
struct CUgraphExec_st;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult kErrorNotFound = 500;
inline constexpr CUresult kErrorNotReady = 600;

// Values of the driver's enums that Alloy uses (from cuda.h, stable ABI).
enum DeviceAttribute : int {
  kMaxThreadsPerBlock = 1,
  kMaxSharedMemoryPerBlock = 8,
  kWarpSize = 10,
  kMultiprocessorCount = 16,
  kComputeCapabilityMajor = 75,
  kComputeCapabilityMinor = 76,
  kMaxSharedMemoryPerBlockOptin = 97,
};
enum FunctionAttribute : int {
  kFuncMaxThreadsPerBlock = 0,
  kFuncSharedSizeBytes = 1,
  kFuncNumRegs = 4,
  kFuncMaxDynamicSharedSizeBytes = 8,
};
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr unsigned kEventDefault = 0x0;
inline constexpr unsigned kEventDisableTiming = 0x2;
// CU_STREAM_CAPTURE_MODE_RELAXED: capture does not forbid other calls
// (allocation, module loads) on this or other threads.
inline constexpr int kCaptureModeRelaxed = 2;
// cuGraphExecUpdate's report (CUgraphExecUpdateResultInfo).
struct GraphExecUpdateInfo {
  int result;
  void* error_node;
  void* error_from_node;
};

// The bound entry points. Every pointer is non-null once `api()` succeeds.
struct Api {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDeviceGetName)(char* name, int len, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* ctx, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);
  CUresult (*cuDevicePrimaryCtxReset)(CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxGetCurrent)(CUcontext* ctx);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamQuery)(CUstream stream);  // CUDA_SUCCESS, or kErrorNotReady while work runs
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* ms, CUevent start, CUevent end);
  CUresult (*cuMemGetInfo)(size_t* free_bytes, size_t* total_bytes);
  CUresult (*cuMemAlloc)(CUdeviceptr* ptr, size_t bytes);
  CUresult (*cuMemAllocManaged)(CUdeviceptr* ptr, size_t bytes, unsigned flags);  // metal-cpp's shared buffers
  CUresult (*cuMemFree)(CUdeviceptr ptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void* src, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void* dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void* src, size_t bytes, CUstream s);
  CUresult (*cuMemcpyDtoHAsync)(void* dst, CUdeviceptr src, size_t bytes, CUstream s);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t count, CUstream s);
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned value, size_t count, CUstream s);
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* fn, CUmodule module, const char* name);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr* ptr, size_t* bytes, CUmodule module, const char* name);
  CUresult (*cuFuncGetAttribute)(int* value, int attribute, CUfunction fn);
  CUresult (*cuFuncSetAttribute)(CUfunction fn, int attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz,
                             unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                             CUstream stream, void** params, void** extra);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);
  // CUDA graphs (backend/cuda/graph_eval.cpp). Optional: null on a driver
  // without them, and evaluation then launches every node itself.
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph* graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
  CUresult (*cuGraphExecUpdate)(CUgraphExec exec, CUgraph graph, GraphExecUpdateInfo* info);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  // Optional too: without it, grids that want every SM's resident blocks
  // assume one block per SM.
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int* blocks, CUfunction fn, int block_size,
                                                          size_t dynamic_shared_bytes);
  bool has_graphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture && cuGraphInstantiateWithFlags && cuGraphExecUpdate &&
           cuGraphLaunch && cuGraphDestroy && cuGraphExecDestroy;
  }
};

// True when libcuda.so.1 loads, every entry point binds, cuInit succeeds and
// at least one device exists. Never throws and never crashes; the answer is
// computed once.
bool is_available();

// Why `is_available()` is false ("" when it is true), e.g. "libcuda.so.1 not
// found: ..." or "cuInit failed: CUDA_ERROR_NO_DEVICE".
const std::string& unavailable_reason();

// The bound API. Throws std::runtime_error (with `unavailable_reason()`) when
// the driver is not available.
const Api& api();

// "CUDA_ERROR_OUT_OF_MEMORY: out of memory" for a result code.
std::string error_text(CUresult result);

// Throws std::runtime_error "[where] <call> failed: <error_text>" unless
// `result` is CUDA_SUCCESS.
void check(CUresult result, const char* where, const char* call);

// Whether `result` is a fault that leaves the context unusable (an illegal
// address or instruction, a trap, a failed launch): every later call fails.
bool is_context_fault(CUresult result);
// The context a call needed is no more (after a fault the driver would not
// let us rebuild from): the fault handler explains it, if it knows why.
bool is_context_gone(CUresult result);
// Called by check() and launch() on a context fault, before they throw; it
// may throw its own error instead (the backend's, which rebuilds the context).
using FaultHandler = void (*)(CUresult result, const char* where, const char* call);
void set_fault_handler(FaultHandler handler);
// Destroys the device's primary context with everything in it and makes it
// current again, fresh (cuDevicePrimaryCtxReset). Handles of the old one
// (modules, streams, memory) are invalid afterwards; Module::forget them.
void reset_primary_context(int device = 0);

// ---- small conveniences over the bound API (all throw on failure) ----

int device_count();
int device_attribute(int attribute, int device = 0);
std::string device_name(int device = 0);
// Bytes of memory on the device.
size_t device_total_memory(int device = 0);

// Makes the device's primary context current on the calling thread
// (retained once per device for the life of the process).
void make_current(int device = 0);

// Launches `fn` with a 1-D or 3-D grid. With 32 KB or more of
// `dynamic_shared_bytes`, first raises the function's dynamic shared memory
// limit (the driver refuses launches over 48 KB in all otherwise).
void launch(CUfunction fn, const unsigned grid[3], const unsigned block[3],
            unsigned dynamic_shared_bytes, CUstream stream, void** params);

// How many blocks of `block` threads using `dynamic_shared_bytes` each fit
// on one SM at once (at least 1; 1 when the driver cannot say). Raises the
// function's dynamic shared memory limit first, as launch() would.
int resident_blocks_per_sm(CUfunction fn, unsigned block, unsigned dynamic_shared_bytes);

// A module loaded from a cubin; unloads on destruction.
class Module {
 public:
  Module() = default;
  explicit Module(const void* cubin);  // make_current() must have run
  ~Module();
  Module(Module&& o) noexcept : module_(o.module_) { o.module_ = nullptr; }
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  CUfunction function(const char* name) const;
  CUmodule get() const { return module_; }
  // Drops the handle without unloading it (its context is gone).
  void forget() { module_ = nullptr; }

 private:
  CUmodule module_ = nullptr;
};

}  // namespace alloy::cuda_driver

// Binds the CUDA driver API at run time. See cuda_driver.h.
#include "jit/cuda_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

namespace alloy::cuda_driver {
namespace {

struct Loaded {
  Api api{};
  bool ok = false;
  std::string reason;
};

// Binds `names` in order, the first that exists wins (versioned names first:
// the unversioned ones are the old ABI for several calls).
template <typename Fn>
bool bind(void* lib, Fn& slot, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* n : names) {
    if (void* p = dlsym(lib, n)) {
      slot = reinterpret_cast<Fn>(p);
      return true;
    }
  }
  missing += std::string(missing.empty() ? "" : ", ") + *names.begin();
  return false;
}

Loaded load() {
  Loaded L;
  void* lib = nullptr;
  std::string tried;
  for (const char* name : {"libcuda.so.1", "libcuda.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* e = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (e ? e : name);
  }
  if (!lib) {
    L.reason = "libcuda.so.1 not found (" + tried + ")";
    return L;
  }
  Api& a = L.api;
  std::string missing;
  bind(lib, a.cuInit, {"cuInit"}, missing);
  bind(lib, a.cuDriverGetVersion, {"cuDriverGetVersion"}, missing);
  bind(lib, a.cuDeviceGetCount, {"cuDeviceGetCount"}, missing);
  bind(lib, a.cuDeviceGet, {"cuDeviceGet"}, missing);
  bind(lib, a.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing);
  bind(lib, a.cuDeviceGetName, {"cuDeviceGetName"}, missing);
  bind(lib, a.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, missing);
  bind(lib, a.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing);
  bind(lib, a.cuDevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, missing);
  bind(lib, a.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing);
  bind(lib, a.cuCtxGetCurrent, {"cuCtxGetCurrent"}, missing);
  bind(lib, a.cuCtxSynchronize, {"cuCtxSynchronize"}, missing);
  bind(lib, a.cuStreamCreate, {"cuStreamCreate"}, missing);
  bind(lib, a.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"}, missing);
  bind(lib, a.cuStreamSynchronize, {"cuStreamSynchronize"}, missing);
  bind(lib, a.cuStreamQuery, {"cuStreamQuery"}, missing);
  bind(lib, a.cuStreamWaitEvent, {"cuStreamWaitEvent"}, missing);
  bind(lib, a.cuEventCreate, {"cuEventCreate"}, missing);
  bind(lib, a.cuEventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"}, missing);
  bind(lib, a.cuEventRecord, {"cuEventRecord"}, missing);
  bind(lib, a.cuEventSynchronize, {"cuEventSynchronize"}, missing);
  bind(lib, a.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing);
  bind(lib, a.cuMemGetInfo, {"cuMemGetInfo_v2"}, missing);
  bind(lib, a.cuMemAlloc, {"cuMemAlloc_v2"}, missing);
  bind(lib, a.cuMemAllocManaged, {"cuMemAllocManaged"}, missing);
  bind(lib, a.cuMemFree, {"cuMemFree_v2"}, missing);
  bind(lib, a.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"}, missing);
  bind(lib, a.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"}, missing);
  bind(lib, a.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, missing);
  bind(lib, a.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"}, missing);
  bind(lib, a.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, missing);
  bind(lib, a.cuMemsetD8Async, {"cuMemsetD8Async"}, missing);
  bind(lib, a.cuMemsetD32Async, {"cuMemsetD32Async"}, missing);
  bind(lib, a.cuModuleLoadData, {"cuModuleLoadData"}, missing);
  bind(lib, a.cuModuleUnload, {"cuModuleUnload"}, missing);
  bind(lib, a.cuModuleGetFunction, {"cuModuleGetFunction"}, missing);
  bind(lib, a.cuDevicePrimaryCtxReset, {"cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset"}, missing);
  bind(lib, a.cuModuleGetGlobal, {"cuModuleGetGlobal_v2"}, missing);
  bind(lib, a.cuFuncGetAttribute, {"cuFuncGetAttribute"}, missing);
  bind(lib, a.cuFuncSetAttribute, {"cuFuncSetAttribute"}, missing);
  bind(lib, a.cuLaunchKernel, {"cuLaunchKernel"}, missing);
  bind(lib, a.cuGetErrorName, {"cuGetErrorName"}, missing);
  bind(lib, a.cuGetErrorString, {"cuGetErrorString"}, missing);
  std::string optional_missing;  // graphs: without them, nodes launch one by one
  bind(lib, a.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, optional_missing);
  bind(lib, a.cuStreamEndCapture, {"cuStreamEndCapture"}, optional_missing);
  bind(lib, a.cuGraphInstantiateWithFlags, {"cuGraphInstantiateWithFlags"}, optional_missing);
  bind(lib, a.cuGraphExecUpdate, {"cuGraphExecUpdate_v2"}, optional_missing);
  bind(lib, a.cuGraphLaunch, {"cuGraphLaunch"}, optional_missing);
  bind(lib, a.cuGraphDestroy, {"cuGraphDestroy"}, optional_missing);
  bind(lib, a.cuGraphExecDestroy, {"cuGraphExecDestroy"}, optional_missing);
  bind(lib, a.cuOccupancyMaxActiveBlocksPerMultiprocessor, {"cuOccupancyMaxActiveBlocksPerMultiprocessor"},
       optional_missing);
  if (!missing.empty()) {
    L.reason = "libcuda.so.1 lacks entry points: " + missing;
    return L;  // the library stays loaded: harmless, and unloading drivers is risky
  }
  CUresult r = a.cuInit(0);
  if (r != CUDA_SUCCESS) {
    L.reason = "cuInit failed: " + std::to_string(r);
    const char* name = nullptr;
    if (a.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) L.reason = std::string("cuInit failed: ") + name;
    return L;
  }
  int count = 0;
  r = a.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count <= 0) {
    L.reason = "no CUDA device (cuDeviceGetCount returned " + std::to_string(r) + ", count " +
               std::to_string(count) + ")";
    return L;
  }
  L.ok = true;
  return L;
}

const Loaded& loaded() {
  static const Loaded L = load();
  return L;
}

}  // namespace

bool is_available() { return loaded().ok; }

const std::string& unavailable_reason() { return loaded().reason; }

const Api& api() {
  const Loaded& L = loaded();
  if (!L.ok) throw std::runtime_error("[cuda_driver::api] the CUDA driver is not available: " + L.reason);
  return L.api;
}

std::string error_text(CUresult result) {
  const Loaded& L = loaded();
  std::string out = "CUresult " + std::to_string(result);
  if (!L.api.cuGetErrorName) return out;
  const char* name = nullptr;
  const char* text = nullptr;
  if (L.api.cuGetErrorName(result, &name) == CUDA_SUCCESS && name) out = name;
  if (L.api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text) out += std::string(": ") + text;
  return out;
}

namespace {
std::atomic<FaultHandler> fault_handler{nullptr};
}  // namespace

bool is_context_fault(CUresult r) {
  // ILLEGAL_ADDRESS, LAUNCH_TIMEOUT, ASSERT, HARDWARE_STACK_ERROR,
  // ILLEGAL_INSTRUCTION, MISALIGNED_ADDRESS, INVALID_ADDRESS_SPACE,
  // INVALID_PC, LAUNCH_FAILED (cuda.h).
  return r == 700 || r == 702 || r == 710 || (r >= 714 && r <= 719);
}

bool is_context_gone(CUresult r) {
  // INVALID_CONTEXT, CONTEXT_IS_DESTROYED (cuda.h).
  return r == 201 || r == 709;
}

void set_fault_handler(FaultHandler handler) { fault_handler.store(handler); }

void check(CUresult result, const char* where, const char* call) {
  if (result == CUDA_SUCCESS) return;
  if (is_context_fault(result) || is_context_gone(result))
    if (FaultHandler h = fault_handler.load()) h(result, where, call);
  throw std::runtime_error(std::string("[") + where + "] " + call + " failed: " + error_text(result));
}

int device_count() {
  int n = 0;
  check(api().cuDeviceGetCount(&n), "cuda_driver::device_count", "cuDeviceGetCount");
  return n;
}

int device_attribute(int attribute, int device) {
  const Api& a = api();
  CUdevice dev = 0;
  check(a.cuDeviceGet(&dev, device), "cuda_driver::device_attribute", "cuDeviceGet");
  int v = 0;
  check(a.cuDeviceGetAttribute(&v, attribute, dev), "cuda_driver::device_attribute", "cuDeviceGetAttribute");
  return v;
}

std::string device_name(int device) {
  const Api& a = api();
  CUdevice dev = 0;
  check(a.cuDeviceGet(&dev, device), "cuda_driver::device_name", "cuDeviceGet");
  char name[256] = {};
  check(a.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuda_driver::device_name", "cuDeviceGetName");
  return name;
}

size_t device_total_memory(int device) {
  const Api& a = api();
  CUdevice dev = 0;
  check(a.cuDeviceGet(&dev, device), "cuda_driver::device_total_memory", "cuDeviceGet");
  size_t bytes = 0;
  check(a.cuDeviceTotalMem(&bytes, dev), "cuda_driver::device_total_memory", "cuDeviceTotalMem");
  return bytes;
}

namespace {
std::mutex contexts_mutex;
std::vector<CUcontext> contexts;  // retained primary contexts, by ordinal
}  // namespace

namespace {

// What is known per function: the dynamic shared memory it is allowed (set
// once per size, not per launch) and, per block and memory size, how many
// of its blocks one SM holds. Functions live as long as their modules,
// and are forgotten when a module is unloaded or the context is reset (a
// new function may take a freed handle's value).
struct FunctionFacts {
  unsigned allowed_shared = 0;
  std::vector<std::pair<uint64_t, int>> resident;  // (block << 32 | bytes, blocks per SM)
};
// Both outlive static destructors (modules are unloaded by them).
std::mutex& facts_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::unordered_map<CUfunction, FunctionFacts>& facts() {
  static auto* m = new std::unordered_map<CUfunction, FunctionFacts>();
  return *m;
}

void forget_function_facts() {
  std::lock_guard<std::mutex> lock(facts_mutex());
  facts().clear();
}

}  // namespace

void reset_primary_context(int device) {
  const Api& a = api();
  CUdevice dev = 0;
  check(a.cuDeviceGet(&dev, device), "cuda_driver::reset_primary_context", "cuDeviceGet");
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(contexts_mutex);
    // Not check(): a failure here must not re-enter the fault handler. The
    // thread lets go of the dead context first.
    a.cuCtxSetCurrent(nullptr);
    forget_function_facts();
    CUresult r = a.cuDevicePrimaryCtxReset(dev);
    if (r != CUDA_SUCCESS) {
      throw std::runtime_error("[cuda_driver::reset_primary_context] cuDevicePrimaryCtxReset failed: " + error_text(r));
    }
    // The reset leaves the context inactive (our earlier retain stands);
    // retaining it again makes it anew.
    if (contexts.size() <= size_t(device)) contexts.resize(device + 1, nullptr);
    // (Driver 580 returns the old fault here after an illegal address,
    // with or without releasing first: scripts/probes/context_reset.sh.)
    r = a.cuDevicePrimaryCtxRetain(&contexts[device], dev);
    if (r != CUDA_SUCCESS) {
      throw std::runtime_error("[cuda_driver::reset_primary_context] cuDevicePrimaryCtxRetain failed: " +
                               error_text(r));
    }
    ctx = contexts[device];
  }
  CUresult r = a.cuCtxSetCurrent(ctx);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error("[cuda_driver::reset_primary_context] cuCtxSetCurrent failed: " + error_text(r));
  }
}

void make_current(int device) {
  const Api& a = api();
  auto& mu = contexts_mutex;
  CUcontext ctx = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (device < 0 || device >= device_count()) {
      throw std::runtime_error("[cuda_driver::make_current] no device " + std::to_string(device) + " (" +
                               std::to_string(device_count()) + " present)");
    }
    if (contexts.size() <= size_t(device)) contexts.resize(device + 1, nullptr);
    if (!contexts[device]) {
      CUdevice dev = 0;
      check(a.cuDeviceGet(&dev, device), "cuda_driver::make_current", "cuDeviceGet");
      check(a.cuDevicePrimaryCtxRetain(&contexts[device], dev), "cuda_driver::make_current",
            "cuDevicePrimaryCtxRetain");
    }
    ctx = contexts[device];
  }
  check(a.cuCtxSetCurrent(ctx), "cuda_driver::make_current", "cuCtxSetCurrent");
}

// Above 48 KB of shared memory in all (static + dynamic), a function must be
// allowed the dynamic part first. The op kernels' static shared memory is
// under 16 KB, so from 32 KB of dynamic memory on it is set, as needed or not.
constexpr unsigned kDynamicSharedOptIn = 32u * 1024u;

namespace {

// Under facts_mutex().
void allow_dynamic_shared(FunctionFacts& f, CUfunction fn, unsigned bytes, const char* who) {
  if (bytes < kDynamicSharedOptIn || bytes <= f.allowed_shared) return;
  check(api().cuFuncSetAttribute(fn, kFuncMaxDynamicSharedSizeBytes, int(bytes)), who,
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  f.allowed_shared = bytes;
}

}  // namespace

void launch(CUfunction fn, const unsigned grid[3], const unsigned block[3], unsigned dynamic_shared_bytes,
            CUstream stream, void** params) {
  const Api& a = api();
  if (dynamic_shared_bytes >= kDynamicSharedOptIn) {
    std::lock_guard<std::mutex> lock(facts_mutex());
    allow_dynamic_shared(facts()[fn], fn, dynamic_shared_bytes, "cuda_driver::launch");
  }
  CUresult r = a.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                dynamic_shared_bytes, stream, params, nullptr);
  if (r != CUDA_SUCCESS && (is_context_fault(r) || is_context_gone(r))) check(r, "cuda_driver::launch", "cuLaunchKernel");
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error("[cuda_driver::launch] cuLaunchKernel(grid " + std::to_string(grid[0]) + "x" +
                             std::to_string(grid[1]) + "x" + std::to_string(grid[2]) + ", block " +
                             std::to_string(block[0]) + "x" + std::to_string(block[1]) + "x" +
                             std::to_string(block[2]) + ", shared " + std::to_string(dynamic_shared_bytes) +
                             " B) failed: " + error_text(r));
  }
}

int resident_blocks_per_sm(CUfunction fn, unsigned block, unsigned dynamic_shared_bytes) {
  const Api& a = api();
  if (!a.cuOccupancyMaxActiveBlocksPerMultiprocessor) return 1;
  std::lock_guard<std::mutex> lock(facts_mutex());
  FunctionFacts& f = facts()[fn];
  const uint64_t key = (uint64_t(block) << 32) | dynamic_shared_bytes;
  for (const auto& [k, blocks] : f.resident)
    if (k == key) return blocks;
  allow_dynamic_shared(f, fn, dynamic_shared_bytes, "cuda_driver::resident_blocks_per_sm");
  int blocks = 0;
  check(a.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fn, int(block), dynamic_shared_bytes),
        "cuda_driver::resident_blocks_per_sm", "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  blocks = blocks > 0 ? blocks : 1;
  f.resident.emplace_back(key, blocks);
  return blocks;
}

Module::Module(const void* cubin) {
  check(api().cuModuleLoadData(&module_, cubin), "cuda_driver::Module", "cuModuleLoadData");
}

Module::~Module() {
  if (module_ && is_available()) {
    forget_function_facts();
    api().cuModuleUnload(module_);  // errors at teardown are ignored
  }
}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (module_) {
      forget_function_facts();
      api().cuModuleUnload(module_);
    }
    module_ = o.module_;
    o.module_ = nullptr;
  }
  return *this;
}

CUfunction Module::function(const char* name) const {
  CUfunction fn = nullptr;
  CUresult r = api().cuModuleGetFunction(&fn, module_, name);
  if (r != CUDA_SUCCESS) {
    throw std::runtime_error(std::string("[cuda_driver::Module::function] no kernel '") + name +
                             "' in the module: " + error_text(r));
  }
  return fn;
}

}  // namespace alloy::cuda_driver

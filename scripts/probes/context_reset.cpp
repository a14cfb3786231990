// scripts/probes/context_reset.sh builds and runs this (see there).
// Which sequence rebuilds a CUDA context after a sticky fault (driver 580)?
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
static const char* ptx =
#include "context_reset_kernels.ptx.inc"
;
#define R(x) do { CUresult r_ = (x); const char* s_ = nullptr; cuGetErrorName(r_, &s_); std::printf("  %-60s -> %s\n", #x, s_ ? s_ : "?"); } while (0)
static CUresult rc(CUresult r, const char* what) { const char* s = nullptr; cuGetErrorName(r, &s); std::printf("  %-60s -> %s\n", what, s ? s : "?"); return r; }
static bool run_kernel(const char* name, bool check_value) {
  CUmodule m; CUfunction f; CUdeviceptr p = 0;
  if (rc(cuModuleLoadData(&m, ptx), "cuModuleLoadData")) return false;
  if (rc(cuModuleGetFunction(&f, m, name), name)) return false;
  if (rc(cuMemAlloc(&p, 256 * 4), "cuMemAlloc")) return false;
  void* args[] = {&p};
  if (rc(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel")) return false;
  CUresult r = rc(cuCtxSynchronize(), "cuCtxSynchronize");
  if (r) return false;
  if (check_value) { float h[64]; rc(cuMemcpyDtoH(h, p, sizeof h), "cuMemcpyDtoH"); std::printf("  value[5] = %g (want 10)\n", h[5]); }
  return true;
}
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "primary";
  CUdevice dev; rc(cuInit(0), "cuInit"); rc(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext ctx = nullptr;
  bool primary = std::strncmp(mode, "primary", 7) == 0;
  std::printf("== %s\n", mode);
  if (primary) { rc(cuDevicePrimaryCtxRetain(&ctx, dev), "retain"); rc(cuCtxSetCurrent(ctx), "setcurrent"); }
  else { rc(cuCtxCreate(&ctx, nullptr, 0, dev), "cuCtxCreate"); }
  run_kernel("good", true);
  run_kernel("far_write", false);
  auto rebuild = [&] {
    if (primary) {
      rc(cuCtxSetCurrent(nullptr), "setcurrent(null)");
      if (!std::strcmp(mode, "primary_release")) { rc(cuDevicePrimaryCtxRelease(dev), "release"); }
      rc(cuDevicePrimaryCtxReset(dev), "reset");
      unsigned fl; int act; rc(cuDevicePrimaryCtxGetState(dev, &fl, &act), "getstate"); std::printf("  active=%d\n", act);
      rc(cuDevicePrimaryCtxRetain(&ctx, dev), "retain again");
      rc(cuCtxSetCurrent(ctx), "setcurrent");
    } else {
      rc(cuCtxDestroy(ctx), "cuCtxDestroy");
      rc(cuCtxCreate(&ctx, nullptr, 0, dev), "cuCtxCreate again");
    }
  };
  if (std::strstr(mode, "thread")) { std::thread t(rebuild); t.join(); rc(cuCtxSetCurrent(ctx), "main setcurrent"); }
  else rebuild();
  std::printf("  after rebuild:\n");
  bool ok = run_kernel("good", true);
  std::printf("RESULT %s: %s\n", mode, ok ? "REBUILT" : "FAILED");
  return 0;
}

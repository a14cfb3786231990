// Times the CUDA driver's steps of a first context in a fresh process:
// dlopen of libcuda, cuInit, cuDevicePrimaryCtxRetain, a first cuMemAlloc.
//
//   g++ -O2 -std=c++20 scripts/probes/ctx_steps.cpp -o /tmp/ctx_steps -ldl -pthread
//   /tmp/ctx_steps            # the driver alone
//   /tmp/ctx_steps cublas     # with libcublas loading on a second thread
//
// The second form is what Alloy's first GPU op does (device.cpp's prefetch
// thread loads cuBLAS while the context is made). A dlopen holds the
// loader's lock while the library's initialisers run; if the driver loads
// or looks up anything meanwhile, the context waits behind cuBLAS. Compare
// both forms' cuInit and retain on one machine. (H100, 2026-12-06, from
// Python through ctypes, no thread: cuInit 97-215 ms, retain 99-119 ms,
// while Alloy's first op took 238-254 ms.)
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

using Clock = std::chrono::steady_clock;
static double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int main(int argc, char** argv) {
  const bool with_cublas = argc > 1 && std::strcmp(argv[1], "cublas") == 0;
  const auto t0 = Clock::now();
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cuda) {
    std::printf("libcuda.so.1 not found: %s\n", dlerror());
    return 1;
  }
  using Init = int (*)(unsigned);
  using DeviceGet = int (*)(int*, int);
  using Retain = int (*)(void**, int);
  using SetCurrent = int (*)(void*);
  using Alloc = int (*)(unsigned long long*, size_t);
  auto init = reinterpret_cast<Init>(dlsym(cuda, "cuInit"));
  auto device_get = reinterpret_cast<DeviceGet>(dlsym(cuda, "cuDeviceGet"));
  auto retain = reinterpret_cast<Retain>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<SetCurrent>(dlsym(cuda, "cuCtxSetCurrent"));
  auto alloc = reinterpret_cast<Alloc>(dlsym(cuda, "cuMemAlloc_v2"));
  const auto t1 = Clock::now();

  double cublas_ms = 0;
  const char* cublas_name = "not found";
  std::thread loader;
  if (with_cublas) {
    loader = std::thread([&] {
      const auto s = Clock::now();
      for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
        if (dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
          cublas_name = name;
          break;
        }
      }
      cublas_ms = ms(s, Clock::now());
    });
  }
  if (init(0) != 0) return 2;
  const auto t2 = Clock::now();
  int dev = 0;
  void* ctx = nullptr;
  device_get(&dev, 0);
  if (retain(&ctx, dev) != 0) return 3;
  const auto t3 = Clock::now();
  set_current(ctx);
  unsigned long long p = 0;
  alloc(&p, 1 << 20);
  const auto t4 = Clock::now();
  if (loader.joinable()) loader.join();
  std::printf("dlopen %.1f cuInit %.1f retain %.1f first alloc %.1f ms", ms(t0, t1), ms(t1, t2), ms(t2, t3),
              ms(t3, t4));
  if (with_cublas) std::printf("; cuBLAS load on a thread %.1f ms (%s)", cublas_ms, cublas_name);
  std::printf("\n");
  return 0;
}

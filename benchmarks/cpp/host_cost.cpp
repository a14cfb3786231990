// Where the time of a tiny launch followed by its own wait goes, in C++,
// with no Python in the way. Prints, best of several loops, microseconds:
//   - the driver's floor: cuLaunchKernel + cuStreamSynchronize (and variants)
//     of a one-line kernel on a non-blocking stream, as Alloy launches;
//   - Alloy's C++ API: a metal_kernel call and `a + b`, split into building
//     the node, eval (launch + wait) and dropping the result.
// The Python figures (benchmarks/host_cost_gpu.py) minus these are the
// bindings' share. Built with ALLOY_BUILD_TESTS; run on the GPU machine.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "alloy/alloy.h"
#include "alloy/primitive.h"
#include "backend/cuda/device.h"
#include "core/streams.h"
#include "fast/cuda_plan.h"
#include "msl/runtime/cuda_launch.h"
#include "primitives/custom_kernel.h"
#include "jit/cuda_compile.h"
#include "jit/cuda_driver.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace drv = alloy::cuda_driver;

double best_us(const std::function<void()>& fn, int n = 5000, int reps = 5) {
  for (int i = 0; i < 2000; ++i) fn();  // warm caches, clocks and allocator buckets
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) fn();
    best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n);
  }
  return best;
}

// The launch's own share when the stream is idle (each launch follows a
// wait), against a launch alone, which queues behind the ones before it.
double idle_launch_us(const std::function<void()>& launch, drv::CUstream stream) {
  double total = 0;
  const int n = 5000;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    launch();
    total += std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    drv::api().cuStreamSynchronize(stream);
  }
  return total / n;
}

// Entry points Alloy does not bind, looked up for the comparison only.
template <class F>
F driver_symbol(const char* name) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void* sym = lib ? dlsym(lib, name) : nullptr;
  return reinterpret_cast<F>(sym);
}

void driver_floor() {
  const drv::Api& a = drv::api();
  alloy::jit::NvrtcOptions opts;
  opts.arch = alloy::cuda::device_arch();
  auto cubin = alloy::jit::compile_cuda(
      "extern \"C\" __global__ void tiny(const float* a, float* b) { int i = threadIdx.x; b[i] = a[i] + 1.0f; }",
      "tiny.cu", opts);
  drv::Module module(cubin->data());
  drv::CUfunction fn = module.function("tiny");
  drv::CUstream stream = nullptr;
  drv::check(a.cuStreamCreate(&stream, drv::kStreamNonBlocking), "host_cost", "cuStreamCreate");
  drv::CUdeviceptr in = 0, out = 0;
  drv::check(a.cuMemAlloc(&in, 64), "host_cost", "cuMemAlloc");
  drv::check(a.cuMemAlloc(&out, 64), "host_cost", "cuMemAlloc");
  void* params[] = {&in, &out};
  auto launch = [&] { a.cuLaunchKernel(fn, 1, 1, 1, 16, 1, 1, 0, stream, params, nullptr); };
  auto query = driver_symbol<drv::CUresult (*)(drv::CUstream)>("cuStreamQuery");

  std::printf("| driver: cuLaunchKernel alone | %.2f |\n", best_us(launch));
  a.cuStreamSynchronize(stream);
  std::printf("| driver: cuLaunchKernel + cuStreamSynchronize | %.2f |\n",
              best_us([&] { launch(); a.cuStreamSynchronize(stream); }));
  std::printf("| driver: cuLaunchKernel into an idle stream (mean) | %.2f |\n", idle_launch_us(launch, stream));
  if (query) {
    std::printf("| driver: cuLaunchKernel + spin on cuStreamQuery | %.2f |\n", best_us([&] {
                  launch();
                  while (query(stream) != drv::CUDA_SUCCESS) {
                  }
                }));
  }
  // The scheduling policy of the context's waits: the default (AUTO) spins
  // when there are fewer contexts than cores; these rows show what each costs.
  auto set_flags = driver_symbol<drv::CUresult (*)(unsigned)>("cuCtxSetFlags");
  if (set_flags) {
    const struct { unsigned flag; const char* name; } policies[] = {
        {0x1, "SPIN"}, {0x2, "YIELD"}, {0x4, "BLOCKING_SYNC"}, {0x0, "AUTO"}};
    for (auto p : policies) {
      if (set_flags(p.flag) != drv::CUDA_SUCCESS) continue;
      std::printf("| driver: launch + synchronize, CU_CTX_SCHED_%s | %.2f |\n", p.name,
                  best_us([&] { launch(); a.cuStreamSynchronize(stream); }));
    }
  }
  a.cuMemFree(in);
  a.cuMemFree(out);
  a.cuStreamDestroy(stream);
}

// The driver's round trip for the very function Alloy built for the
// metal_kernel (its plan's cubin, loaded here again): if this matches the
// one-line kernel's, what Alloy adds is all host work of its own.
void own_function_floor(alloy::array y, const alloy::array& input) {
  using namespace alloy;
  // The spec before eval, which releases the node; eval builds the variant
  // and stores its plan.
  const msl::KernelSpec spec = dynamic_cast<CustomKernel&>(y.primitive()).variant().spec;
  eval({y});
  auto bytes = jit::Cache::global().find(fast::cuda_plan_key(spec, cuda::device_arch()));
  auto plan = bytes ? fast::decode_plan(*bytes) : std::nullopt;
  if (!plan || plan->params.size() != 2) {
    std::printf("| driver: Alloy's own function | (no plan with two buffer parameters) |\n");
    return;
  }
  const drv::Api& a = drv::api();
  drv::Module module(plan->cubin->data());
  drv::CUfunction fn = module.function(plan->entry.c_str());
  Stream gpu_stream = default_stream(Device(Device::gpu));
  array on_device = inputs_on_device({input}, gpu_stream)[0];  // host-made arrays reach the GPU lazily
  drv::CUdeviceptr in = reinterpret_cast<drv::CUdeviceptr>(on_device.raw_data()), out = 0;
  drv::check(a.cuMemAlloc(&out, 64), "host_cost", "cuMemAlloc");
  drv::CUstream stream = cuda::stream_for(gpu_stream);
  alloy_msl::cuda::Dispatch d{{16, 1, 1}, {16, 1, 1}, 0};
  void* params[] = {&in, &out, &d};
  auto launch = [&] { a.cuLaunchKernel(fn, 1, 1, 1, 16, 1, 1, plan->dynamic_threadgroup, stream, params, nullptr); };
  drv::check(a.cuLaunchKernel(fn, 1, 1, 1, 16, 1, 1, plan->dynamic_threadgroup, stream, params, nullptr),
             "host_cost", "cuLaunchKernel(Alloy's own function)");
  drv::check(a.cuStreamSynchronize(stream), "host_cost", "cuStreamSynchronize");
  std::printf("| driver: Alloy's own function, launch + cuStreamSynchronize | %.2f |\n",
              best_us([&] { launch(); a.cuStreamSynchronize(stream); }));
  std::printf("| driver: Alloy's own function into an idle stream (mean) | %.2f |\n", idle_launch_us(launch, stream));
  a.cuMemFree(out);
}

void alloy_rows() {
  using namespace alloy;
  set_default_device(Device::gpu);
  std::vector<float> ones(16, 1.0f);
  array tiny(ones, Shape{16}, float32);
  eval({tiny});
  auto k = fast::metal_kernel("tiny", {"inp"}, {"out"}, "uint i = thread_position_in_grid.x; out[i] = inp[i] + 1.0f;");
  fast::KernelCall call;
  call.inputs = {tiny};
  call.output_shapes = {Shape{16}};
  call.output_dtypes = {float32};
  call.grid = {16, 1, 1};
  call.threadgroup = {16, 1, 1};

  auto row = [](const char* label, const std::function<array()>& build) {
    const int n = 5000;
    double best_build = 1e30, best_eval = 1e30, best_drop = 1e30;
    for (int i = 0; i < 2000; ++i) eval({build()});
    for (int r = 0; r < 5; ++r) {
      double t_build = 0, t_eval = 0, t_drop = 0;
      for (int i = 0; i < n; ++i) {
        auto t0 = Clock::now();
        std::optional<array> y = build();
        auto t1 = Clock::now();
        eval({*y});
        auto t2 = Clock::now();
        y.reset();
        auto t3 = Clock::now();
        t_build += std::chrono::duration<double, std::micro>(t1 - t0).count();
        t_eval += std::chrono::duration<double, std::micro>(t2 - t1).count();
        t_drop += std::chrono::duration<double, std::micro>(t3 - t2).count();
      }
      best_build = std::min(best_build, t_build / n);
      best_eval = std::min(best_eval, t_eval / n);
      best_drop = std::min(best_drop, t_drop / n);
    }
    double own = best_us([&] { eval({build()}); });
    std::printf("| alloy C++: %s | build %.2f, eval %.2f, drop %.2f (clock reads included) | call + own eval %.2f |\n",
                label, best_build, best_eval, best_drop, own);
  };
  row("metal_kernel", [&] { return k(call)[0]; });
  {
    // eval's steps for one node, each timed: what runs before the launch
    // (outputs, allocation, arguments) shows as the launch step's excess
    // over the driver's idle-stream launch above.
    const int n = 5000;
    double t_outputs = 0, t_launch = 0, t_release = 0, t_wait = 0;
    for (int i = 0; i < 2000 + n; ++i) {
      array y = k(call)[0];
      auto t0 = Clock::now();
      std::vector<array> outs = y.outputs();
      auto t1 = Clock::now();
      eval_primitive(y.primitive(), y.inputs(), outs);
      auto t2 = Clock::now();
      y.set_status(array::Status::evaluated);
      y.detach();
      auto t3 = Clock::now();
      cuda::synchronize_all();
      auto t4 = Clock::now();
      if (i < 2000) continue;
      t_outputs += std::chrono::duration<double, std::micro>(t1 - t0).count();
      t_launch += std::chrono::duration<double, std::micro>(t2 - t1).count();
      t_release += std::chrono::duration<double, std::micro>(t3 - t2).count();
      t_wait += std::chrono::duration<double, std::micro>(t4 - t3).count();
    }
    std::printf("| alloy C++: metal_kernel eval steps (mean) | outputs %.2f, eval_primitive %.2f, release %.2f, "
                "wait %.2f |\n", t_outputs / n, t_launch / n, t_release / n, t_wait / n);
  }
  row("tiny + tiny", [&] { return tiny + tiny; });
  own_function_floor(k(call)[0], tiny);
}

}  // namespace

int main() {
  if (!alloy::cuda_driver::is_available()) {
    std::printf("no GPU: %s\n", alloy::cuda_driver::unavailable_reason().c_str());
    return 1;
  }
  alloy::cuda::ensure_context();
  std::printf("| what | us |\n|---|---|\n");
  driver_floor();
  alloy_rows();
  return 0;
}

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
#include <array>
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

// A one-line kernel (b[i] = a[i] + 1) and a non-blocking stream, as Alloy
// launches on.
struct TinyKernel {
  drv::Module module;
  drv::CUfunction fn = nullptr;
  drv::CUstream stream = nullptr;
  TinyKernel() {
    alloy::jit::NvrtcOptions opts;
    opts.arch = alloy::cuda::device_arch();
    auto cubin = alloy::jit::compile_cuda(
        "extern \"C\" __global__ void tiny(const float* a, float* b) { int i = threadIdx.x; b[i] = a[i] + 1.0f; }",
        "tiny.cu", opts);
    module = drv::Module(cubin->data());
    fn = module.function("tiny");
    drv::check(drv::api().cuStreamCreate(&stream, drv::kStreamNonBlocking), "host_cost", "cuStreamCreate");
  }
  ~TinyKernel() { drv::api().cuStreamDestroy(stream); }
};

void driver_floor() {
  const drv::Api& a = drv::api();
  const TinyKernel tiny;
  drv::CUfunction fn = tiny.fn;
  drv::CUstream stream = tiny.stream;
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

// A chain of dependent tiny ops evaluated once (issue 16's deep lazy
// graph): per op, building the chain, eval as a whole, and eval's steps
// node by node (outputs, eval_primitive, marking and release), against the
// allocator's malloc + free pair and back-to-back launches above.
void chain_rows() {
  using namespace alloy;
  set_default_device(Device::gpu);
  std::vector<float> ones(16, 1.0f);
  array x0(ones, Shape{16}, float32), y(ones, Shape{16}, float32);
  eval({x0, y});
  const int n = 2000;
  auto build = [&] {
    array x = x0;
    for (int i = 0; i < n; ++i) x = x + y;
    return x;
  };
  eval({build()});
  double best_build = 1e30, best_eval = 1e30;
  for (int r = 0; r < 7; ++r) {
    auto t0 = Clock::now();
    array x = build();
    auto t1 = Clock::now();
    eval({x});
    auto t2 = Clock::now();
    best_build = std::min(best_build, std::chrono::duration<double, std::micro>(t1 - t0).count() / n);
    best_eval = std::min(best_eval, std::chrono::duration<double, std::micro>(t2 - t1).count() / n);
  }
  std::printf("| alloy C++: chain of %d adds, per op | build %.2f, eval %.2f |\n", n, best_build, best_eval);
  double t_outputs = 1e30, t_prim = 1e30, t_release = 1e30;
  for (int r = 0; r < 7; ++r) {
    array x = build();
    std::vector<array> tape;
    for (array a = x; !a.is_evaluated(); a = a.inputs()[0]) tape.push_back(a);
    std::reverse(tape.begin(), tape.end());
    double o = 0, p = 0, rel = 0;
    for (auto& a : tape) {
      auto t0 = Clock::now();
      std::vector<array> outs = a.outputs();
      auto t1 = Clock::now();
      eval_primitive(a.primitive(), a.inputs(), outs);
      auto t2 = Clock::now();
      a.set_status(array::Status::evaluated);
      auto t3 = Clock::now();
      o += std::chrono::duration<double, std::micro>(t1 - t0).count();
      p += std::chrono::duration<double, std::micro>(t2 - t1).count();
      rel += std::chrono::duration<double, std::micro>(t3 - t2).count();
    }
    auto t4 = Clock::now();
    for (auto& a : tape) a.detach();
    tape.clear();
    rel += std::chrono::duration<double, std::micro>(Clock::now() - t4).count();
    cuda::synchronize_all();
    t_outputs = std::min(t_outputs, o / n);
    t_prim = std::min(t_prim, p / n);
    t_release = std::min(t_release, rel / n);
  }
  std::printf("| alloy C++: chain eval steps per node (best) | outputs %.2f, eval_primitive %.2f, mark+release %.2f |\n",
              t_outputs, t_prim, t_release);
  Allocator& gpu = allocator(Device(Device::gpu));
  std::printf("| alloy C++: GPU allocator malloc + free (64 B) | %.2f |\n",
              best_us([&] { gpu.free(gpu.malloc(64)); }));
}

// What CUDA graphs would cost for such a chain: N dependent launches of a
// one-line kernel, launched directly, stream-captured into a graph
// (instantiated fresh, or updated into a cached executable), or added as
// explicit kernel nodes. Per launch, microseconds.
void graph_rows() {
  using Graph = void*;
  using GraphExec = void*;
  using GraphNode = void*;
  struct KernelNodeParams {  // CUDA_KERNEL_NODE_PARAMS (v2)
    drv::CUfunction func;
    unsigned gx, gy, gz, bx, by, bz, shared;
    void** params;
    void** extra;
    void* kern;
    void* ctx;
  };
  struct UpdateInfo {
    int result;
    GraphNode error_node, error_from;
  };
  auto begin = driver_symbol<drv::CUresult (*)(drv::CUstream, int)>("cuStreamBeginCapture_v2");
  auto end = driver_symbol<drv::CUresult (*)(drv::CUstream, Graph*)>("cuStreamEndCapture");
  auto instantiate = driver_symbol<drv::CUresult (*)(GraphExec*, Graph, unsigned long long)>("cuGraphInstantiateWithFlags");
  auto glaunch = driver_symbol<drv::CUresult (*)(GraphExec, drv::CUstream)>("cuGraphLaunch");
  auto update = driver_symbol<drv::CUresult (*)(GraphExec, Graph, UpdateInfo*)>("cuGraphExecUpdate_v2");
  auto gdestroy = driver_symbol<drv::CUresult (*)(Graph)>("cuGraphDestroy");
  auto edestroy = driver_symbol<drv::CUresult (*)(GraphExec)>("cuGraphExecDestroy");
  auto gcreate = driver_symbol<drv::CUresult (*)(Graph*, unsigned)>("cuGraphCreate");
  auto add_kernel = driver_symbol<drv::CUresult (*)(GraphNode*, Graph, const GraphNode*, size_t, const KernelNodeParams*)>(
      "cuGraphAddKernelNode_v2");
  auto set_params = driver_symbol<drv::CUresult (*)(GraphExec, GraphNode, const KernelNodeParams*)>(
      "cuGraphExecKernelNodeSetParams_v2");
  if (!begin || !end || !instantiate || !glaunch || !update || !gdestroy || !edestroy || !gcreate || !add_kernel ||
      !set_params) {
    std::printf("| graphs | (driver entry points missing) |\n");
    return;
  }
  const drv::Api& a = drv::api();
  const TinyKernel tiny;
  drv::CUfunction fn = tiny.fn;
  drv::CUstream stream = tiny.stream;
  const int n = 2000;
  std::vector<drv::CUdeviceptr> bufs(n + 1);
  for (auto& b : bufs) drv::check(a.cuMemAlloc(&b, 64), "host_cost", "cuMemAlloc");
  std::vector<std::array<void*, 2>> params(n);
  for (int i = 0; i < n; ++i) params[i] = {&bufs[i], &bufs[i + 1]};
  auto launches = [&] {
    for (int i = 0; i < n; ++i) a.cuLaunchKernel(fn, 1, 1, 1, 16, 1, 1, 0, stream, params[i].data(), nullptr);
  };
  auto us = [](Clock::time_point t0, Clock::time_point t1) {
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / 2000;
  };
  double direct = 1e30, cap = 1e30, inst = 1e30, run = 1e30, upd = 1e30, run2 = 1e30, add = 1e30, setp = 1e30;
  GraphExec cached = nullptr;
  for (int r = 0; r < 7; ++r) {
    auto t0 = Clock::now();
    launches();
    a.cuStreamSynchronize(stream);
    direct = std::min(direct, us(t0, Clock::now()));

    Graph g = nullptr;
    GraphExec e = nullptr;
    t0 = Clock::now();
    begin(stream, 2 /* relaxed */);
    launches();
    end(stream, &g);
    auto t1 = Clock::now();
    instantiate(&e, g, 0);
    auto t2 = Clock::now();
    glaunch(e, stream);
    a.cuStreamSynchronize(stream);
    auto t3 = Clock::now();
    cap = std::min(cap, us(t0, t1));
    inst = std::min(inst, us(t1, t2));
    run = std::min(run, us(t2, t3));
    if (!cached) {
      cached = e;
    } else {
      edestroy(e);
      UpdateInfo info{};
      t0 = Clock::now();
      drv::CUresult ur = update(cached, g, &info);
      t1 = Clock::now();
      glaunch(cached, stream);
      a.cuStreamSynchronize(stream);
      t2 = Clock::now();
      if (ur == drv::CUDA_SUCCESS) {
        upd = std::min(upd, us(t0, t1));
        run2 = std::min(run2, us(t1, t2));
      }
    }
    gdestroy(g);

    Graph h = nullptr;
    gcreate(&h, 0);
    std::vector<GraphNode> nodes(n);
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      KernelNodeParams p{fn, 1, 1, 1, 16, 1, 1, 0, params[i].data(), nullptr, nullptr, nullptr};
      add_kernel(&nodes[i], h, i ? &nodes[i - 1] : nullptr, i ? 1 : 0, &p);
    }
    t1 = Clock::now();
    add = std::min(add, us(t0, t1));
    GraphExec he = nullptr;
    instantiate(&he, h, 0);
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      KernelNodeParams p{fn, 1, 1, 1, 16, 1, 1, 0, params[(i + r) % n].data(), nullptr, nullptr, nullptr};
      set_params(he, nodes[i], &p);
    }
    t1 = Clock::now();
    setp = std::min(setp, us(t0, t1));
    edestroy(he);
    gdestroy(h);
  }
  std::printf("| graphs: %d dependent launches, direct + sync | %.2f |\n", n, direct);
  std::printf("| graphs: stream capture | %.2f |\n| graphs: instantiate | %.2f |\n| graphs: launch + sync | %.2f |\n",
              cap, inst, run);
  std::printf("| graphs: exec update from a new capture | %.2f |\n| graphs: launch updated + sync | %.2f |\n", upd,
              run2);
  std::printf("| graphs: explicit cuGraphAddKernelNode | %.2f |\n| graphs: cuGraphExecKernelNodeSetParams | %.2f |\n",
              add, setp);
  if (cached) edestroy(cached);
  for (auto& b : bufs) a.cuMemFree(b);
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
  chain_rows();
  graph_rows();
  return 0;
}

// Times the seed grid_sample VJP kernel's CPU translation alone, on one core,
// against a hand-written C++ loop of the same algorithm (docs/benchmarks.md).
//
//   python -c '...verbose=True...'  # print the translation; save it as vjp.cpp
//   R=~/.cache/alloy/runtime-<hash>  # the runtime headers the JIT uses
//   g++ -std=c++20 -O2 -fvect-cost-model=cheap -fPIC -shared -fvisibility=hidden \
//       -fno-exceptions -fno-rtti -fno-math-errno -march=native -I$R -o vjp.so vjp.cpp
//   g++ -std=c++20 -O2 -march=native -fvect-cost-model=cheap -I$R \
//       benchmarks/cpp/vjp_translation_harness.cpp -o harness -ldl
//   ./harness vjp.so     # the translation (plain adds: one worker's copy)
//   ./harness            # the hand-written loop
//
// Shapes: the benchmark's (x 2x256x256x64, grid 2x128x128x2); best of 7.
// Both print the sums of their outputs, which must agree.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "cpu_launch.h"

namespace {
constexpr int B = 2, H = 256, W = 256, C = 64, gH = 128, gW = 128;

// The VJP's algorithm with the corner tests outside a vectorisable loop over
// the channels and 64-bit offsets.
void hand_written(const float* __restrict__ x, const float* __restrict__ grid, const float* __restrict__ cot,
                  float* __restrict__ x_grad, float* __restrict__ grid_grad) {
  for (long row = 0; row < long(B) * gH * gW; ++row) {
    const float ix = ((grid[row * 2] + 1) * W - 1) / 2, iy = ((grid[row * 2 + 1] + 1) * H - 1) / 2;
    const int x0 = int(std::floor(ix)), y0 = int(std::floor(iy)), x1 = x0 + 1, y1 = y0 + 1;
    const long base = row / (gH * gW) * long(H) * W * C;
    const float* c = cot + row * C;
    float gix = 0, giy = 0;
    auto corner = [&](int yy, int xx, float w, float dx, float dy) {
      if (yy < 0 || yy > H - 1 || xx < 0 || xx > W - 1) return;
      const long off = base + long(yy) * W * C + long(xx) * C;
      float s = 0;
#pragma GCC ivdep
      for (int ch = 0; ch < C; ++ch) {
        x_grad[off + ch] += w * c[ch];
        s += x[off + ch] * c[ch];
      }
      gix += dx * s;
      giy += dy * s;
    };
    corner(y0, x0, (x1 - ix) * (y1 - iy), -(y1 - iy), -(x1 - ix));
    corner(y0, x1, (ix - x0) * (y1 - iy), y1 - iy, -(ix - x0));
    corner(y1, x0, (x1 - ix) * (iy - y0), -(iy - y0), x1 - ix);
    corner(y1, x1, (ix - x0) * (iy - y0), iy - y0, ix - x0);
    grid_grad[row * 2] += gix * (W / 2);
    grid_grad[row * 2 + 1] += giy * (H / 2);
  }
}
}  // namespace

int main(int argc, char** argv) {
  using alloy_msl::cpu::Launch;
  void (*kernel)(const Launch*) = nullptr;
  if (argc > 1) {
    void* so = dlopen(argv[1], RTLD_NOW);
    if (!so) {
      std::printf("%s\n", dlerror());
      return 1;
    }
    kernel = reinterpret_cast<void (*)(const Launch*)>(dlsym(so, "alloy_kernel_main"));
  }
  std::vector<float> x(size_t(B) * H * W * C), grid(size_t(B) * gH * gW * 2), cot(size_t(B) * gH * gW * C),
      x_grad(x.size()), grid_grad(grid.size());
  std::mt19937 gen(0);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(-1.1f, 1.1f);
  for (float& v : x) v = normal(gen);
  for (float& v : cot) v = normal(gen);
  for (float& v : grid) v = uniform(gen);

  int x_shape[4] = {B, H, W, C}, grid_shape[4] = {B, gH, gW, 2};
  void* buffers[5] = {x.data(), grid.data(), cot.data(), x_grad.data(), grid_grad.data()};
  const int* shapes[5] = {x_shape, grid_shape, nullptr, nullptr, nullptr};
  const int64_t* strides[5] = {};
  int ndims[5] = {4, 4, 4, 4, 4};
  char error[512] = {0};
  Launch launch{};
  launch.buffers = buffers;
  launch.shapes = shapes;
  launch.strides = strides;
  launch.ndims = ndims;
  const unsigned threads = unsigned(B) * gH * gW * C;  // C is already a multiple of 32
  launch.grid[0] = threads;
  launch.grid[1] = launch.grid[2] = 1;
  launch.threadgroup[0] = 256;
  launch.threadgroup[1] = launch.threadgroup[2] = 1;
  launch.tg_begin = 0;
  launch.tg_end = threads / 256;
  launch.error = error;
  launch.error_size = sizeof error;
  launch.plain_adds = 1;

  double best = 1e30;
  for (int rep = 0; rep < 7; ++rep) {
    std::memset(x_grad.data(), 0, x_grad.size() * sizeof(float));
    std::memset(grid_grad.data(), 0, grid_grad.size() * sizeof(float));
    const auto t0 = std::chrono::steady_clock::now();
    if (kernel) kernel(&launch);
    else hand_written(x.data(), grid.data(), cot.data(), x_grad.data(), grid_grad.data());
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  double sx = 0, sg = 0;
  for (float v : x_grad) sx += v;
  for (float v : grid_grad) sg += v;
  std::printf("%s: best %.2f ms on one core%s%s; sums %.6g %.6g\n", kernel ? argv[1] : "hand-written loop", best,
              error[0] ? "; error: " : "", error, sx, sg);
  return error[0] ? 1 : 0;
}

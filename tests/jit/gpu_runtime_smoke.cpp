// Runs the translated-form kernels of cuda_test_kernels.h on a real GPU and
// compares with host references computed in double precision. Outputs are
// poisoned before each launch; inputs are random (the seed is printed; set
// ALLOY_TEST_SEED to replay). Skips only when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "alloy/types/bfloat16.h"
#include "cuda_test_kernels.h"
#include "jit/cuda_driver.h"
#include "jit/nvrtc.h"
#include "msl/runtime/cuda_launch.h"
#include "../common/test_seed.h"

namespace {

namespace cd = alloy::cuda_driver;
using alloy_msl::cuda::Dispatch;
using f16 = _Float16;
using bf16 = alloy::bfloat16_t;

using alloy_test::test_seed;

#define REQUIRE_GPU()                                                                 \
  do {                                                                                \
    if (!cd::is_available()) GTEST_SKIP() << "no GPU present: " << cd::unavailable_reason(); \
    cd::make_current(0);                                                              \
  } while (0)

// A device allocation, freed on destruction.
struct Buffer {
  cd::CUdeviceptr ptr = 0;
  size_t bytes = 0;
  explicit Buffer(size_t n) : bytes(n) { cd::check(cd::api().cuMemAlloc(&ptr, std::max<size_t>(n, 4)), "Buffer", "cuMemAlloc"); }
  ~Buffer() {
    if (ptr) cd::api().cuMemFree(ptr);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};
template <class T> std::unique_ptr<Buffer> upload(const std::vector<T>& v) {
  auto b = std::make_unique<Buffer>(v.size() * sizeof(T));
  cd::check(cd::api().cuMemcpyHtoD(b->ptr, v.data(), b->bytes), "upload", "cuMemcpyHtoD");
  return b;
}
// A buffer filled with `byte` (0xff: NaN for floats, -1 for ints).
std::unique_ptr<Buffer> poisoned(size_t bytes, unsigned char byte = 0xff) {
  auto b = std::make_unique<Buffer>(bytes);
  cd::check(cd::api().cuMemsetD8Async(b->ptr, byte, bytes, nullptr), "poisoned", "cuMemsetD8Async");
  return b;
}
template <class T> std::vector<T> download(const Buffer& b) {
  std::vector<T> v(b.bytes / sizeof(T));
  cd::check(cd::api().cuCtxSynchronize(), "download", "cuCtxSynchronize");
  cd::check(cd::api().cuMemcpyDtoH(v.data(), b.ptr, b.bytes), "download", "cuMemcpyDtoH");
  return v;
}

struct Kernel {
  cd::Module module;
  cd::CUfunction fn = nullptr;
};
Kernel load(const std::string& source, const char* name, std::vector<std::string> defines = {}) {
  alloy::jit::NvrtcOptions o;
  for (auto& d : defines) o.extra_options.push_back("-D" + d);
  auto out = alloy::jit::nvrtc_compile(source, name, o);
  Kernel k;
  k.module = cd::Module(out.cubin.data());
  k.fn = k.module.function("alloy_kernel_main");
  return k;
}

Dispatch dispatch(unsigned gx, unsigned gy, unsigned gz, unsigned tx, unsigned ty, unsigned tz) {
  Dispatch d{{gx, gy, gz}, {std::min(tx, gx), std::min(ty, gy), std::min(tz, gz)}};
  return d;
}

// Launches with the glue's parameters: the buffers in order, then `d`.
void launch(const Kernel& k, const Dispatch& d, std::vector<const Buffer*> buffers, std::vector<int> ints = {}) {
  std::vector<void*> params;
  std::vector<cd::CUdeviceptr> ptrs;
  ptrs.reserve(buffers.size());
  for (const Buffer* b : buffers) ptrs.push_back(b->ptr);
  for (auto& p : ptrs) params.push_back(&p);
  for (auto& i : ints) params.push_back(&i);
  Dispatch dd = d;
  params.push_back(&dd);
  unsigned grid[3] = {alloy_msl::cuda::threadgroups_per_grid(d, 0), alloy_msl::cuda::threadgroups_per_grid(d, 1),
                      alloy_msl::cuda::threadgroups_per_grid(d, 2)};
  unsigned block[3] = {alloy_msl::cuda::threads_per_block(d), 1, 1};
  cd::launch(k.fn, grid, block, 0, nullptr, params.data());
  cd::check(cd::api().cuCtxSynchronize(), "launch", "cuCtxSynchronize");
}

TEST(GpuRuntime, SeedExpHalf) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed());
  std::normal_distribution<float> nd;
  const unsigned n = 1000;  // not a multiple of the threadgroup: a partial last group
  std::vector<f16> in(n);
  for (auto& v : in) v = f16(nd(rng));
  auto bin = upload(in);
  auto bout = poisoned(n * sizeof(f16));
  Kernel k = load(alloy_test::exp_kernel(), "exp.cu");
  launch(k, dispatch(n, 1, 1, 256, 1, 1), {bin.get(), bout.get()});
  auto out = download<f16>(*bout);
  for (unsigned i = 0; i < n; ++i) {
    double ref = std::exp(double(in[i]));
    ASSERT_NEAR(double(out[i]), ref, 1e-3 * std::abs(ref) + 1e-6) << "i=" << i << " x=" << float(in[i]);
  }
}

// grid_sample reference in double; x (B,H,W,C), grid (B,gH,gW,2).
void grid_sample_ref(const std::vector<float>& x, const std::vector<float>& grid, int B, int H, int W, int C,
                     int gH, int gW, std::vector<double>& out) {
  out.assign(size_t(B) * gH * gW * C, 0.0);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < gH * gW; ++i) {
      size_t gi = (size_t(b) * gH * gW + i) * 2;
      double ix = ((grid[gi] + 1.0) * W - 1) / 2, iy = ((grid[gi + 1] + 1.0) * H - 1) / 2;
      int x0 = int(std::floor(ix)), y0 = int(std::floor(iy));
      for (int c = 0; c < C; ++c) {
        double acc = 0;
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) {
            int xx = x0 + dx, yy = y0 + dy;
            if (xx < 0 || xx >= W || yy < 0 || yy >= H) continue;
            double wgt = (dx ? ix - x0 : x0 + 1 - ix) * (dy ? iy - y0 : y0 + 1 - iy);
            acc += wgt * x[((size_t(b) * H + yy) * W + xx) * C + c];
          }
        out[(size_t(b) * gH * gW + i) * C + c] = acc;
      }
    }
}

struct GridSampleCase {
  int B = 2, H = 13, W = 17, C = 40, gH = 9, gW = 11;
  std::vector<float> x, grid, cot;
  explicit GridSampleCase(std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.1f, 1.1f), v(-1.f, 1.f);
    x.resize(size_t(B) * H * W * C);
    grid.resize(size_t(B) * gH * gW * 2);
    cot.resize(size_t(B) * gH * gW * C);
    for (auto& e : x) e = v(rng);
    for (auto& e : grid) e = u(rng);
    for (auto& e : cot) e = v(rng);
  }
};

TEST(GpuRuntime, GridSampleForwardFloat) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 1);
  GridSampleCase g(rng);
  std::vector<int> xs = {g.B, g.H, g.W, g.C}, gs = {g.B, g.gH, g.gW, 2};
  auto bx = upload(g.x), bg = upload(g.grid), bxs = upload(xs), bgs = upload(gs);
  size_t n = size_t(g.B) * g.gH * g.gW * g.C;
  auto bout = poisoned(n * 4);
  Kernel k = load(alloy_test::grid_sample_forward(), "grid_sample.cu", {"ELEM=float"});
  launch(k, dispatch(unsigned(n), 1, 1, 256, 1, 1), {bx.get(), bxs.get(), bg.get(), bgs.get(), bout.get()});
  auto out = download<float>(*bout);
  std::vector<double> ref;
  grid_sample_ref(g.x, g.grid, g.B, g.H, g.W, g.C, g.gH, g.gW, ref);
  for (size_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], ref[i], 1e-5) << "i=" << i;
}

TEST(GpuRuntime, GridSampleVjpFloat) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 2);
  GridSampleCase g(rng);
  std::vector<int> xs = {g.B, g.H, g.W, g.C}, gs = {g.B, g.gH, g.gW, 2};
  auto bx = upload(g.x), bg = upload(g.grid), bxs = upload(xs), bgs = upload(gs), bc = upload(g.cot);
  auto bxg = poisoned(g.x.size() * 4, 0), bgg = poisoned(g.grid.size() * 4, 0);  // init_value = 0
  int C_padded = (g.C + 31) / 32 * 32;
  unsigned n = unsigned(g.B * g.gH * g.gW * C_padded);
  Kernel k = load(alloy_test::grid_sample_vjp(), "grid_sample_vjp.cu", {"ELEM=float"});
  launch(k, dispatch(n, 1, 1, 256, 1, 1), {bx.get(), bxs.get(), bg.get(), bgs.get(), bc.get(), bxg.get(), bgg.get()});
  auto xg = download<float>(*bxg), gg = download<float>(*bgg);
  // Reference: the same formulas in double.
  std::vector<double> rxg(g.x.size(), 0.0), rgg(g.grid.size(), 0.0);
  int H = g.H, W = g.W, C = g.C;
  for (int b = 0; b < g.B; ++b)
    for (int i = 0; i < g.gH * g.gW; ++i) {
      size_t gi = (size_t(b) * g.gH * g.gW + i) * 2;
      double ix = ((g.grid[gi] + 1.0) * W - 1) / 2, iy = ((g.grid[gi + 1] + 1.0) * H - 1) / 2;
      int x0 = int(std::floor(ix)), y0 = int(std::floor(iy));
      double gix = 0, giy = 0;
      for (int c = 0; c < C; ++c) {
        double cot = g.cot[(size_t(b) * g.gH * g.gW + i) * C + c];
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) {
            int xx = x0 + dx, yy = y0 + dy;
            if (xx < 0 || xx >= W || yy < 0 || yy >= H) continue;
            double wx = dx ? ix - x0 : x0 + 1 - ix, wy = dy ? iy - y0 : y0 + 1 - iy;
            size_t off = ((size_t(b) * H + yy) * W + xx) * C + c;
            rxg[off] += wx * wy * cot;
            double I = g.x[off];
            gix += (dx ? 1 : -1) * wy * I * cot;
            giy += (dy ? 1 : -1) * wx * I * cot;
          }
      }
      rgg[gi] += gix * (W / 2);
      rgg[gi + 1] += giy * (H / 2);
    }
  for (size_t i = 0; i < xg.size(); ++i) ASSERT_NEAR(xg[i], rxg[i], 1e-4) << "x_grad i=" << i;
  for (size_t i = 0; i < gg.size(); ++i) ASSERT_NEAR(gg[i], rgg[i], 1e-3 * (1 + std::abs(rgg[i]))) << "grid_grad i=" << i;
}

TEST(GpuRuntime, ThreadgroupReducePartialGroups) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 3);
  std::uniform_int_distribution<int> ud(-8, 8);
  const unsigned gx = 70, gy = 45, tx = 32, ty = 16;  // partial groups in x and y
  std::vector<float> in(gx * gy);
  for (auto& v : in) v = float(ud(rng));
  unsigned ngx = (gx + tx - 1) / tx, ngy = (gy + ty - 1) / ty;
  auto bin = upload(in);
  auto bout = poisoned(ngx * ngy * 4);
  Kernel k = load(alloy_test::kThreadgroupReduce, "tg_reduce.cu");
  launch(k, dispatch(gx, gy, 1, tx, ty, 1), {bin.get(), bout.get()});
  auto out = download<float>(*bout);
  for (unsigned by = 0; by < ngy; ++by)
    for (unsigned bx = 0; bx < ngx; ++bx) {
      double s = 0;
      for (unsigned y = by * ty; y < std::min(gy, by * ty + ty); ++y)
        for (unsigned x = bx * tx; x < std::min(gx, bx * tx + tx); ++x) s += in[x + gx * y];
      EXPECT_EQ(out[bx + ngx * by], s) << "group " << bx << "," << by;
    }
}

TEST(GpuRuntime, ThreadIdsAllAttributes) {
  REQUIRE_GPU();
  Kernel k = load(alloy_test::kThreadIds, "thread_ids.cu");
  for (auto [g, t] : std::vector<std::pair<std::array<unsigned, 3>, std::array<unsigned, 3>>>{
           {{100, 1, 1}, {64, 1, 1}}, {{37, 11, 5}, {8, 4, 3}}, {{5, 70, 3}, {2, 33, 2}}, {{33, 2, 2}, {40, 1, 1}}}) {
    Dispatch d = dispatch(g[0], g[1], g[2], t[0], t[1], t[2]);
    size_t n = size_t(g[0]) * g[1] * g[2];
    auto bout = poisoned(n * 38 * 4);
    launch(k, d, {bout.get()});
    auto out = download<uint32_t>(*bout);
    const unsigned* tg = d.threadgroup;
    unsigned ng[3], req = tg[0] * tg[1] * tg[2];
    for (int i = 0; i < 3; ++i) ng[i] = (g[i] + tg[i] - 1) / tg[i];
    for (unsigned z = 0; z < g[2]; ++z)
      for (unsigned y = 0; y < g[1]; ++y)
        for (unsigned x = 0; x < g[0]; ++x) {
          unsigned p[3] = {x, y, z}, grp[3], loc[3], act[3];
          for (int i = 0; i < 3; ++i) {
            grp[i] = p[i] / tg[i];
            loc[i] = p[i] % tg[i];
            act[i] = std::min(tg[i], g[i] - grp[i] * tg[i]);
          }
          unsigned cnt = act[0] * act[1] * act[2], lin = loc[0] + act[0] * (loc[1] + act[1] * loc[2]);
          std::vector<unsigned> e = {x, y, z, loc[0], loc[1], loc[2], grp[0], grp[1], grp[2], act[0], act[1], act[2],
                                     g[0], g[1], g[2], ng[0], ng[1], ng[2], g[0], g[1], g[2], 0, 0, 0,
                                     tg[0], tg[1], tg[2], lin, lin % 32, 32, lin / 32, (cnt + 31) / 32,
                                     (req + 31) / 32, 32, lin % 4, lin / 4, (cnt + 3) / 4, (req + 3) / 4};
          const uint32_t* o = &out[38 * (x + g[0] * (y + g[1] * z))];
          for (int i = 0; i < 38; ++i)
            ASSERT_EQ(o[i], e[i]) << "attribute value " << i << " at " << x << "," << y << "," << z << " grid "
                                  << g[0] << "x" << g[1] << "x" << g[2] << " tg " << tg[0] << "x" << tg[1] << "x"
                                  << tg[2];
        }
  }
}

// Host model of one SIMD group (or quad) of `n` present lanes.
TEST(GpuRuntime, SimdAndQuadFunctionsOnPartialGroups) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 4);
  const unsigned n = 298, tgs = 96;  // groups of 96 (3 full warps), last group 10 threads (quads 4, 4, 2)
  std::uniform_int_distribution<int> small(-20, 20), pick(0, 2);
  std::vector<float> f(n), p(n);
  std::vector<uint32_t> u(n);
  for (unsigned i = 0; i < n; ++i) {
    f[i] = float(small(rng));
    p[i] = std::array<float, 3>{1.f, 2.f, -1.f}[pick(rng)];
    u[i] = uint32_t(rng());
  }
  auto bf = upload(f), bp = upload(p), bu = upload(u);
  const int K = alloy_test::kSimdOutputs;
  auto bfo = poisoned(n * K * 4), bio = poisoned(n * K * 4);
  Kernel k = load(alloy_test::kSimdFunctions, "simd.cu");
  launch(k, dispatch(n, 1, 1, tgs, 1, 1), {bf.get(), bp.get(), bu.get(), bfo.get(), bio.get()});
  auto fo = download<float>(*bfo);
  auto io = download<int32_t>(*bio);

  for (unsigned g = 0; g < n; ++g) {
    unsigned group_start = g / tgs * tgs, group_n = std::min(tgs, n - group_start);
    unsigned lane = (g - group_start) % 32, warp0 = g - lane;
    unsigned wn = std::min(32u, group_start + group_n - warp0);  // lanes present in my warp
    unsigned q0 = g & ~3u, qn = std::min(4u, group_start + group_n - (warp0 + (lane & ~3u)));
    unsigned ql = lane & 3;
    auto F = [&](unsigned l) { return f[warp0 + l]; };
    auto P = [&](unsigned l) { return p[warp0 + l]; };
    auto U = [&](unsigned l) { return u[warp0 + l]; };
    auto Ki = [&](unsigned l) { return int(U(l) % 1000u) - 500; };
    double sum = 0, prod = 1, mn = 1e9, mx = -1e9, inc = 0, exc = 0, pinc = 1, pexc = 1;
    for (unsigned l = 0; l < wn; ++l) {
      sum += F(l), prod *= P(l), mn = std::min<double>(mn, F(l)), mx = std::max<double>(mx, F(l));
      if (l <= lane) inc += F(l), pinc *= P(l);
      if (l < lane) exc += F(l), pexc *= P(l);
    }
    double qsum = 0, qprod = 1, qmn = 1e9, qmx = -1e9, qinc = 0, qexc = 0, qpexc = 1;
    for (unsigned l = 0; l < qn; ++l) {
      float v = f[q0 + l];
      qsum += v, qprod *= p[q0 + l], qmn = std::min<double>(qmn, v), qmx = std::max<double>(qmx, v);
      if (l <= ql) qinc += v;
      if (l < ql) qexc += v, qpexc *= p[q0 + l];
    }
    const float* o = &fo[size_t(g) * K];
    std::string where = "thread " + std::to_string(g) + " lane " + std::to_string(lane) + " of " + std::to_string(wn);
    EXPECT_EQ(o[0], sum) << where;
    EXPECT_EQ(o[1], prod) << where;
    EXPECT_EQ(o[2], mn) << where;
    EXPECT_EQ(o[3], mx) << where;
    EXPECT_EQ(o[4], inc) << where;
    EXPECT_EQ(o[5], exc) << where;
    EXPECT_EQ(o[6], pinc) << where;
    EXPECT_EQ(o[7], pexc) << where;
    unsigned s8 = (lane * 7 + 3) % 32;
    if (s8 < wn) EXPECT_EQ(o[8], F(s8)) << where;
    EXPECT_EQ(o[9], F(0)) << where;
    EXPECT_EQ(o[10], F(0)) << where;
    EXPECT_EQ(o[11], lane >= 3 ? F(lane - 3) : F(lane)) << where;
    EXPECT_EQ(o[12], lane + 3 < wn ? F(lane + 3) : F(lane)) << where;
    EXPECT_EQ(o[13], (lane ^ 5) < wn ? F(lane ^ 5) : F(lane)) << where;
    EXPECT_EQ(o[14], F((lane + wn - 5 % wn) % wn)) << where;
    EXPECT_EQ(o[15], F((lane + 5) % wn)) << where;
    if (wn == 32) {
      unsigned j = lane % 8, base = lane - j;
      EXPECT_EQ(o[16], j >= 2 ? F(lane - 2) : -F(base + 8 - 2 + j)) << where;
      EXPECT_EQ(o[17], j + 2 < 8 ? F(lane + 2) : -F(base + j + 2 - 8)) << where;
    }
    EXPECT_EQ(o[18], qsum) << where;
    EXPECT_EQ(o[19], qprod) << where;
    EXPECT_EQ(o[20], qmn) << where;
    EXPECT_EQ(o[21], qmx) << where;
    EXPECT_EQ(o[22], qinc) << where;
    EXPECT_EQ(o[23], qexc) << where;
    EXPECT_EQ(o[24], f[q0]) << where;
    EXPECT_EQ(o[25], f[q0]) << where;
    EXPECT_EQ(o[26], ql >= 1 ? f[g - 1] : f[g]) << where;
    EXPECT_EQ(o[27], ql + 1 < qn ? f[g + 1] : f[g]) << where;
    EXPECT_EQ(o[28], (ql ^ 1) < qn ? f[q0 + (ql ^ 1)] : f[g]) << where;
    EXPECT_EQ(o[29], f[q0 + (ql + 1) % qn]) << where;
    EXPECT_EQ(o[30], sum) << where;  // half sum of small integers is exact
    EXPECT_EQ(o[31], sum) << where;
    EXPECT_EQ(o[32], 2 * sum) << where;
    double psum = 0;
    for (unsigned l = 0; l < wn; ++l) psum += P(l);
    EXPECT_EQ(o[33], psum) << where;
    EXPECT_EQ(o[34], double(wn)) << where;
    EXPECT_NEAR(o[35], sum, 16.0) << where;  // bfloat partial sums round past 256
    EXPECT_EQ(o[36], lane + 1 < wn ? F(lane + 1) : F(lane)) << where;
    EXPECT_EQ(o[37], qpexc) << where;
    EXPECT_EQ(o[38], f[q0]) << where;
    EXPECT_EQ(o[39], F((lane + wn - 37 % wn) % wn)) << where;

    const int32_t* I = &io[size_t(g) * K];
    int64_t isum = 0;
    uint32_t usum = 0, uand = ~0u, uor = 0, uxor = 0, umin = ~0u, umax = 0, ballot = 0;
    int imin = 1 << 30, imax = -(1 << 30);
    bool all = true, any = false;
    int iinc = 0, iexc = 0;
    int16_t ssum = 0;
    uint8_t cmax = 0;
    for (unsigned l = 0; l < wn; ++l) {
      isum += Ki(l), usum += U(l), uand &= U(l), uor |= U(l), uxor ^= U(l);
      umin = std::min(umin, U(l)), umax = std::max(umax, U(l));
      imin = std::min(imin, Ki(l)), imax = std::max(imax, Ki(l));
      if (U(l) & 1u) ballot |= 1u << l;
      all = all && Ki(l) > -1000;
      any = any || Ki(l) > 400;
      if (l <= lane) iinc += Ki(l);
      if (l < lane) iexc += Ki(l);
      ssum = int16_t(ssum + int16_t(Ki(l)));
      cmax = std::max<uint8_t>(cmax, uint8_t(U(l)));
    }
    EXPECT_EQ(I[0], isum) << where;
    EXPECT_EQ(uint32_t(I[1]), usum) << where;
    EXPECT_EQ(I[2], imin) << where;
    EXPECT_EQ(I[3], imax) << where;
    EXPECT_EQ(uint32_t(I[4]), umin) << where;
    EXPECT_EQ(uint32_t(I[5]), umax) << where;
    EXPECT_EQ(uint32_t(I[6]), uand) << where;
    EXPECT_EQ(uint32_t(I[7]), uor) << where;
    EXPECT_EQ(uint32_t(I[8]), uxor) << where;
    EXPECT_EQ(uint32_t(I[9]), ballot) << where;
    EXPECT_EQ(I[10], 0) << where;
    EXPECT_EQ(I[11], all ? 1 : 0) << where;
    EXPECT_EQ(I[12], any ? 1 : 0) << where;
    EXPECT_EQ(I[13], lane == 0 ? 1 : 0) << where;
    unsigned x1 = lane ^ 1;
    unsigned src = x1 < wn ? x1 : lane;
    EXPECT_EQ(I[14], Ki(src)) << where;
    EXPECT_EQ(uint32_t(I[15]), U(src)) << where;
    unsigned d2 = lane + 2 < wn ? lane + 2 : lane;
    EXPECT_EQ(I[16], (U(d2) & 2u) ? 1 : 0) << where;
    int qs = 0;
    uint32_t qand = ~0u, qor = 0;
    uint8_t qballot = 0;
    for (unsigned l = 0; l < qn; ++l) {
      uint32_t v = u[q0 + l];
      qs += int(v % 1000u) - 500, qand &= v, qor |= v;
      if (v & 1u) qballot |= uint8_t(1u << l);
    }
    EXPECT_EQ(I[17], qs) << where;
    EXPECT_EQ(uint32_t(I[18]), qand) << where;
    EXPECT_EQ(uint32_t(I[19]), qor) << where;
    EXPECT_EQ(I[20], qballot) << where;
    EXPECT_EQ(I[21], qballot == uint8_t((1u << qn) - 1u) ? 1 : 0) << where;
    EXPECT_EQ(I[22], qballot != 0 ? 1 : 0) << where;
    EXPECT_EQ(I[23], ql == 0 ? 1 : 0) << where;
    EXPECT_EQ(I[24], iinc) << where;
    EXPECT_EQ(I[25], iexc) << where;
    EXPECT_EQ(I[26], ssum) << where;
    EXPECT_EQ(I[27], cmax) << where;
    EXPECT_EQ(I[28], wn == 32 ? 1 : 0) << where;  // all(): every lane of 32 (MSL 6.9.2)
    EXPECT_EQ(uint32_t(I[29]), wn == 32 ? ~0u : (1u << wn) - 1u) << where;
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(GpuRuntime, Atomics) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 5);
  const unsigned n = 1000, tgs = 128;  // 250 per half slot (exact), last group partial
  std::vector<uint32_t> u(n);
  std::vector<float> f(n);
  std::normal_distribution<float> nd;
  for (unsigned i = 0; i < n; ++i) u[i] = uint32_t(rng()), f[i] = nd(rng);
  auto bu = upload(u), bfl = upload(f);
  auto bih = poisoned(8, 0), bib = poisoned(8, 0), boh = poisoned(n * 2), bob = poisoned(n * 2);
  std::vector<int32_t> iacc = {0, 1 << 30, -(1 << 30), -1, 0, 0, 100};
  std::vector<uint32_t> uacc = {~0u, 0};
  std::vector<float> facc = {0.f, 1e30f, -1e30f};
  std::vector<int32_t> slot(8, -1);
  std::vector<uint64_t> ul = {0};
  auto bia = upload(iacc), bua = upload(uacc), bfa = upload(facc), bslot = upload(slot), bul = upload(ul);
  auto bolds = poisoned(n * 4), bgc = poisoned((n + tgs - 1) / tgs * 4);
  Kernel k = load(alloy_test::kAtomics, "atomics.cu");
  launch(k, dispatch(n, 1, 1, tgs, 1, 1),
         {bu.get(), bfl.get(), bih.get(), bib.get(), boh.get(), bob.get(), bia.get(), bua.get(), bfa.get(),
          bslot.get(), bolds.get(), bul.get(), bgc.get()});
  auto ih = download<f16>(*bih);
  auto oh = download<f16>(*boh);
  auto ib = download<bf16>(*bib);
  auto ob = download<bf16>(*bob);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(float(ih[s]), 250.f) << "half slot " << s;
    EXPECT_EQ(float(ib[s]), 250.f) << "bfloat slot " << s;  // bfloat counts exactly up to 256
    // fetch_add returns old values: each of 0..249 exactly once per slot.
    std::vector<int> seen(250, 0);
    for (unsigned g = s; g < n; g += 4) {
      int v = int(float(oh[g]));
      ASSERT_TRUE(v >= 0 && v < 250) << "old half value " << v;
      seen[v]++;
    }
    for (int v = 0; v < 250; ++v) EXPECT_EQ(seen[v], 1) << "half slot " << s << " old value " << v;
  }
  auto ia = download<int32_t>(*bia);
  auto ua = download<uint32_t>(*bua);
  auto fa = download<float>(*bfa);
  int32_t emin = 1 << 30, emax = -(1 << 30), eand = -1, eor = 0, exor = 0;
  uint32_t umin = ~0u, umax = 0;
  uint64_t usum = 0;
  float fsum = 0, fmin = 1e30f, fmax = -1e30f;
  for (unsigned g = 0; g < n; ++g) {
    int s = int(u[g] % 100000u) - 50000;
    emin = std::min(emin, s), emax = std::max(emax, s);
    eand &= int32_t(u[g] | 0x80000000u), eor |= int32_t(u[g] & 0x0f0f0f0fu), exor ^= int32_t(u[g]);
    umin = std::min(umin, u[g]), umax = std::max(umax, u[g]);
    usum += u[g];
    fsum += float(g % 7), fmin = std::min(fmin, f[g]), fmax = std::max(fmax, f[g]);
  }
  EXPECT_EQ(ia[0], int(n)) << "compare_exchange_weak loop count";
  EXPECT_EQ(ia[1], emin);
  EXPECT_EQ(ia[2], emax);
  EXPECT_EQ(ia[3], eand);
  EXPECT_EQ(ia[4], eor);
  EXPECT_EQ(ia[5], exor);
  EXPECT_EQ(ia[6], 100 - 3 * int(n));
  EXPECT_EQ(ua[0], umin);
  EXPECT_EQ(ua[1], umax);
  EXPECT_EQ(fa[0], fsum);
  EXPECT_EQ(fa[1], fmin);
  EXPECT_EQ(fa[2], fmax);
  EXPECT_EQ(download<uint64_t>(*bul)[0], usum);
  // Exchange: per slot, the old values and the final value are a chain over
  // {-1} and the threads of that slot, each seen once.
  auto olds = download<int32_t>(*bolds);
  auto fin = download<int32_t>(*bslot);
  for (unsigned s = 0; s < 8; ++s) {
    std::vector<int> vals = {fin[s]};
    for (unsigned g = s; g < n; g += 8) vals.push_back(olds[g]);
    std::sort(vals.begin(), vals.end());
    std::vector<int> want = {-1};
    for (unsigned g = s; g < n; g += 8) want.push_back(int(g));
    EXPECT_EQ(vals, want) << "exchange slot " << s;
  }
  auto gc = download<int32_t>(*bgc);
  for (unsigned grp = 0; grp < gc.size(); ++grp)
    EXPECT_EQ(gc[grp], int(std::min(tgs, n - grp * tgs))) << "threadgroup atomic counter of group " << grp;
}

TEST(GpuRuntime, SimdgroupMatrixHalfFloatBfloat) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 6);
  std::uniform_real_distribution<float> ud(-1.f, 1.f);
  std::vector<float> a(120), b(64), c(64);
  for (auto& v : a) v = float(f16(ud(rng)));  // representable in half, bfloat loses bits (tolerance below)
  for (auto& v : b) v = float(f16(ud(rng)));
  for (auto& v : c) v = float(f16(ud(rng)));
  // Apple's element-to-lane layout (what thread_elements() shows MLX's
  // GEMMs), then the tensor cores' own, which the translator picks when no
  // code names a lane's elements.
  for (bool mma_layout : {false, true}) {
    auto ba = upload(a), bb = upload(b), bc = upload(c);
    auto bd = poisoned(256 * 4), bte = poisoned(256 * 4);
    Kernel k = mma_layout ? load(alloy_test::kSimdgroupMatrix, "mma_native.cu", {"ALLOY_MSL_MATRIX_MMA_LAYOUT=1"})
                          : load(alloy_test::kSimdgroupMatrix, "mma.cu");
    launch(k, dispatch(128, 1, 1, 32, 1, 1), {ba.get(), bb.get(), bc.get(), bd.get(), bte.get()});
    auto d = download<float>(*bd);
    auto te = download<float>(*bte);
    // A[r][k] = a[(1 + k) * 12 + 2 + r] (transposed load at origin (2, 1), stride 12).
    auto A = [&](int r, int kk) { return double(a[(1 + kk) * 12 + 2 + r]); };
    const char* names[4] = {"half", "float", "bfloat", "half x half + float"};
    const double tol[4] = {2e-3, 1e-5, 6e-2, 1e-5};
    const char* layout = mma_layout ? " (mma layout)" : " (Apple layout)";
    for (int m = 0; m < 4; ++m) {
      for (int r = 0; r < 8; ++r)
        for (int col = 0; col < 8; ++col) {
          double ref = c[r * 8 + col];
          for (int kk = 0; kk < 8; ++kk) ref += A(r, kk) * b[kk * 8 + col];
          EXPECT_NEAR(d[m * 64 + r * 8 + col], ref, tol[m] * (1 + std::abs(ref)))
              << names[m] << layout << " D[" << r << "][" << col << "]";
        }
      // Apple: lane L holds row (L/4 & 4) + (L/2 % 4), columns (L/4 & 2)*2 + (L%2)*2 + {0,1};
      // mma: row L/4, columns (L%4)*2 + {0,1}.
      for (int lane = 0; lane < 32; ++lane) {
        int row = mma_layout ? lane / 4 : ((lane / 4) & 4) + (lane / 2) % 4;
        int col = mma_layout ? (lane % 4) * 2 : ((lane / 4) & 2) * 2 + (lane % 2) * 2;
        for (int j = 0; j < 2; ++j)
          EXPECT_NEAR(te[m * 64 + lane * 2 + j], A(row, col + j), m == 2 ? 1e-2 : 0.0)
              << names[m] << layout << " thread_elements lane " << lane;
      }
    }
  }
}

TEST(GpuRuntime, VectorsSwizzlesHalfBfloat) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 7);
  std::uniform_real_distribution<float> ud(-2.f, 2.f);
  const unsigned n = 77;
  std::vector<float> x(4 * n);
  std::vector<f16> h(n);
  std::vector<bf16> bfv(n);
  for (auto& v : x) v = ud(rng);
  for (auto& v : h) v = f16(ud(rng));
  for (auto& v : bfv) v = bf16(ud(rng));
  auto bx = upload(x), bh = upload(h), bbf = upload(bfv);
  auto bout = poisoned(16 * n * 4);
  Kernel k = load(alloy_test::kVectorsAndHalf, "vectors.cu");
  launch(k, dispatch(n, 1, 1, 32, 1, 1), {bx.get(), bh.get(), bbf.get(), bout.get()});
  auto out = download<float>(*bout);
  for (unsigned g = 0; g < n; ++g) {
    const float* o = &out[16 * g];
    float v0 = x[4 * g], v3 = x[4 * g + 3];
    float v[4] = {v0, v3 * 2.0f, v0 * 2.0f, v3};
    float hh = float(h[g]), bb = float(bfv[g]);
    std::string where = "thread " + std::to_string(g);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(o[i], v[i]) << where << " swizzle component " << i;
    for (int i = 0; i < 3; ++i) EXPECT_EQ(o[4 + i], v[i] + 1.0f) << where;
    EXPECT_EQ(o[7], hh * 2.0f) << where << " half * float stays float";
    EXPECT_EQ(o[8], float(f16(hh + 1.0f))) << where << " half + int rounds to half";
    EXPECT_EQ(o[9], float(bf16(bb * 3.0f))) << where << " bfloat * int rounds to bfloat";
    EXPECT_EQ(o[10], g % 2 == 0 ? hh : 0.0f) << where;
    EXPECT_EQ(o[11], float(f16(hh * 0.5f))) << where;
    EXPECT_NEAR(o[12], double(v[0]) + v[1] + v[2] + v[3], 1e-5) << where;
    EXPECT_NEAR(o[13], std::exp(double(hh)), 2e-3 * std::exp(double(hh))) << where;
    EXPECT_EQ(o[14], 1.0f) << where << " type sizes";
    EXPECT_EQ(o[15], std::max(hh, 0.25f)) << where;
  }
}

// The constant-evaluation rounding (software) must agree with the hardware
// conversion for every half, and for random floats.
TEST(GpuRuntime, HalfSoftwareRoundingMatchesHardware) {
  REQUIRE_GPU();
  std::mt19937 rng(test_seed() + 8);
  const unsigned n = 1 << 20;
  std::vector<float> in(n);
  for (unsigned i = 0; i < n; ++i) {
    uint32_t bits = uint32_t(rng());
    if (i < 65536) {  // exact halves and midpoints between neighbours
      f16 h;
      uint16_t hb = uint16_t(i);
      std::memcpy(&h, &hb, 2);
      float fv = float(h);
      in[i] = (i & 1) ? std::nextafter(fv, 0.f) : fv;
    } else {
      std::memcpy(&in[i], &bits, 4);
    }
  }
  auto bin = upload(in);
  auto bout = poisoned(2 * n * 4);
  Kernel k = load(alloy_test::kHalfRounding, "half_rounding.cu");
  launch(k, dispatch(n, 1, 1, 256, 1, 1), {bin.get(), bout.get()});
  auto out = download<uint32_t>(*bout);
  for (unsigned i = 0; i < n; ++i) {
    ASSERT_EQ(out[2 * i], 1u) << "float->half differs for " << in[i];
    ASSERT_EQ(out[2 * i + 1], 1u) << "half->float differs for bits " << (i & 0xffff);
  }
}

}  // namespace

// SIMD-group and quad-group functions over partial groups: the grid is not a
// multiple of 32 nor of the threadgroup, threadgroups of 48 threads have a
// 16-lane second SIMD group, and threads past `n` return before calling
// anything. Each result is checked against Metal's rules computed on the host.
#include <functional>

#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

constexpr int kOps = 24;

const char* kKernel = R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_simd(const int* inp, const float* finp, const int& n, long* out, float* fout,
    uint3 thread_position_in_grid) {
  uint gid = thread_position_in_grid.x;
  if (gid >= uint(n)) return;
  int v = inp[gid];
  long* o = out + gid * 24;
  o[0] = simd_sum(v);
  o[1] = simd_prefix_inclusive_sum(v);
  o[2] = simd_prefix_exclusive_sum(v);
  o[3] = simd_shuffle_up(v, 1);
  o[4] = simd_shuffle_down(v, 1);
  o[5] = simd_shuffle_xor(v, 1);
  o[6] = simd_shuffle_rotate_down(v, 3);
  o[7] = simd_shuffle_rotate_up(v, 3);
  o[8] = simd_broadcast(v, 2);
  o[9] = simd_broadcast_first(v);
  o[10] = simd_max(v);
  o[11] = simd_min(v);
  o[12] = long(ulong(simd_ballot(v > 0)));
  o[13] = simd_is_first();
  o[14] = simd_all(v > -40);
  o[15] = simd_any(v > 45);
  o[16] = simd_prefix_exclusive_product(long(v % 3 + 2));
  o[17] = quad_sum(v);
  o[18] = quad_shuffle(v, 3);
  o[19] = quad_prefix_exclusive_sum(v);
  o[20] = quad_shuffle_down(v, 1);
  o[21] = quad_broadcast(v, 0);
  o[22] = quad_shuffle_rotate_up(v, 1);
  o[23] = simd_shuffle(long(v) << 40, 5) >> 40;  // 64-bit values travel whole
  fout[gid] = simd_sum(finp[gid]);
}
)";

struct Lane {
  bool active;
  long v;
};

TEST(CpuSimd, PartialGroupsFollowMetalRules) {
  auto rng = seeded_rng("CpuSimd.PartialGroups");
  const unsigned grid = 100, tg = 48;
  const int n = 90;
  auto in = random_ints(rng, grid, -50, 50);
  auto fin = random_floats(rng, grid);
  std::vector<long> out(grid * kOps, 0x7777);
  auto fout = poisoned<float>(grid);
  auto k = compile(translation_unit(kKernel, R"(
  alloy_msl::cpu::run<true>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_simd<float>(static_cast<const int*>(L->buffers[0]), static_cast<const float*>(L->buffers[1]),
        *static_cast<const int*>(L->buffers[2]), static_cast<long*>(L->buffers[3]), static_cast<float*>(L->buffers[4]),
        t.thread_position_in_grid);
  });)"));
  int n_value = n;
  launch(*k, {in.data(), fin.data(), &n_value, out.data(), fout.data()}, {grid}, {tg});

  for (unsigned g = 0; g < grid; ++g) {
    const long* o = &out[g * kOps];
    if (int(g) >= n) {
      for (int j = 0; j < kOps; ++j) ASSERT_EQ(o[j], 0x7777) << "returned thread " << g << " wrote op " << j;
      continue;
    }
    // This thread's SIMD group: threads of its threadgroup with the same index / 32.
    unsigned group_start = g / tg * tg, count = std::min(tg, grid - group_start);
    unsigned lid = g - group_start, sg_base = lid / 32 * 32, width = std::min(32u, count - sg_base);
    unsigned lane = lid - sg_base;
    std::vector<Lane> lanes(32, Lane{false, 0});
    for (unsigned l = 0; l < width; ++l) {
      unsigned gg = group_start + sg_base + l;
      lanes[l] = {int(gg) < n, long(in[gg])};
    }
    long v = lanes[lane].v;
    auto read = [&](unsigned src) { return src < 32 && lanes[src].active ? lanes[src].v : v; };
    long sum = 0, incl = 0, excl = 0, mx = -1000, mn = 1000, prod_excl = 1, ballot = 0;
    int first = -1;
    bool all = true, any = false;
    double fsum = 0;
    for (unsigned l = 0; l < 32; ++l) {
      if (!lanes[l].active) continue;
      if (first < 0) first = int(l);
      sum += lanes[l].v;
      if (l <= lane) incl += lanes[l].v;
      if (l < lane) excl += lanes[l].v, prod_excl *= lanes[l].v % 3 + 2;
      mx = std::max(mx, lanes[l].v);
      mn = std::min(mn, lanes[l].v);
      if (lanes[l].v > 0) ballot |= 1l << l;
      all = all && lanes[l].v > -40;
      any = any || lanes[l].v > 45;
      fsum += fin[group_start + sg_base + l];
    }
    unsigned qbase = lane & ~3u, qwidth = std::min(4u, width - qbase), qme = lane - qbase;
    long qsum = 0, qexcl = 0;
    for (unsigned l = qbase; l < qbase + 4; ++l) {
      if (l >= 32 || !lanes[l].active) continue;
      qsum += lanes[l].v;
      if (l < lane) qexcl += lanes[l].v;
    }
    long expect[kOps] = {sum,
                         incl,
                         excl,
                         lane < 1 ? v : read(lane - 1),
                         lane + 1 >= 32 ? v : read(lane + 1),
                         read(lane ^ 1),
                         read((lane + 3) % width),
                         read((lane + width - 3 % width) % width),
                         read(2),
                         lanes[first].v,
                         mx,
                         mn,
                         ballot,
                         long(int(lane) == first),
                         long(all),
                         long(any),
                         prod_excl,
                         qsum,
                         read(qbase + 3),
                         qexcl,
                         qme + 1 >= 4 ? v : read(lane + 1),
                         read(qbase),
                         read(qbase + (qme + qwidth - 1) % qwidth),
                         read(5)};
    for (int j = 0; j < kOps; ++j) {
      EXPECT_EQ(o[j], expect[j]) << "thread " << g << " (lane " << lane << " of a " << width << "-lane group) op " << j;
    }
    EXPECT_NEAR(fout[g], fsum, 1e-5) << "thread " << g;
  }
}

}  // namespace
}  // namespace alloy::jit::test

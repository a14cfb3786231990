// Threadgroup memory and barriers on the fiber path (run<true>): a tree
// reduction over partial threadgroups, threads returning before a barrier,
// barrier divergence reported as an error instead of a hang, and SIMD-group
// functions in divergent branches.
#include <algorithm>

#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

TEST(CpuThreadgroup, TreeReductionWithPartialLastGroup) {
  auto rng = seeded_rng("CpuThreadgroup.TreeReduction");
  const unsigned n = 1000, tg = 256;  // groups of 256, 256, 256 and 232 threads
  auto in = random_floats(rng, n);
  const unsigned groups = (n + tg - 1) / tg;
  auto out = poisoned<float>(groups);
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_tgsum(const T* inp, T* out, uint3 thread_position_in_grid,
    uint3 threadgroup_position_in_grid, uint3 threads_per_threadgroup, uint thread_index_in_threadgroup) {
  ALLOY_THREADGROUP T buf[256];
  uint lid = thread_index_in_threadgroup;
  uint count = threads_per_threadgroup.x;
  buf[lid] = inp[thread_position_in_grid.x];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 128; s > 0; s >>= 1) {
    if (lid < s && lid + s < count) buf[lid] += buf[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) out[threadgroup_position_in_grid.x] = buf[0];
}
)",
                                    R"(
  alloy_msl::cpu::run<true>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_tgsum<float>(static_cast<const float*>(L->buffers[0]), static_cast<float*>(L->buffers[1]),
        t.thread_position_in_grid, t.threadgroup_position_in_grid, t.threads_per_threadgroup,
        t.thread_index_in_threadgroup);
  });)"));
  launch(*k, {in.data(), out.data()}, {n}, {tg});
  for (unsigned g = 0; g < groups; ++g) {
    double ref = 0, mag = 0;
    for (unsigned i = g * tg; i < std::min(n, (g + 1) * tg); ++i) ref += in[i], mag += std::fabs(in[i]);
    EXPECT_NEAR(out[g], ref, 1e-6 * mag + 1e-6) << "group " << g;
  }
}

TEST(CpuThreadgroup, EarlyReturnThenBarrier) {
  auto rng = seeded_rng("CpuThreadgroup.EarlyReturn");
  const unsigned grid = 256, tg = 64, n = 200;  // threads >= n return before the barrier
  auto in = random_floats(rng, grid);
  auto out = poisoned<float>(grid);
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_rot(const T* inp, const int& n, T* out, uint3 thread_position_in_grid,
    uint thread_index_in_threadgroup, uint3 threadgroup_position_in_grid, uint3 threads_per_threadgroup) {
  ALLOY_THREADGROUP T buf[64];
  uint gid = thread_position_in_grid.x;
  if (gid >= uint(n)) return;
  uint lid = thread_index_in_threadgroup;
  uint start = threadgroup_position_in_grid.x * threads_per_threadgroup.x;
  uint active = min(threads_per_threadgroup.x, uint(n) - start);
  buf[lid] = inp[gid] * 2;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = buf[(lid + 1) % active];
}
)",
                                    R"(
  alloy_msl::cpu::run<true>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_rot<float>(static_cast<const float*>(L->buffers[0]), *static_cast<const int*>(L->buffers[1]),
        static_cast<float*>(L->buffers[2]), t.thread_position_in_grid, t.thread_index_in_threadgroup,
        t.threadgroup_position_in_grid, t.threads_per_threadgroup);
  });)"));
  int n_value = n;
  launch(*k, {in.data(), &n_value, out.data()}, {grid}, {tg});
  for (unsigned g = 0; g < grid; ++g) {
    if (g >= n) {
      EXPECT_TRUE(std::isnan(out[g])) << "thread " << g << " returned early but its output was written";
      continue;
    }
    unsigned start = g / tg * tg, active = std::min(tg, n - start);
    EXPECT_EQ(out[g], in[start + (g - start + 1) % active] * 2) << "thread " << g;
  }
}

std::string glue_one_output(const std::string& name) {
  return R"(
  alloy_msl::cpu::run<true>(L, [&](const alloy_msl::ThreadIds& t) {
    )" + name + R"(<float>(static_cast<float*>(L->buffers[0]), t.thread_index_in_threadgroup);
  });)";
}

TEST(CpuThreadgroup, BarrierDivergenceIsAnErrorNotAHang) {
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_diverge(T* out, uint thread_index_in_threadgroup) {
  if (thread_index_in_threadgroup < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[thread_index_in_threadgroup] = 1;
}
)",
                                    glue_one_output("custom_kernel_diverge")));
  std::vector<float> out(64, 0.0f);
  try {
    launch(*k, {out.data()}, {64}, {64});
    FAIL() << "a divergent barrier ran without an error";
  } catch (const std::runtime_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[alloy::jit::CpuKernel::launch]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("barrier divergence"), std::string::npos) << msg;
    EXPECT_NE(msg.find("threads 0-15 wait at threadgroup_barrier (source:5)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("threads 16-63 wait at threadgroup_barrier (source:7)"), std::string::npos) << msg;
  }
}

// Lanes in different branches call different SIMD-group functions: each
// runs over the lanes of its branch, as on a GPU.
TEST(CpuThreadgroup, DivergentSimdFunctionsRunOverTheirBranchsLanes) {
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_simd_diverge(T* out, uint thread_index_in_threadgroup) {
  T v = T(thread_index_in_threadgroup);
  if (thread_index_in_threadgroup % 2) {
    v = simd_sum(v);
  } else {
    v = simd_max(v);
  }
  out[thread_index_in_threadgroup] = v;
}
)",
                                    glue_one_output("custom_kernel_simd_diverge")));
  std::vector<float> out(40, -1.0f);
  launch(*k, {out.data()}, {40}, {40});  // a full SIMD group and a partial one (8 lanes)
  for (int i = 0; i < 40; ++i) {
    int base = i / 32 * 32, n = i < 32 ? 32 : 8;
    float odd_sum = 0, even_max = 0;
    for (int l = base; l < base + n; ++l) (l % 2 ? odd_sum += l : even_max = std::max<float>(even_max, l));
    EXPECT_EQ(out[i], i % 2 ? odd_sum : even_max) << "thread " << i;
  }
}

// After a branch that calls a SIMD-group function, the lanes meet again: the
// next call covers every lane (the branch's lanes run first, as a SIMT
// machine runs the lowest program counter first).
TEST(CpuThreadgroup, SimdFunctionAfterABranchCoversEveryLane) {
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_reconverge(T* out, uint thread_index_in_threadgroup) {
  T a = 0;
  if (thread_index_in_threadgroup < 13) a = simd_sum(T(1));
  T b = simd_sum(T(1));
  out[thread_index_in_threadgroup] = a * 100 + b;
}
)",
                                    glue_one_output("custom_kernel_reconverge")));
  std::vector<float> out(32, -1.0f);
  launch(*k, {out.data()}, {32}, {32});
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], (i < 13 ? 1300 : 0) + 32) << "thread " << i;
}

// Lanes that skip a SIMD-group function to wait at a threadgroup barrier are
// inactive for it: the function runs over the lanes that called it.
TEST(CpuThreadgroup, SimdFunctionInsideBranchBeforeBarrier) {
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_branch(T* out, uint thread_index_in_threadgroup) {
  T v = T(thread_index_in_threadgroup);
  if (thread_index_in_threadgroup % 32 < 8) v = simd_sum(v);
  threadgroup_barrier(mem_flags::mem_none);
  out[thread_index_in_threadgroup] = v;
}
)",
                                    glue_one_output("custom_kernel_branch")));
  std::vector<float> out(64, -1.0f);
  launch(*k, {out.data()}, {64}, {64});
  for (unsigned i = 0; i < 64; ++i) {
    unsigned base = i / 32 * 32;
    float expect = i % 32 < 8 ? float(8 * base + 28) : float(i);  // sum of base..base+7
    EXPECT_EQ(out[i], expect) << "thread " << i;
  }
}

TEST(CpuThreadgroup, ErrorDoesNotPoisonLaterLaunches) {
  auto bad = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_bad(T* out, uint thread_index_in_threadgroup) {
  if (thread_index_in_threadgroup == 0) threadgroup_barrier(mem_flags::mem_none);
  else threadgroup_barrier(mem_flags::mem_device);
}
)",
                                      glue_one_output("custom_kernel_bad")));
  auto good = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_good(T* out, uint thread_index_in_threadgroup) {
  ALLOY_THREADGROUP T buf[128];
  buf[thread_index_in_threadgroup] = T(thread_index_in_threadgroup);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[thread_index_in_threadgroup] = buf[127 - thread_index_in_threadgroup];
}
)",
                                       glue_one_output("custom_kernel_good")));
  std::vector<float> out(128);
  for (int round = 0; round < 3; ++round) {
    EXPECT_THROW(launch(*bad, {out.data()}, {128, 8}, {128}), std::runtime_error);
    std::fill(out.begin(), out.end(), -1.0f);
    launch(*good, {out.data()}, {128}, {128});
    for (unsigned i = 0; i < 128; ++i) ASSERT_EQ(out[i], float(127 - i)) << "round " << round << " i " << i;
  }
}

}  // namespace
}  // namespace alloy::jit::test

// The CUDA target's thread ids (src/msl/runtime/cuda_dispatch.h) run here on
// the host against a model of CUDA's block and thread indices, so both paths
// are checked without a GPU: a launch whose threadgroups are all whole
// (Dispatch::whole, set by the launcher) must give every thread exactly the
// ids the general path (partial groups, folding, padding blocks) gives it,
// and those must be Metal's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "msl/runtime/metal_thread_ids.h"
#include "msl/runtime/cuda_launch.h"

namespace {
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
Dim3 threadIdx, blockIdx, gridDim;  // what the model's "GPU" runs now
}  // namespace

namespace alloy_msl::cuda {
// The lane record is not modelled (cuda_sync.h; the SIMD tests cover it).
inline void set_simd_group_state(unsigned, unsigned) {}
}  // namespace alloy_msl::cuda

#include "msl/runtime/cuda_dispatch.h"

namespace {

using alloy_msl::ThreadIds;
using alloy_msl::cuda::Dispatch;

std::string ids_text(const ThreadIds& t) {
  auto v = [](const metal::uint3& u) {
    return "(" + std::to_string(u.x) + "," + std::to_string(u.y) + "," + std::to_string(u.z) + ")";
  };
  return "grid" + v(t.thread_position_in_grid) + " tg" + v(t.thread_position_in_threadgroup) + " group" +
         v(t.threadgroup_position_in_grid) + " size" + v(t.threads_per_threadgroup) + " index " +
         std::to_string(t.thread_index_in_threadgroup) + " simd " + std::to_string(t.simdgroups_per_threadgroup);
}

// The launch's Dispatch for whole threadgroups (no folding), as the launcher
// makes it: x_shift for power-of-two-wide 2-D groups.
Dispatch whole_dispatch(const unsigned grid[3], const unsigned tg[3], bool whole) {
  Dispatch d{};
  for (int i = 0; i < 3; ++i) {
    d.grid[i] = grid[i];
    d.threadgroup[i] = tg[i];
  }
  if (tg[1] != 1u && tg[2] == 1u && (tg[0] & (tg[0] - 1u)) == 0u) {
    unsigned log2 = 0;
    while ((1u << log2) < tg[0]) ++log2;
    d.x_shift = log2 + 1u;
  }
  d.whole = whole ? 1u : 0u;
  return d;
}

TEST(CudaDispatchModel, WholeThreadgroupsGiveTheGeneralPathsIds) {
  const unsigned cases[][6] = {
      {256, 1, 1, 32, 1, 1}, {64, 8, 1, 16, 4, 1}, {12, 6, 4, 3, 3, 2}, {32, 32, 1, 32, 32, 1},
      {24, 4, 1, 6, 2, 1},   {8, 8, 8, 2, 4, 8},   {5, 1, 1, 5, 1, 1},
  };
  for (const auto& c : cases) {
    const unsigned grid[3] = {c[0], c[1], c[2]}, tg[3] = {c[3], c[4], c[5]};
    const Dispatch fast = whole_dispatch(grid, tg, true), general = whole_dispatch(grid, tg, false);
    gridDim = {alloy_msl::cuda::threadgroups_per_grid(fast, 0), alloy_msl::cuda::threadgroups_per_grid(fast, 1),
               alloy_msl::cuda::threadgroups_per_grid(fast, 2)};
    std::vector<int> seen(size_t(grid[0]) * grid[1] * grid[2], 0);
    for (blockIdx.z = 0; blockIdx.z < gridDim.z; ++blockIdx.z)
      for (blockIdx.y = 0; blockIdx.y < gridDim.y; ++blockIdx.y)
        for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
          for (threadIdx.x = 0; threadIdx.x < alloy_msl::cuda::threads_per_block(fast); ++threadIdx.x) {
            ThreadIds a{}, b{};
            ASSERT_TRUE(alloy_msl::cuda::thread_ids(fast, a)) << "every thread of a whole launch exists";
            ASSERT_TRUE(alloy_msl::cuda::thread_ids(general, b));
            ASSERT_EQ(ids_text(a), ids_text(b)) << "block " << blockIdx.x << "," << blockIdx.y << "," << blockIdx.z
                                                << " thread " << threadIdx.x;
            // Metal's numbering: x fastest within the group.
            const metal::uint3 p = a.thread_position_in_threadgroup;
            EXPECT_EQ(a.thread_index_in_threadgroup, p.x + p.y * tg[0] + p.z * tg[0] * tg[1]);
            const metal::uint3 g = a.thread_position_in_grid;
            ++seen[(size_t(g.z) * grid[1] + g.y) * grid[0] + g.x];
          }
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "grid position " << i << " ran " << seen[i];
  }
}

TEST(CudaDispatchModel, PartialThreadgroupsLeaveTheirMissingThreadsOut) {
  // The general path: a 10x5 grid in 4x4 groups has edge groups of 2 and 1
  // rows and columns; threads beyond them do not exist.
  const unsigned grid[3] = {10, 5, 1}, tg[3] = {4, 4, 1};
  const Dispatch d = whole_dispatch(grid, tg, false);
  gridDim = {3, 2, 1};
  blockIdx = {2, 1, 0};
  unsigned exist = 0;
  for (threadIdx.x = 0; threadIdx.x < 16; ++threadIdx.x) {
    ThreadIds t{};
    if (!alloy_msl::cuda::thread_ids(d, t)) continue;
    ++exist;
    EXPECT_EQ(t.threads_per_threadgroup.x, 2u);
    EXPECT_EQ(t.threads_per_threadgroup.y, 1u);
    EXPECT_EQ(t.thread_position_in_grid.x, 8u + t.thread_position_in_threadgroup.x);
  }
  EXPECT_EQ(exist, 2u);
}

}  // namespace

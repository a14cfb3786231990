// The CUDA sort kernels (backend/cuda/device/sort.cuh) run on the host: one
// block of one thread executes every loop of the bitonic tile sort and the
// merge passes sequentially, which is the same network a block runs in
// parallel (each step's pairs are disjoint). Checked against std::stable_sort
// under the shared comparator, for row lengths around the tile size, with
// NaNs and many ties, so the GPU path's logic is tested where no GPU is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "backend/common/math_shim.h"

#define ALLOY_SORT_HOST_EMULATION 1
#define __device__
#define __forceinline__ inline
#define __shared__ static
namespace {
struct Dim3 {
  unsigned x;
};
constexpr Dim3 threadIdx{0}, blockIdx{0}, blockDim{1}, gridDim{1};
inline void __syncthreads() {}
}  // namespace
namespace alloy {
inline int64_t global_thread() { return 0; }
inline int64_t grid_threads() { return 1; }
}  // namespace alloy

#include "backend/cuda/device/sort.cuh"

namespace {

using alloy::sort_kernels::kTile;

// Runs the kernels as backend/cuda/sort.cpp launches them.
template <typename T>
void gpu_path(const std::vector<T>& in, int64_t rows, int64_t n, T* out_keys, uint32_t* out_pos) {
  namespace k = alloy::sort_kernels;
  if (n <= kTile) {
    k::sort_tile<T>(in.data(), out_keys, out_pos, rows, n);
    return;
  }
  std::vector<T> keys[2] = {std::vector<T>(in.size()), std::vector<T>(in.size())};
  std::vector<uint32_t> pos[2] = {std::vector<uint32_t>(in.size()), std::vector<uint32_t>(in.size())};
  k::sort_tile<T>(in.data(), keys[0].data(), pos[0].data(), rows, n);
  int cur = 0;
  for (int64_t width = kTile; width < n; width *= 2) {
    const bool last = 2 * width >= n;
    k::sort_merge<T>(keys[cur].data(), pos[cur].data(), last ? out_keys : keys[1 - cur].data(),
                     last ? out_pos : pos[1 - cur].data(), rows, n, width);
    cur = 1 - cur;
  }
}

template <typename T>
void check(int64_t rows, int64_t n, std::mt19937& gen) {
  std::vector<T> in(rows * n);
  std::uniform_int_distribution<int> dist(-5, 5);
  for (auto& v : in) {
    const int r = dist(gen);
    if constexpr (std::is_floating_point_v<T>) v = r == 5 ? T(NAN) : T(r);
    else v = T(r);
  }
  std::vector<uint32_t> want(in.size());
  for (int64_t r = 0; r < rows; ++r) {
    auto first = want.begin() + r * n;
    std::iota(first, first + n, 0u);
    const T* x = in.data() + r * n;
    std::stable_sort(first, first + n, [x](uint32_t i, uint32_t j) { return alloy::sorting::less(x[i], x[j]); });
  }
  std::vector<T> keys(in.size());
  std::vector<uint32_t> pos(in.size());
  gpu_path<T>(in, rows, n, nullptr, pos.data());
  ASSERT_EQ(pos, want) << "argsort, rows=" << rows << " n=" << n;
  gpu_path<T>(in, rows, n, keys.data(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) {
    const T w = in[(i / n) * n + want[i]];
    const bool both_nan = std::isnan(double(keys[i])) && std::isnan(double(w));
    ASSERT_TRUE(keys[i] == w || both_nan) << "sort, rows=" << rows << " n=" << n << " at " << i;
  }
}

TEST(SortKernelHost, MatchesStableSortAcrossTileSizes) {
  std::mt19937 gen(20260601);
  for (int64_t n : {1, 2, 3, 33, 2047, 2048, 2049, 4096, 6145, 20000}) {
    check<float>(3, n, gen);
    check<double>(2, n, gen);
    check<int32_t>(2, n, gen);
    check<uint8_t>(1, n, gen);
  }
  // Many short rows: several packed into one block, over several blocks.
  for (int64_t n : {1, 2, 5, 16, 100, 1025}) {
    check<float>(67, n, gen);
    check<int16_t>(40, n, gen);
  }
}

}  // namespace

// The clamp of a translation whose input reads are tolerated
// (msl::KernelSpec::tolerate_input_reads, ALLOY_BOUNDS_INPUT_READS_ONLY; what
// alloy.mlx launches on MLX's CUDA backend), run on the host: an index inside
// the input is kept, one outside (negative, past the end, wrapped) becomes
// the last element's (the last an index of its type reaches), an empty
// input keeps its index. The 32-bit path is an
// unsigned min against a limit derived from the size; checked here against
// the plain definition for int, unsigned, long long and short indices, at
// sizes around 2^31 and 2^32, on edge values and fresh random ones.
#define ALLOY_BOUNDS_INPUT_READS_ONLY 1
#include "msl/runtime/metal_base.h"
#include "msl/runtime/metal_vector.h"
#include "msl/runtime/metal_bounds.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace {

// What a tolerated read reads, written plainly: the index when it is inside,
// else the last element an index of type I reaches.
template <class I>
long long expected(long long index, unsigned long long size) {
  if (size == 0) return index;
  if (index >= 0 && static_cast<unsigned long long>(index) < size) return index;
  const unsigned long long top = static_cast<unsigned long long>(std::numeric_limits<I>::max());
  return static_cast<long long>(size - 1 < top ? size - 1 : top);
}

template <class I>
void check_all(const std::vector<unsigned long long>& sizes, const std::vector<long long>& indices) {
  for (unsigned long long size : sizes) {
    unsigned long long slots[1] = {size};
    const alloy_msl::BoundsCheck c{slots, nullptr, {}, nullptr};
    for (long long raw : indices) {
      const I index = static_cast<I>(raw);
      const long long want = expected<I>(static_cast<long long>(index), size);
      const long long got = static_cast<long long>(alloy_msl::bounds_index<const float*, 0>(c, 0, 1, 0, index));
      ASSERT_EQ(got, static_cast<long long>(static_cast<I>(want)))
          << "index " << static_cast<long long>(index) << " of a " << sizeof(I) << "-byte "
          << (static_cast<I>(-1) < 0 ? "signed" : "unsigned") << " type, size " << size;
    }
  }
}

TEST(TolerantReadsClamp, MatchesThePlainDefinition) {
  const unsigned seed = std::random_device{}();
  std::printf("[TolerantReadsClamp] seed=%u\n", seed);
  std::mt19937_64 rng(seed);
  std::vector<unsigned long long> sizes = {0, 1, 2, 7, 1000, (1ull << 31) - 1, 1ull << 31, (1ull << 31) + 1,
                                           (1ull << 32) - 1, 1ull << 32, (1ull << 32) + 5, 1ull << 40};
  for (int k = 0; k < 20; ++k) sizes.push_back(rng() % (1ull << 34));
  std::vector<long long> indices = {0, 1, -1, -2, 5, 6, 7, 8, 999, 1000, 1001, (1ll << 31) - 1, -(1ll << 31),
                                    (1ll << 32) - 1, 1ll << 32, (1ll << 32) + 4, -(1ll << 40)};
  for (int k = 0; k < 200; ++k) indices.push_back(static_cast<long long>(rng()) >> (rng() % 63));
  check_all<int>(sizes, indices);
  check_all<unsigned>(sizes, indices);
  check_all<long long>(sizes, indices);
  check_all<unsigned long long>(sizes, indices);
  check_all<short>(sizes, indices);
  check_all<unsigned short>(sizes, indices);
}

TEST(TolerantReadsClamp, EnumerationsAndBoolsAsSubscripts) {
  enum Corner { kFirst = 0, kFifth = 4, kPast = 40 };
  unsigned long long slots[1] = {10};
  const alloy_msl::BoundsCheck c{slots, nullptr, {}, nullptr};
  EXPECT_EQ(static_cast<int>(alloy_msl::bounds_index<const float*, 0>(c, 0, 1, 0, kFifth)), 4);
  EXPECT_EQ(static_cast<int>(alloy_msl::bounds_index<const float*, 0>(c, 0, 1, 0, kPast)), 9);
  EXPECT_EQ(static_cast<int>(alloy_msl::bounds_index<const float*, 0>(c, 0, 1, 0, true)), 1);
}

}  // namespace

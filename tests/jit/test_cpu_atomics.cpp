// Atomics under contention from many threadgroups running on all pool threads:
// int and float fetch_add (a plain float output cast to atomic_float*, as real
// kernels do), a compare-and-swap loop, and a threadgroup atomic counter.
#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

TEST(CpuAtomics, FetchAddAndCasUnderContention) {
  auto rng = seeded_rng("CpuAtomics.Contention");
  const unsigned n = 200000, tg = 256;
  auto x = random_floats(rng, n, -1.0f, 1.0f);
  std::vector<int> counts(4, 0);
  std::vector<float> sums(8, 0.0f);
  std::vector<float> maxv(1, -1e30f);
  std::vector<int> group_counts((n + tg - 1) / tg, -1);
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_atomics(const T* x, atomic<int>* counts, T* sums, atomic<T>* maxv, int* group_counts,
    uint3 thread_position_in_grid, uint thread_index_in_threadgroup, uint3 threadgroup_position_in_grid) {
  ALLOY_THREADGROUP atomic_int local_count;
  uint gid = thread_position_in_grid.x;
  if (thread_index_in_threadgroup == 0) atomic_store_explicit(&local_count, 0, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&counts[gid % 4], 1, memory_order_relaxed);
  atomic_fetch_add_explicit((atomic_float*)&sums[gid % 8], x[gid], memory_order_relaxed);
  T seen = atomic_load_explicit(maxv, memory_order_relaxed);
  while (seen < x[gid] &&
         !atomic_compare_exchange_weak_explicit(maxv, &seen, x[gid], memory_order_relaxed, memory_order_relaxed)) {
  }
  atomic_fetch_add_explicit(&local_count, 1, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (thread_index_in_threadgroup == 0)
    group_counts[threadgroup_position_in_grid.x] = atomic_load_explicit(&local_count, memory_order_relaxed);
}
)",
                                    R"(
  alloy_msl::cpu::run<true>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_atomics<float>(static_cast<const float*>(L->buffers[0]), static_cast<atomic<int>*>(L->buffers[1]),
        static_cast<float*>(L->buffers[2]), static_cast<atomic<float>*>(L->buffers[3]), static_cast<int*>(L->buffers[4]),
        t.thread_position_in_grid, t.thread_index_in_threadgroup, t.threadgroup_position_in_grid);
  });)"));
  launch(*k, {x.data(), counts.data(), sums.data(), maxv.data(), group_counts.data()}, {n}, {tg});
  for (int c = 0; c < 4; ++c) EXPECT_EQ(counts[c], int(n / 4)) << "counter " << c;
  for (int s = 0; s < 8; ++s) {
    double ref = 0, mag = 0;
    for (unsigned i = s; i < n; i += 8) ref += x[i], mag += std::fabs(x[i]);
    EXPECT_NEAR(sums[s], ref, 2e-6 * mag) << "sum " << s;  // float additions in any order
  }
  EXPECT_EQ(maxv[0], *std::max_element(x.begin(), x.end()));
  for (size_t g = 0; g < group_counts.size(); ++g)
    EXPECT_EQ(group_counts[g], int(std::min<size_t>(tg, n - g * tg))) << "group " << g;
}

TEST(CpuAtomics, FetchOpsReturnOldValues) {
  auto k = compile(translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_ops(atomic_uint* a, uint* out, uint3 thread_position_in_grid) {
  out[0] = atomic_fetch_or_explicit(&a[0], 6u, memory_order_relaxed);
  out[1] = atomic_fetch_and_explicit(&a[1], 6u, memory_order_relaxed);
  out[2] = atomic_fetch_xor_explicit(&a[2], 6u, memory_order_relaxed);
  out[3] = atomic_fetch_min_explicit(&a[3], 2u, memory_order_relaxed);
  out[4] = atomic_fetch_max_explicit(&a[4], 9u, memory_order_relaxed);
  out[5] = atomic_exchange_explicit(&a[5], 4u, memory_order_relaxed);
  out[6] = atomic_fetch_sub_explicit(&a[6], 1u, memory_order_relaxed);
  uint expected = 100;
  out[7] = atomic_compare_exchange_weak_explicit(&a[7], &expected, 8u, memory_order_relaxed, memory_order_relaxed);
  out[8] = expected;  // the observed value, written back on failure
}
)",
                                    R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_ops<float>(static_cast<atomic_uint*>(L->buffers[0]), static_cast<uint*>(L->buffers[1]),
                             t.thread_position_in_grid);
  });)"));
  std::vector<unsigned> a = {3, 3, 3, 5, 5, 7, 0, 11}, out(9, 99);
  launch(*k, {a.data(), out.data()}, {1}, {1});
  EXPECT_EQ(out, (std::vector<unsigned>{3, 3, 3, 5, 5, 7, 0, 0, 11}));
  EXPECT_EQ(a, (std::vector<unsigned>{7, 2, 5, 2, 9, 4, 0xffffffffu, 11}));
}

}  // namespace
}  // namespace alloy::jit::test

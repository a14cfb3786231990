// alloy::detail::ThreadPool: every index exactly once, nesting, exceptions,
// concurrent callers.
#include <alloy/detail/thread_pool.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

TEST(CpuThreadPool, EachIndexOnceAcrossCallersAndNesting) {
  alloy::detail::ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(10000);
  std::vector<std::thread> callers;
  for (int c = 0; c < 3; ++c) {
    callers.emplace_back([&] {
      pool.parallel_for(100, [&](size_t i) {
        pool.parallel_for(100, [&](size_t j) { hits[i * 100 + j].fetch_add(1); });  // nested: inline
      });
    });
  }
  for (auto& t : callers) t.join();
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 3) << i;
}

TEST(CpuThreadPool, ExceptionIsRethrownAfterAllFinish) {
  alloy::detail::ThreadPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.parallel_for(64,
                                 [&](size_t i) {
                                   ++ran;
                                   if (i == 7) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  EXPECT_GE(ran.load(), 1);
  std::atomic<int> after{0};
  pool.parallel_for(50, [&](size_t) { ++after; });  // the pool still works
  EXPECT_EQ(after.load(), 50);
}

}  // namespace

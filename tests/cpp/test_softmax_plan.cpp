// Which GPU softmax kernel a row shape takes (backend/cuda/softmax.h), on the
// host: the staged form (the next row copied into shared memory while this
// one is reduced) applies exactly to register-held softmax rows of 32 KB or
// more in whole 16-byte chunks that fit the shared memory, and the
// ahead-of-time set lists every form the launch can pick.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backend/cuda/softmax.h"

namespace alloy::cuda {
namespace {

constexpr int64_t kShared = 227 * 1024 - 1024;  // an H100's opt-in limit, less block_all's partials

RowSoftmaxPlan plan(int64_t n, int item, bool lse = false, int64_t shared = kShared) {
  return staged_rows(row_softmax_plan(lse, 1 << 14, n, 132), lse, n, item, shared);
}

TEST(SoftmaxPlan, LongAlignedRowsAreStaged) {
  EXPECT_TRUE(plan(8192, 4).staged);    // 32 KB, 256 threads
  EXPECT_TRUE(plan(16384, 4).staged);   // 64 KB
  EXPECT_TRUE(plan(32768, 4).staged);   // 128 KB, 1024 threads
  EXPECT_TRUE(plan(16384, 2).staged);   // half rows of 32 KB
  EXPECT_EQ(plan(32768, 4).variant(), "1024x32s");
  EXPECT_EQ(plan(16384, 4).variant(), "256x64s");
}

TEST(SoftmaxPlan, OtherRowsAreNot) {
  EXPECT_FALSE(plan(8191, 4).staged);          // under 32 KB
  EXPECT_FALSE(plan(8190 + 4096, 2).staged);   // 24572 bytes: not whole 16-byte chunks and under 32 KB
  EXPECT_FALSE(plan(12290, 4).staged);         // 49160 bytes: not whole 16-byte chunks
  EXPECT_FALSE(plan(8192, 8).staged);          // float64 keeps the register form
  EXPECT_FALSE(plan(16384, 4, true).staged);   // logsumexp streams
  EXPECT_FALSE(plan(32768, 4, false, 96 * 1024).staged);  // 128 KB does not fit a 96 KB device
  EXPECT_FALSE(plan(40000, 4).staged);         // longer than a register form holds: loops
  EXPECT_EQ(plan(12290, 4).variant(), "256x64");
}

TEST(SoftmaxPlan, TheAheadOfTimeSetHasEveryStagedForm) {
  for (int item : {2, 4}) {
    const auto forms = row_softmax_forms(false, item);
    for (int64_t n : {8192, 16384, 32768}) {
      const RowSoftmaxPlan p = plan(n * 4 / item, item, false, int64_t(1) << 30);
      if (!p.staged) continue;
      EXPECT_TRUE(std::any_of(forms.begin(), forms.end(), [&](const RowSoftmaxPlan& f) { return f.variant() == p.variant(); }))
          << p.variant() << " (item " << item << ")";
    }
  }
  for (const RowSoftmaxPlan& f : row_softmax_forms(false, 8)) EXPECT_FALSE(f.staged) << f.variant();
  for (const RowSoftmaxPlan& f : row_softmax_forms(true, 4)) EXPECT_FALSE(f.staged) << f.variant();
}

}  // namespace
}  // namespace alloy::cuda

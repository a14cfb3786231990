// Threadgroup memory the lanes of a SIMD group share between statements with
// no barrier: a barrier written in (msl/lockstep.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "alloy/msl/translate.h"
#include "msl/lockstep.h"
#include "msl/lexer.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
std::size_t count(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}
std::string line(const std::string& text, int n) {
  std::size_t at = 0;
  for (int i = 1; i < n; ++i) at = text.find('\n', at) + 1;
  return text.substr(at, text.find('\n', at) - at);
}

const std::string kGroupPoint = "threadgroup_barrier(mem_flags::mem_threadgroup);";
const std::string kSimdPoint = "simdgroup_barrier(mem_flags::mem_threadgroup);";
const std::string kWarpPoint = "::alloy_msl::lockstep_point();";

std::optional<LockstepPoints> points(const std::string& body, Target target = Target::Cpp) {
  const KernelSpec s = test::kernel(body);
  return add_lockstep_points(s, lex_kernel(s), target);
}

// xLSTM-metal's per-head layer norm: every lane reads tmp[0], then each
// writes tmp[lane] (lane from the grid position).
const char* kReadThenWriteOthers = R"(uint gid = thread_position_in_grid.x;
uint lane = gid & 31u;
threadgroup float tmp[32];
tmp[lane] = inp[gid];
threadgroup_barrier(mem_flags::mem_threadgroup);
float mean = tmp[0] / 32.0f;
float d = inp[gid] - mean;
tmp[lane] = d * d;
out[gid] = tmp[lane];
)";

TEST(MslLockstep, AWriteAfterOtherLanesReadWaitsForThem) {
  const auto p = points(kReadThenWriteOthers);
  ASSERT_TRUE(p);
  // At the body's own scope, every thread of the group is there: a threadgroup barrier.
  EXPECT_EQ(count(p->source, "_barrier("), 2u) << p->source;
  EXPECT_EQ(line(p->source, 8), kGroupPoint + " tmp[lane] = d * d;") << p->source;
  const std::string written = kReadThenWriteOthers;
  EXPECT_EQ(std::count(p->source.begin(), p->source.end(), '\n'), std::count(written.begin(), written.end(), '\n'));
  EXPECT_TRUE(contains(p->note, "A barrier is written in at line 8: ")) << p->note;
  // The translation runs it and says so; the Metal form keeps the body as written.
  const TranslatedKernel k = translate(test::kernel(kReadThenWriteOthers), Target::Cpp);
  EXPECT_TRUE(contains(k.source, "// " + p->note + ".\n")) << k.source;
  EXPECT_FALSE(contains(translate(test::kernel(kReadThenWriteOthers), Target::Metal).source, "_barrier(mem_flags::mem_threadgroup); tmp"));
  // CUDA: the warp's lanes executing the point, wherever it is.
  const auto c = points(kReadThenWriteOthers, Target::Cuda);
  ASSERT_TRUE(c);
  EXPECT_EQ(line(c->source, 8), kWarpPoint + " tmp[lane] = d * d;") << c->source;
  EXPECT_TRUE(contains(c->note, "The warp's lanes wait for each other at line 8: ")) << c->note;
  const TranslatedKernel cuda = translate(test::kernel(kReadThenWriteOthers), Target::Cuda);
  EXPECT_TRUE(contains(cuda.source, "// " + c->note + ".\n")) << cuda.source;
  EXPECT_TRUE(contains(cuda.source, kWarpPoint)) << cuda.source;
}

TEST(MslLockstep, AWarpSynchronousReductionGetsAPointBeforeEachStep) {
  const std::string body = R"(uint tid = thread_position_in_threadgroup.x;
threadgroup float s[64];
s[tid] = inp[tid];
threadgroup_barrier(mem_flags::mem_threadgroup);
if (tid < 32) {
  s[tid] += s[tid + 32];
  s[tid] += s[tid + 16];
  s[tid] += s[tid + 8];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
out[tid] = s[0];
)";
  const auto p = points(body);
  ASSERT_TRUE(p);
  // In a branch only some lanes take: a SIMD-group barrier of the lanes present.
  EXPECT_EQ(count(p->source, kSimdPoint), 2u) << p->source;
  EXPECT_EQ(line(p->source, 7), "  " + kSimdPoint + " s[tid] += s[tid + 16];");
  EXPECT_EQ(line(p->source, 8), "  " + kSimdPoint + " s[tid] += s[tid + 8];");
  EXPECT_TRUE(contains(p->note, "Barriers are written in at lines 7, 8: ")) << p->note;
  const auto c = points(body, Target::Cuda);
  ASSERT_TRUE(c);
  EXPECT_EQ(line(c->source, 7), "  " + kWarpPoint + " s[tid] += s[tid + 16];");
}

TEST(MslLockstep, ALoopThatSharesAcrossItsTripsWaitsAtTheEndOfEach) {
  const std::string body = R"(uint lane = thread_index_in_simdgroup;
threadgroup float s[64];
s[lane] = inp[lane];
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint k = 16; k > 0; k >>= 1) s[lane] += s[lane + k];
out[lane] = s[0];
)";
  const auto p = points(body);
  ASSERT_TRUE(p);
  EXPECT_EQ(line(p->source, 5), "for (uint k = 16; k > 0; k >>= 1) { s[lane] += s[lane + k]; " + kSimdPoint + " }");
  // After the loop every lane reads what the others wrote in it.
  EXPECT_EQ(line(p->source, 6), kGroupPoint + " out[lane] = s[0];");
  // With braces: the point goes before the closing one.
  std::string braced = body;
  braced.replace(braced.find("s[lane] += s[lane + k];"), 23, "{ s[lane] += s[lane + k]; }");
  const auto q = points(braced);
  ASSERT_TRUE(q);
  EXPECT_EQ(line(q->source, 5), "for (uint k = 16; k > 0; k >>= 1) { s[lane] += s[lane + k]; " + kSimdPoint + " }");
}

// mhc-mlx's reductions: a loop whose body has a threadgroup barrier is run
// by every thread, so its point is a threadgroup barrier (which the CPU's
// regions take inside such a loop; a SIMD-group call there they do not).
TEST(MslLockstep, ALoopWithAThreadgroupBarrierGetsOneMore) {
  const auto p = points(R"(uint lane = thread_position_in_threadgroup.x;
uint tpg = threads_per_threadgroup.x;
threadgroup float buf[256];
buf[lane] = inp[lane];
threadgroup_barrier(mem_flags::mem_threadgroup);
uint active = tpg;
while (active > 1) {
  uint stride = active / 2;
  if (lane < stride) { buf[lane] += buf[lane + stride]; }
  if ((active & 1u) != 0u && lane == 0u) { buf[0] += buf[active - 1u]; }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  active = stride + (active & 1u);
}
out[lane] = buf[0];
)");
  ASSERT_TRUE(p);
  EXPECT_EQ(line(p->source, 10), "  " + kGroupPoint + " if ((active & 1u) != 0u && lane == 0u) { buf[0] += buf[active - 1u]; }");
  EXPECT_EQ(count(p->source, kSimdPoint), 0u) << p->source;
  const TranslatedKernel k = translate(test::kernel(p->source), Target::Cpp);
  EXPECT_EQ(k.cpu_threads, "regions") << k.source;
}

TEST(MslLockstep, RaceFreeBodiesAreLeftAsWritten) {
  // A tile written, then read after a barrier; the declaration's extent is no use.
  EXPECT_FALSE(points(R"(uint2 l = thread_position_in_threadgroup.xy;
threadgroup float a[16][16];
threadgroup float b[16][16];
a[l.y][l.x] = inp[l.y * 16 + l.x];
b[l.y][l.x] = inp[256 + l.y * 16 + l.x];
threadgroup_barrier(mem_flags::mem_threadgroup);
float acc = 0;
for (int k = 0; k < 16; ++k) acc += a[l.y][k] * b[k][l.x];
out[l.y * 16 + l.x] = acc;
)"));
  // A thread's own element, written then read.
  EXPECT_FALSE(points(R"(uint tid = thread_position_in_threadgroup.x;
threadgroup float s[64];
s[tid] = inp[tid];
float v = s[tid] * 2.0f;
out[tid] = v;
)"));
  // One thread's work on subscripts every thread shares.
  EXPECT_FALSE(points(R"(uint tid = thread_position_in_threadgroup.x;
threadgroup float s[64];
if (tid == 0) {
  s[0] = inp[0];
  for (int i = 1; i < 64; ++i) s[i] = s[i - 1] + inp[i];
}
threadgroup_barrier(mem_flags::mem_threadgroup);
out[tid] = s[tid];
)"));
  // Two writes of different elements, and atomics.
  EXPECT_FALSE(points(R"(uint tid = thread_position_in_threadgroup.x;
threadgroup float s[128];
threadgroup atomic_int n[4];
s[2 * tid] = inp[tid];
s[2 * tid + 1] = 0.0f;
atomic_fetch_add_explicit(&n[tid % 4], 1, memory_order_relaxed);
atomic_fetch_add_explicit(&n[0], 1, memory_order_relaxed);
out[tid] = 1.0f;
)"));
  // No threadgroup memory at all.
  EXPECT_FALSE(points("uint i = thread_position_in_grid.x;\nout[i] = inp[i];\n"));
}

TEST(MslLockstep, ABarrierBetweenEndsTheRun) {
  EXPECT_FALSE(points(R"(uint lane = thread_index_in_simdgroup;
threadgroup float s[32];
s[lane] = inp[lane];
simdgroup_barrier(mem_flags::mem_threadgroup);
float v = s[31 - lane];
threadgroup_barrier(mem_flags::mem_threadgroup);
s[lane] = v;
out[lane] = s[lane];
)"));
  // simd_sum between is a synchronising statement too.
  EXPECT_FALSE(points(R"(uint lane = thread_index_in_simdgroup;
threadgroup float s[32];
float v = s[0];
float t = simd_sum(v);
s[lane] = t;
out[lane] = s[lane];
)"));
}

}  // namespace
}  // namespace alloy::msl

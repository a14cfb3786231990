// The reconvergence the front end writes before SIMD-group calls that every
// lane present makes (msl/converged_calls.h): at the kernel body's own scope
// and inside loops whose trips all threads share. Metal runs such a call over
// every thread present, CUDA needs the lanes brought together first when
// they left a loop or a branch at different times. Checked on the
// translation text of both targets.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "alloy/msl/translate.h"

namespace alloy::msl {
namespace {

constexpr const char* kReconverge = "::alloy_msl::simd_reconverge(); ";
constexpr const char* kEnd = " ::alloy_msl::simd_converged_end();";

// The end of a marked statement: on CUDA the lane unmarks itself after it
// (runtime/cuda_sync.h); the CPU's threads need no mark.
std::string ended(const std::string& statement, Target t) { return statement + (t == Target::Cuda ? kEnd : ""); }

std::string translated(const std::string& body, Target target, const std::string& header = "",
                       const std::vector<TemplateArg>& templates = {}) {
  KernelSpec s;
  s.name = "k";
  s.inputs = {{"a", "float"}, {"cnt", "int"}};
  s.outputs = {{"out", "float"}};
  s.template_args = templates;
  s.header = header;
  s.source = body;
  // The CPU's coroutine form keeps the body's statements in place (regions
  // rewrite them, and need no reconvergence: cpu_regions.h).
  s.cpu_sync = KernelSpec::CpuSync::Coroutines;
  return translate(s, target).source;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(MslSimdReconverge, CallsAtTheBodysScopeAfterALoopOrBranchAreReconverged) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float acc = 0.0f;\n"
      "for (int k = 0; k < cnt[i]; ++k) acc += a[i * 4 + k];\n"
      "float s = simd_sum(acc);\n"
      "if (acc > 0.0f) { acc = simd_prefix_inclusive_sum(acc); }\n"
      "#define TWICE(x) (2 * (x))\n"
      "out[i] = TWICE(simd_max(acc)) + s + simd_min(acc);\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string src = translated(body, t);
    // Two statements at the body's scope: one barrier each, even with two
    // calls in the second; none for the call inside the branch. On CUDA the
    // second calls a macro, which may branch: its barrier marks no lane.
    const std::string second = t == Target::Cuda ? "::alloy_msl::simd_reconverge_only(); " : kReconverge;
    EXPECT_EQ(count(src, kReconverge) + count(src, "::alloy_msl::simd_reconverge_only(); "), 2u) << src;
    // The CPU awaits each call (coroutine threads, msl/cpu_threads.h).
    auto call = [&](const std::string& c) { return t == Target::Cpp ? "(co_await " + c + ")" : c; };
    EXPECT_NE(src.find(std::string(kReconverge) + "float s = " + call("simd_sum(acc)") + ";"), std::string::npos) << src;
    EXPECT_NE(src.find(second + "out[i] = TWICE("), std::string::npos) << src;
    EXPECT_NE(src.find("{ acc = " + call("simd_prefix_inclusive_sum(acc)") + "; }"), std::string::npos) << src;
  }
}

TEST(MslSimdReconverge, BranchesLoopsBarriersAndCallsAfterAReturnAreLeftAlone) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float v = a[i];\n"
      "if (v > 0.0f) v = simd_sum(v);\n"              // a branch without braces
      "for (int k = 0; k < cnt[i]; ++k) v += simd_max(v);\n"  // trips differ between threads
      "for (uint k = i; k < 64; k += 32) v += simd_max(v);\n"  // so here
      "for (int k = 0; k < 4; ++k) { if (v > k) break; v += simd_max(v); }\n"  // a thread may leave
      "for (int k = 0; k < 4; ++k) { v += simd_min(v); k += 0; }\n"  // the body changes the counter
      "uint n = 3;\n"
      "for (uint k = 0; k < n; ++k) v += simd_min(v);\n"  // a body local: not followed
      "for (int k = 0; k < 2; ++k) { while (v > 1.0f) v = simd_sum(v) * 0.5f; }\n"  // a while loop's own
      "for (int k = 0; k < cnt[0]; ++k) v += simd_max(v);\n"  // a subscript another lane may write

      "simdgroup_barrier(mem_flags::mem_none);\n"     // synchronises itself
      "if (cnt[i] > 3) return;\n"
      "out[i] = simd_sum(v);\n";                       // lanes have left: no barrier
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string src = translated(body, t);
    EXPECT_EQ(count(src, kReconverge), 0u) << src;
  }
}

TEST(MslSimdReconverge, CallsInLoopsEveryThreadRunsTheSameTripsOfAreReconverged) {
  // mlx-lm's BitLinear: a loop whose trips differ between lanes, then a loop
  // of constant trips around simd_sum; on CUDA the lanes must be brought
  // together inside it, or each part of the warp sums on its own.
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float acc[4] = {0.0f};\n"
      "for (int k = i; k < cnt[0]; k += 32) acc[k & 3] += a[k];\n"
      "for (int j = 0; j < 4; j++) {\n"
      "  acc[j] = simd_sum(acc[j]);\n"
      "  for (int r = 1; r < N; r <<= 1) { acc[j] += simd_shuffle_xor(acc[j], r); }\n"
      "}\n"
      "for (int j = 0; j < 4; ++j) acc[j] = simd_max(acc[j]);\n"
      "out[i] = acc[0] + acc[1] + acc[2] + acc[3];\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string src = translated(body, t, "", {{"N", TemplateArg::Int, "8"}});
    // In the outer loop's block, in the inner loop (a template constant's
    // trips) and in the braceless loop, given a block of its own.
    EXPECT_EQ(count(src, kReconverge), 3u) << src;
    auto call = [&](const std::string& c) { return t == Target::Cpp ? "(co_await " + c + ")" : c; };
    EXPECT_NE(src.find(std::string(kReconverge) + "acc[j] = " + call("simd_sum(acc[j])") + ";"), std::string::npos)
        << src;
    EXPECT_NE(src.find("{ " + std::string(kReconverge) + "acc[j] += " + call("simd_shuffle_xor(acc[j], r)")),
              std::string::npos)
        << src;
    EXPECT_NE(src.find("{ " + std::string(kReconverge) + ended("acc[j] = " + call("simd_max(acc[j])") + ";", t) + " }"),
              std::string::npos)
        << src;
  }
}

TEST(MslSimdReconverge, CallsUnderABranchEveryThreadTakesAlikeAreReconverged) {
  // mlx-lm's norms: `if (TG > 32)` around the cross-SIMD-group reduction,
  // after lanes left a loop at different trips. Every lane present takes
  // the branch, so the barrier is safe there and brings the lanes together.
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float acc = 0.0f;\n"
      "for (int k = 0; k < cnt[i]; ++k) acc += a[i * 4 + k];\n"
      "if (threads_per_threadgroup.x > N) {\n"
      "  acc = simd_sum(acc);\n"
      "} else if (N > 4) acc = simd_max(acc);\n"
      "else { acc = simd_min(acc); }\n"
      "if (acc > 0.0f) acc = simd_sum(acc);\n"  // differs between lanes: left alone
      "out[i] = acc;\n";
  const std::string src = translated(body, Target::Cuda, "", {{"N", TemplateArg::Int, "8"}});
  // The first branch's block, the braceless `else if` (given a block of its
  // own) and the last `else`'s block; not the lanes' own branch.
  EXPECT_EQ(count(src, kReconverge), 3u) << src;
  EXPECT_NE(src.find(std::string(kReconverge) + "acc = simd_sum(acc);"), std::string::npos) << src;
  EXPECT_NE(src.find("{ " + std::string(kReconverge) + "acc = simd_max(acc);" + kEnd + " }"), std::string::npos) << src;
  EXPECT_NE(src.find(std::string(kReconverge) + "acc = simd_min(acc);"), std::string::npos) << src;
}

TEST(MslSimdReconverge, LoopsBoundedByAHeadersConstantsAreFollowedButNotByItsMacros) {
  // mlx-vlm's NVFP4 argmax: `for (row = 0; row < RESULTS_PER_SIMDGROUP; ...)`
  // around simd_sum, the bound a program-scope constant of the header (MSL's
  // are `constant`, the same for every thread); a macro may name anything.
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float acc = a[i];\n"
      "for (int r = 0; r < ROWS; ++r) acc = simd_sum(acc);\n"
      "for (int r = 0; r < LANE_BOUND; ++r) acc = simd_max(acc);\n"
      "out[i] = acc;\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string src =
        translated(body, t, "constant constexpr int ROWS = 4;\n#define LANE_BOUND (thread_index_in_simdgroup + 1)\n");
    EXPECT_EQ(count(src, kReconverge), 1u) << src;
    auto call = [&](const std::string& c) { return t == Target::Cpp ? "(co_await " + c + ")" : c; };
    EXPECT_NE(src.find("{ " + std::string(kReconverge) + ended("acc = " + call("simd_sum(acc)") + ";", t) + " }"), std::string::npos)
        << src;
  }
}

// On CUDA a reconverged statement marks its lanes until it ends, so its
// calls name every lane present (an H100 summed BitLinear's rows in two
// parts after the barrier alone); statements one after another share one
// mark; a statement whose calls may sit in a branch of its own, or that
// calls a function of the kernel's own (which may), gets the barrier
// without the mark.
TEST(MslSimdReconverge, StatementsAreMarkedUntilTheyEndUnlessTheyBranch) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float v = a[i];\n"
      "for (int k = 0; k < cnt[i]; ++k) v += a[k];\n"
      "float s = simd_sum(v);\n"
      "float s2 = simd_max(v);\n"  // goes on the run of marks of the statement before
      "float m = v > 0.0f ? simd_max(v) : 0.0f;\n"
      "bool b = v > 1.0f && simd_any(v > 2.0f);\n"
      "float h = simd_sum(helper(v)) + max(exp(v), float(i));\n"  // a function of the kernel's own
      "float g = simd_sum(max(exp(v), static_cast<float>(i)));\n"  // builtins only
      "out[i] = s + s2 + m + b + h + g;\n";
  const std::string src = translated(body, Target::Cuda, "float helper(float x) { return x * 2.0f; }\n");
  EXPECT_NE(src.find(std::string(kReconverge) + "float s = simd_sum(v);\nfloat s2 = simd_max(v);" + kEnd),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("::alloy_msl::simd_reconverge_only(); float m = "), std::string::npos) << src;
  EXPECT_NE(src.find("::alloy_msl::simd_reconverge_only(); bool b = "), std::string::npos) << src;
  EXPECT_NE(src.find("::alloy_msl::simd_reconverge_only(); float h = "), std::string::npos) << src;
  EXPECT_NE(src.find(std::string(kReconverge) + "float g = "), std::string::npos) << src;
  EXPECT_EQ(count(src, kEnd), 2u) << src;
  // The CPU's threads take neither the mark nor its end.
  EXPECT_EQ(count(translated(body, Target::Cpp), kEnd), 0u);
}

// A body the statement parser declines (a for header without its second
// `;`, found by the fuzzer) still translates: the compiler reports it, and
// calls at the body's own scope are reconverged as before.
TEST(MslSimdReconverge, BodiesTheParserDeclinesKeepTheBodysScope) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float v = a[i];\n"
      "for (int j = 0 < 4; ++j) v += simd_max(v);\n"
      "out[i] = simd_sum(v);\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string src = translated(body, t);
    EXPECT_EQ(count(src, kReconverge), 1u) << src;
  }
}

}  // namespace
}  // namespace alloy::msl

// The reconvergence the front end writes before SIMD-group calls at the
// kernel body's own scope (msl/rewrite.cpp): Metal runs such a call over
// every thread present, CUDA needs the lanes brought together first when
// they left a loop or a branch at different times. Checked on the
// translation text of both targets.
#include <gtest/gtest.h>

#include <string>

#include "alloy/msl/translate.h"

namespace alloy::msl {
namespace {

constexpr const char* kReconverge = "::alloy_msl::simd_reconverge(); ";

std::string translated(const std::string& body, Target target) {
  KernelSpec s;
  s.name = "k";
  s.inputs = {{"a", "float"}, {"cnt", "int"}};
  s.outputs = {{"out", "float"}};
  s.source = body;
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
    // calls in the second; none for the call inside the branch.
    EXPECT_EQ(count(src, kReconverge), 2u) << src;
    // The CPU awaits each call (coroutine threads, msl/cpu_threads.h).
    auto call = [&](const std::string& c) { return t == Target::Cpp ? "(co_await " + c + ")" : c; };
    EXPECT_NE(src.find(std::string(kReconverge) + "float s = " + call("simd_sum(acc)") + ";"), std::string::npos) << src;
    EXPECT_NE(src.find(std::string(kReconverge) + "out[i] = TWICE("), std::string::npos) << src;
    EXPECT_NE(src.find("{ acc = " + call("simd_prefix_inclusive_sum(acc)") + "; }"), std::string::npos) << src;
  }
}

TEST(MslSimdReconverge, BranchesLoopsBarriersAndCallsAfterAReturnAreLeftAlone) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float v = a[i];\n"
      "if (v > 0.0f) v = simd_sum(v);\n"              // a branch without braces
      "for (int k = 0; k < 2; ++k) v += simd_max(v);\n"  // a loop without braces
      "simdgroup_barrier(mem_flags::mem_none);\n"     // synchronises itself
      "if (cnt[i] > 3) return;\n"
      "out[i] = simd_sum(v);\n";                       // lanes have left: no barrier
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string src = translated(body, t);
    EXPECT_EQ(count(src, kReconverge), 0u) << src;
  }
}

}  // namespace
}  // namespace alloy::msl

// What the front end adds for issue 14, on the translation text alone:
// bounds checks around the subscripts of buffers and threadgroup arrays
// (KernelSpec::bounds_check), and the cancellation poll in loops without a
// counted bound (every translation).
#include <gtest/gtest.h>

#include <string>

#include "alloy/msl/translate.h"

namespace alloy::msl {
namespace {

KernelSpec spec(const std::string& source, bool checked) {
  KernelSpec s;
  s.name = "k";
  s.inputs = {{"a", "float"}};
  s.outputs = {{"out", "float"}};
  s.source = source;
  s.bounds_check = checked;
  return s;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(MslSafetyRewrite, BoundsChecksWrapBufferAndThreadgroupSubscripts) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "threadgroup float tile[4][8];\n"
      "tile[i / 8][i % 8] = a[i];\n"
      "out[i] += tile[0][i % 8];\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    // Threads as fibers on the CPU: the body as written (regions and
    // coroutines rewrite it further; tests/python/test_bounds_check.py runs them).
    KernelSpec checked = spec(body, true);
    checked.cpu_sync = KernelSpec::CpuSync::Fibers;
    TranslatedKernel k = translate(checked, t);
    // a[i], out[i], and two dimensions of each tile access; not the declarator.
    EXPECT_EQ(count(k.source, "::alloy_msl::bounds_index<"), 6u) << k.source;
    EXPECT_NE(k.source.find("tile[4][8]"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("bounds_index<decltype(out), 0>)(alloy_bc, 1, 4, 1, (i))"), std::string::npos)
        << k.source;  // slot 1 (the output), line 4, a write
    EXPECT_NE(k.source.find("bounds_index<decltype(tile), 1>)(alloy_bc, 2, 3, 1,"), std::string::npos) << k.source;
    ASSERT_EQ(k.bounds_names.size(), 3u);
    EXPECT_EQ(k.bounds_names[2], "tile");
    EXPECT_NE(k.source.find("const ::alloy_msl::BoundsCheck& alloy_bc"), std::string::npos) << k.source;
    TranslatedKernel plain = translate(spec(body, false), t);
    EXPECT_EQ(count(plain.source, "bounds_index"), 0u);
    EXPECT_TRUE(plain.bounds_names.empty());
  }
}

TEST(MslSafetyRewrite, RaceChecksWrapWholeThreadgroupElementsOnTheCpuOnly) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "threadgroup float tile[4][8];\n"
      "tile[i / 8][i % 8] = a[i];\n"
      "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "out[i] += tile[0][i % 8];\n";
  KernelSpec raced = spec(body, true);
  raced.race_check = true;
  TranslatedKernel cpu = translate(raced, Target::Cpp);
  // Both tile accesses, each element whole (its two checked subscripts inside); no buffer.
  EXPECT_EQ(count(cpu.source, "::alloy_msl::race_access("), 2u) << cpu.source;
  EXPECT_NE(cpu.source.find("(*::alloy_msl::race_access(alloy_bc, 2, 3, 1, &(tile["), std::string::npos) << cpu.source;
  EXPECT_NE(cpu.source.find("(*::alloy_msl::race_access(alloy_bc, 2, 5, 0, &(tile["), std::string::npos) << cpu.source;
  EXPECT_NE(cpu.source.find("), (const void*)(tile)))"), std::string::npos) << cpu.source;
  EXPECT_NE(cpu.source.find("#define ALLOY_MSL_CPU_RACE_CHECK 1"), std::string::npos);
  EXPECT_NE(cpu.source.find("#include \"metal_race.h\""), std::string::npos);
  EXPECT_NE(cpu.source.find("// Race check: accesses to threadgroup arrays are checked between barriers."),
            std::string::npos);
  EXPECT_EQ(count(cpu.source, "bounds_index<"), 6u);  // the bounds checks stay
  TranslatedKernel gpu = translate(raced, Target::Cuda);
  EXPECT_EQ(count(gpu.source, "race_access"), 0u) << gpu.source;
  EXPECT_EQ(count(gpu.source, "Race check"), 0u);
  raced.cpu_sync = KernelSpec::CpuSync::Fibers;  // not regions: said, and the calls do nothing
  EXPECT_NE(translate(raced, Target::Cpp).source.find("// Race check: not done"), std::string::npos);
}

TEST(MslSafetyRewrite, UnboundedLoopsPollAndCountedLoopsDoNot) {
  const std::string body =
      "float v = a[0];\n"
      "while (v > 0.0f) v -= 1.0f;\n"
      "do { v += 1.0f; } while (v < 3.0f);\n"
      "for (;;) { if (v > 9.0f) break; v *= 2.0f; }\n"
      "for (int k = 0; k < 9;) { ++k; }\n"
      "for (int k = 0; k < 4; ++k) v += 1.0f;\n"
      "out[0] = v;\n";
  TranslatedKernel k = translate(spec(body, false), Target::Cuda);
  EXPECT_EQ(count(k.source, "::alloy_msl::keep_going()"), 4u) << k.source;
  EXPECT_NE(k.source.find("while ((v > 0.0f) && ::alloy_msl::keep_going())"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("for (; ::alloy_msl::keep_going();)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("for (int k = 0; k < 4; ++k)"), std::string::npos) << k.source;
}

// alloy.mlx on MLX's CUDA backend (KernelSpec::tolerate_input_reads): only
// the inputs' subscripts go through bounds_index, which the runtime then
// makes a clamp to element 0 with no report; outputs and threadgroup arrays
// are left as written, and no race check is made.
TEST(MslSafetyRewrite, TolerantInputReadsWrapTheInputsOnly) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "threadgroup float tile[4][8];\n"
      "tile[i / 8][i % 8] = a[i - 1];\n"
      "out[i] += tile[0][i % 8];\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    KernelSpec tolerant = spec(body, true);
    tolerant.tolerate_input_reads = true;
    tolerant.race_check = true;  // ignored: nothing but the inputs is checked
    tolerant.cpu_sync = KernelSpec::CpuSync::Fibers;
    TranslatedKernel k = translate(tolerant, t);
    EXPECT_EQ(count(k.source, "::alloy_msl::bounds_index<"), 1u) << k.source;
    EXPECT_NE(k.source.find("bounds_index<decltype(a), 0>)(alloy_bc, 0, 3, 0, (i - 1))"), std::string::npos)
        << k.source;
    EXPECT_NE(k.source.find("#define ALLOY_BOUNDS_INPUT_READS_ONLY 1\n#include \"metal_bounds.h\""),
              std::string::npos)
        << k.source;
    EXPECT_EQ(count(k.source, "race_access"), 0u) << k.source;
    ASSERT_EQ(k.bounds_names.size(), 1u);
    EXPECT_EQ(k.bounds_names[0], "a");
    // The checked form of the same spec reports, and so has no such define.
    KernelSpec checked = spec(body, true);
    checked.cpu_sync = KernelSpec::CpuSync::Fibers;
    EXPECT_EQ(count(translate(checked, t).source, "ALLOY_BOUNDS_INPUT_READS_ONLY"), 0u);
  }
}

}  // namespace
}  // namespace alloy::msl

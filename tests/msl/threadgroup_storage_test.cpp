// KernelSpec::threadgroup_storage on the CUDA target: kernel-scope
// threadgroup arrays kept allocated (to size them) or moved to dynamic
// shared memory (over CUDA's 48 KB static limit); other forms stay static.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;
using Storage = KernelSpec::ThreadgroupStorage;

const char* kBody =
    "threadgroup float stage[N][2];\n"
    "threadgroup uint count;\n"
    "threadgroup float a[4], b[4];\n"
    "if (inp[0] > 0) { threadgroup float nested[8]; nested[0] = 1; out[1] = nested[0]; }\n"
    "stage[0][1] = inp[0]; count = 1; a[0] = b[0] = 0;\n"
    "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
    "out[0] = stage[0][1] + count;\n";

TranslatedKernel translate_with(Storage storage, Target target = Target::Cuda) {
  KernelSpec s;
  s.name = "k";
  s.inputs = {param("inp", "float")};
  s.outputs = {param("out", "float")};
  s.template_args = {{"N", TemplateArg::Int, "64"}};
  s.source = kBody;
  s.threadgroup_storage = storage;
  return translate(s, target);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ThreadgroupStorage, DynamicTakesKernelScopeArraysInOrder) {
  TranslatedKernel k = translate_with(Storage::Dynamic);
  EXPECT_EQ(k.kernel_scope_threadgroup_arrays, 2);
  EXPECT_TRUE(contains(k.source, "unsigned alloy_tg_cursor = 0;")) << k.source;
  EXPECT_TRUE(contains(k.source,
                       "float (&stage)[N][2] = *alloy_msl::cuda::threadgroup_take<float[N][2]>(alloy_tg_cursor);"));
  EXPECT_TRUE(contains(k.source, "uint (&count) = *alloy_msl::cuda::threadgroup_take<uint>(alloy_tg_cursor);"));
  // Several declarators, and arrays in nested scopes, keep static storage.
  EXPECT_TRUE(contains(k.source, "ALLOY_THREADGROUP float a[4], b[4];"));
  EXPECT_TRUE(contains(k.source, "ALLOY_THREADGROUP float nested[8];"));
  // The user's line stays where it was.
  int g = k.lines.generated_line(Origin::Source, 2);
  ASSERT_GT(g, 0);
  EXPECT_EQ(k.lines.lines[g - 1].line, 2);
}

TEST(ThreadgroupStorage, StaticKeptKeepsEveryKernelScopeArray) {
  TranslatedKernel k = translate_with(Storage::StaticKept);
  EXPECT_EQ(k.kernel_scope_threadgroup_arrays, 2);
  EXPECT_TRUE(contains(k.source, "ALLOY_THREADGROUP float stage[N][2]; alloy_msl::cuda::keep_threadgroup(&stage);"))
      << k.source;
  EXPECT_TRUE(contains(k.source, "ALLOY_THREADGROUP uint count; alloy_msl::cuda::keep_threadgroup(&count);"));
  EXPECT_FALSE(contains(k.source, "alloy_tg_cursor"));
}

TEST(ThreadgroupStorage, StaticByDefaultAndOnTheCpu) {
  for (auto [storage, target] : {std::pair{Storage::Static, Target::Cuda}, std::pair{Storage::Dynamic, Target::Cpp}}) {
    TranslatedKernel k = translate_with(storage, target);
    EXPECT_EQ(k.kernel_scope_threadgroup_arrays, 0);
    EXPECT_TRUE(contains(k.source, "ALLOY_THREADGROUP float stage[N][2];"));
    EXPECT_FALSE(contains(k.source, "threadgroup_take"));
    EXPECT_FALSE(contains(k.source, "keep_threadgroup"));
  }
}

}  // namespace
}  // namespace alloy::msl

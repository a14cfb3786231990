// Which atomic outputs a kernel only adds to (msl/private_adds.h): their adds
// become plain when a CPU worker has a copy of its own, so every other use
// must keep the output atomic.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

KernelSpec atomic_kernel(std::string source, std::string header = "") {
  KernelSpec s = test::kernel(std::move(source), std::move(header), {param("inp", "float")},
                              {param("a", "float"), param("b", "int")});
  s.atomic_outputs = true;
  return s;
}

std::vector<int> add_only(const KernelSpec& s) { return translate(s, Target::Cpp).private_add_outputs; }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(MslPrivateAdds, DiscardedAddsAndSubsQualify) {
  KernelSpec s = atomic_kernel(
      "uint i = thread_position_in_grid.x;\n"
      "if (i < 4) atomic_fetch_add_explicit(&a[i % 2], inp[i], memory_order_relaxed);\n"
      "else { atomic_fetch_sub_explicit(&b[(i * 3) % 5], 1, memory_order_relaxed); }\n"
      "(void)0; atomic_fetch_add_explicit(&a[0], 1.0f, memory_order_relaxed);\n");
  EXPECT_EQ(add_only(s), (std::vector<int>{0, 1}));
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_TRUE(contains(k.source, "::alloy_msl::cpu::fetch_add_private(alloy_plain_adds, &a[i % 2]"));
  EXPECT_TRUE(contains(k.source, "::alloy_msl::cpu::fetch_sub_private(alloy_plain_adds, &b[(i * 3) % 5]"));
  // Made once for each choice: the glue picks one as the launch says.
  EXPECT_TRUE(contains(k.source, "auto alloy_plain_adds"));
  EXPECT_TRUE(contains(k.source, "(L->plain_adds != 0 ? "));
  EXPECT_TRUE(contains(k.source, "::alloy_msl::cpu::PlainAdds<true>{})"));
  EXPECT_TRUE(contains(k.source, ": " + k.kernel_name + "("));
  EXPECT_TRUE(contains(k.source, "::alloy_msl::cpu::PlainAdds<false>{}))"));
  // The GPU keeps its atomics.
  EXPECT_FALSE(contains(translate(s, Target::Cuda).source, "fetch_add_private"));
  // So does a bounds-checked kernel (its checks index the real buffers).
  s.bounds_check = true;
  EXPECT_TRUE(add_only(s).empty());
}

TEST(MslPrivateAdds, AnyOtherUseKeepsTheOutputAtomic) {
  const char* other_uses[] = {
      "float old = atomic_fetch_add_explicit(&a[0], 1.0f, memory_order_relaxed); b[0] = 0;",  // result used
      "atomic_fetch_add_explicit(&a[0], 1.0f, memory_order_relaxed);\n"
      "float v = atomic_load_explicit(&a[1], memory_order_relaxed);",                           // a read
      "atomic_fetch_max_explicit(&a[0], 1.0f, memory_order_relaxed);",                          // not an add
      "atomic_store_explicit(&a[0], 1.0f, memory_order_relaxed);",
      "device atomic<float>* p = &a[1]; atomic_fetch_add_explicit(p, 1.0f, memory_order_relaxed);",
      "atomic_fetch_add_explicit(a + 1, 1.0f, memory_order_relaxed);",                          // not &a[...]
      "for (uint k = 0; k < 2; atomic_fetch_add_explicit(&a[k], 1.0f, memory_order_relaxed)) ++k;",
      "#define READ_A atomic_load_explicit(&a[0], memory_order_relaxed)\n"
      "atomic_fetch_add_explicit(&a[0], READ_A, memory_order_relaxed);",                        // a macro reads it
  };
  for (const char* body : other_uses) {
    SCOPED_TRACE(body);
    EXPECT_EQ(add_only(atomic_kernel(body)), std::vector<int>{}) << body;
  }
  // A header macro naming the output could read it.
  EXPECT_TRUE(add_only(atomic_kernel("atomic_fetch_add_explicit(&a[0], 1.0f, memory_order_relaxed);",
                                     "#define PEEK atomic_load_explicit(&a[0], memory_order_relaxed)\n"))
                  .empty());
  // An output the body never names has nothing to privatise.
  EXPECT_EQ(add_only(atomic_kernel("atomic_fetch_add_explicit(&b[0], 1, memory_order_relaxed);")),
            std::vector<int>{1});
  // Without atomic_outputs there are no atomic outputs.
  KernelSpec plain = atomic_kernel("a[0] = 1.0f; b[0] = 2;");
  plain.atomic_outputs = false;
  EXPECT_TRUE(add_only(plain).empty());
}

TEST(MslPrivateAdds, TheSeedGradientAddsToBothOutputs) {
  KernelSpec s = test::grid_sample_grad();
  EXPECT_EQ(add_only(s), (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace alloy::msl

// Compiles every form of the op kernels (the catalog of
// backend/cuda/kernel_sources.h) with NVRTC for sm_90: no GPU needed, so CI
// catches a kernel or shared functor header that stops compiling on the device.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "jit/nvrtc.h"

namespace {

using alloy::cuda::kernel_catalog;

TEST(CudaOpsCompile, CatalogCoversEveryFamily) {
  std::set<std::string> families;
  for (const auto& e : kernel_catalog()) families.insert(e.key.substr(0, e.key.find('/')));
  for (const char* f : {"map", "zip", "select", "creation", "reduce", "arg_reduce", "scan", "gather", "scatter",
                        "random", "gemm", "sort"}) {
    EXPECT_TRUE(families.count(f)) << "no catalog entry for family " << f;
  }
}

TEST(CudaOpsCompile, EveryKernelCompilesForSm90) {
  if (!alloy::jit::nvrtc_available()) {
    GTEST_SKIP() << "NVRTC is not available: " << alloy::jit::nvrtc_unavailable_reason();
  }
  const alloy::jit::NvrtcOptions opts = alloy::cuda::kernel_compile_options("sm_90");
  auto catalog = kernel_catalog();
  ASSERT_GT(catalog.size(), 100u);
  auto t0 = std::chrono::steady_clock::now();
  int failures = 0;
  for (const auto& e : catalog) {
    try {
      alloy::jit::NvrtcOutput out = alloy::jit::nvrtc_compile(e.source, "test_" + e.name + ".cu", opts);
      EXPECT_EQ(alloy::jit::cubin_sm_arch(out.cubin), 90) << e.key;
      // The kernel is extern "C": its name appears verbatim in the ELF.
      EXPECT_NE(out.cubin.find(e.name), std::string::npos) << e.key << " defines no kernel " << e.name;
      EXPECT_EQ(out.log.find("warning"), std::string::npos) << e.key << ":\n" << out.log;
    } catch (const std::exception& ex) {
      ++failures;
      ADD_FAILURE() << e.key << " failed to compile:\n" << ex.what() << "\n--- source ---\n" << e.source;
      if (failures > 5) break;  // one broken header breaks everything: stop early
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ compiled ] %zu op kernels for sm_90 in %.1f s\n", catalog.size(), s);
}

}  // namespace

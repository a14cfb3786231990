// Every golden translation of the front end (tests/msl/golden/) compiled by
// the real compilers: the C++ ones by the host compiler (and loaded), the
// CUDA ones by NVRTC for sm_90, so a translation or runtime-header change
// that breaks compilation fails here, on machines without a GPU too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "jit/cpu_kernel.h"
#include "jit/nvrtc.h"
#include "../common/seed_sources.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> goldens(const std::string& suffix) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator(fs::path(alloy_test::source_root()) / "tests" / "msl" / "golden")) {
    const std::string name = e.path().filename().string();
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST(GoldenCompile, EveryCudaTranslationCompilesForSm90) {
  auto files = goldens(".cuda.cu");
  ASSERT_GE(files.size(), 8u) << "the golden translations are missing";
  ASSERT_TRUE(alloy::jit::nvrtc_available()) << alloy::jit::nvrtc_unavailable_reason();
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    alloy::jit::NvrtcOptions opts;
    opts.arch = "sm_90";
    try {
      auto out = alloy::jit::nvrtc_compile(read(f), f.filename().string(), opts);
      EXPECT_EQ(alloy::jit::cubin_sm_arch(out.cubin), 90);
    } catch (const alloy::jit::CompileError& e) {
      ADD_FAILURE() << e.log();
    }
  }
}

TEST(GoldenCompile, EveryCppTranslationCompilesAndLoads) {
  auto files = goldens(".cpu.cc");
  ASSERT_GE(files.size(), 8u) << "the golden translations are missing";
  for (const auto& f : files) {
    SCOPED_TRACE(f.filename().string());
    try {
      auto kernel = alloy::jit::compile_cpu(read(f));
      EXPECT_NE(kernel->entry(), nullptr);
    } catch (const alloy::jit::CompileError& e) {
      ADD_FAILURE() << e.log();
    }
  }
}

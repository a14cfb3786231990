// Golden translations: each test kernel's Metal form, C++ (CPU) and CUDA
// translation must equal tests/msl/golden/<kernel>.{metal,cpu.cc,cuda.cu}.
// ALLOY_UPDATE_GOLDEN=1 rewrites the files instead (review the diff!).
// The .cpu.cc (not .cpp: the test glob would build it) and .cuda.cu files are complete translation units meant to be
// compiled against src/msl/runtime/ by the host compiler and NVRTC.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "alloy/msl/translate.h"
#include "test_kernels.h"
#include "../common/seed_sources.h"

namespace alloy::msl {
namespace {

std::string golden_path(const std::string& name, Target t) {
  const char* ext = t == Target::Metal ? ".metal" : t == Target::Cpp ? ".cpu.cc" : ".cuda.cu";
  return alloy_test::source_root() + "/tests/msl/golden/" + name + ext;
}

bool updating() {
  const char* v = std::getenv("ALLOY_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

class MslGolden : public ::testing::TestWithParam<std::tuple<int, Target>> {};

TEST_P(MslGolden, MatchesFile) {
  auto [index, target] = GetParam();
  test::NamedKernel nk = test::golden_kernels()[index];
  std::string got = translate(nk.make(), target).source;
  std::string path = golden_path(nk.name, target);
  if (updating()) {
    std::ofstream(path, std::ios::binary) << got;
    std::cout << "updated " << path << "\n";
    return;
  }
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f.good()) << "missing golden " << path << " (run with ALLOY_UPDATE_GOLDEN=1)";
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(got, want.str()) << "translation of " << nk.name << " differs from " << path
                             << " (if intended: ALLOY_UPDATE_GOLDEN=1)";
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<int, Target>>& info) {
  auto [index, target] = info.param;
  const char* t = target == Target::Metal ? "metal" : target == Target::Cpp ? "cpu" : "cuda";
  return test::golden_kernels()[index].name + "_" + t;
}

INSTANTIATE_TEST_SUITE_P(AllKernels, MslGolden,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(
                                                                    test::golden_kernels().size())),
                                            ::testing::Values(Target::Metal, Target::Cpp,
                                                              Target::Cuda)),
                         case_name);

}  // namespace
}  // namespace alloy::msl

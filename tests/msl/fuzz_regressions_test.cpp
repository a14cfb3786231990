// Every input the MSL fuzzer (tests/fuzz) found crashing, hanging or
// throwing an undocumented exception, replayed through the fuzzer's own
// harness: each must now end in a translation or a documented error.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <typeinfo>

#include "../common/seed_sources.h"
#include "../fuzz/msl_fuzz_input.h"

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> regression_inputs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(alloy_test::source_root()) / "tests" / "fuzz" / "regressions"))
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(MslFuzzRegressions, EveryInputEndsInATranslationOrADocumentedError) {
  const std::vector<fs::path> inputs = regression_inputs();
  ASSERT_FALSE(inputs.empty());
  for (const fs::path& path : inputs) {
    SCOPED_TRACE(path.filename().string());
    std::ifstream f(path, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    try {
      const alloy_fuzz::Outcome o =
          alloy_fuzz::run_input(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
      EXPECT_GT(o.translations + o.errors, 0);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "undocumented exception " << typeid(e).name() << ": " << e.what();
    }
  }
}

// The harness reads its input format as documented (tests/fuzz/msl_fuzz_input.h).
TEST(MslFuzzRegressions, InputFormat) {
  const alloy_fuzz::Input in = alloy_fuzz::parse_input(
      "PR in=a:int:s,b:half:c out=o:float tpl=T:T:float,N:I:4 tg=64\nbody\n//@header\nhdr\n//@log\nlog");
  EXPECT_EQ(in.mode, alloy_fuzz::Input::Mode::Program);
  EXPECT_EQ(in.spec.math_mode, "relaxed");
  ASSERT_EQ(in.spec.inputs.size(), 2u);
  EXPECT_TRUE(in.spec.inputs[0].is_scalar);
  EXPECT_TRUE(in.spec.inputs[1].in_constant);
  EXPECT_EQ(in.spec.outputs[0].name, "o");
  ASSERT_EQ(in.spec.template_args.size(), 2u);
  EXPECT_EQ(in.spec.template_args[1].kind, alloy::msl::TemplateArg::Int);
  EXPECT_EQ(in.threadgroup_bytes, std::vector<unsigned>{64});
  EXPECT_EQ(in.spec.source, "body");
  EXPECT_EQ(in.spec.header, "hdr");
  EXPECT_EQ(in.log, "log");
}

}  // namespace

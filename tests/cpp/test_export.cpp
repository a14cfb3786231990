// export_function / import_function from C++: a traced function with a
// constant and a keyword input, rebuilt from its file on new inputs; several
// traces in one file; a call matching none is an invalid_argument.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "alloy/alloy.h"

using namespace alloy;

namespace {
std::mt19937 rng(std::random_device{}());
std::vector<float> uniform(size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  return v;
}
std::string temp_file(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + std::to_string(rng()))).string();
}
}  // namespace

TEST(Export, RebuildsTheGraphOnNewInputs) {
  const std::vector<float> c = uniform(4);
  array constant(c, {4});
  ExportableFunction f = [&](const ExportArgs& a, const ExportKwargs& k) {
    return std::vector<array>{exp(a[0]) * constant + k.at("bias"), sum(a[0])};
  };
  const std::string path = temp_file("alloy_export_");
  export_function(path, f, {array(uniform(4), {4})}, {{"bias", array(0.5f)}});
  ImportedFunction g = import_function(path);
  const std::vector<float> x = uniform(4);
  auto out = g({array(x, {4})}, {{"bias", array(-2.0f)}});
  ASSERT_EQ(out.size(), 2u);
  array y = to_host(out[0]);
  double total = 0;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(y.data<float>()[i], std::exp(x[i]) * c[i] - 2.0f, 1e-5);
    total += x[i];
  }
  EXPECT_NEAR(to_host(out[1]).data<float>()[0], total, 1e-5);
  EXPECT_THROW(g({array(uniform(3), {3})}, {{"bias", array(0.0f)}}), std::invalid_argument);
  std::filesystem::remove(path);
}

TEST(Export, SeveralTracesInOneFile) {
  const std::string path = temp_file("alloy_exporter_");
  FunctionExporter e(path, [](const ExportArgs& a, const ExportKwargs&) { return std::vector<array>{a[0] * 2}; });
  e({array(uniform(2), {2})});
  e({array(uniform(6), {2, 3})});
  e.close();
  EXPECT_THROW(e({array(uniform(1), {1})}), std::runtime_error);
  ImportedFunction g = import_function(path);
  for (Shape s : {Shape{2}, Shape{2, 3}}) {
    auto out = g({ones(s)});
    EXPECT_EQ(out[0].shape(), s);
    EXPECT_EQ(to_host(out[0]).data<float>()[0], 2.0f);
  }
  EXPECT_THROW(g({ones({3})}), std::invalid_argument);
  EXPECT_THROW(import_function(path + ".missing"), std::runtime_error);
  std::filesystem::remove(path);
}

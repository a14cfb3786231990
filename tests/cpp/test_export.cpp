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

TEST(Compile, TracesOncePerSignatureAndReplays) {
  int traces = 0;
  Function f = compile([&](const std::vector<array>& x) {
    ++traces;
    return std::vector<array>{exp(x[0]) * 2 + x[1]};
  });
  for (int round = 0; round < 3; ++round) {
    const std::vector<float> a = uniform(3), b = uniform(3);
    array y = to_host(f({array(a, {3}), array(b, {3})})[0]);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(y.data<float>()[i], std::exp(a[i]) * 2 + b[i], 1e-5);
  }
  EXPECT_EQ(traces, 1);
  f({ones({2, 2}), ones({2, 2})});
  EXPECT_EQ(traces, 2);
  // Gradients follow the replayed primitives.
  auto g = grad([&](const std::vector<array>& x) { return std::vector<array>{sum(f({x[0], x[0]})[0])}; });
  const std::vector<float> a = uniform(3);
  array dx = to_host(g({array(a, {3})})[0]);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(dx.data<float>()[i], std::exp(a[i]) * 2 + 1, 1e-5);
  // Shapeless: one trace serves new shapes.
  int shapeless_traces = 0;
  Function h = compile([&](const std::vector<array>& x) {
    ++shapeless_traces;
    return std::vector<array>{sum(x[0] * 3, Axes{-1})};
  }, true);
  EXPECT_EQ(h({ones({2, 5})})[0].shape(), (Shape{2}));
  EXPECT_EQ(h({ones({4, 7})})[0].shape(), (Shape{4}));
  EXPECT_NEAR(to_host(h({ones({4, 7})})[0]).data<float>()[3], 21.0f, 1e-5);
  EXPECT_EQ(shapeless_traces, 1);
}

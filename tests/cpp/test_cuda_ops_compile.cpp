// Compiles every form of the op kernels (the catalog of
// backend/cuda/kernel_sources.h) with NVRTC for sm_90: no GPU needed, so CI
// catches a kernel or shared functor header that stops compiling on the device.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "backend/cuda/fused.h"
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

// Fused chains (mx.compile on the GPU) are generated per program: a few
// programs covering every step kind, scalar and dense reads, 16-bit floats,
// complex values and a bool condition, in both kernel forms.
TEST(CudaOpsCompile, FusedChainsCompileForSm90) {
  if (!alloy::jit::nvrtc_available()) {
    GTEST_SKIP() << "NVRTC is not available: " << alloy::jit::nvrtc_unavailable_reason();
  }
  using alloy::Dtype;
  using alloy::FusedStep;
  using Kind = FusedStep::Kind;
  using alloy::cuda::FusedRead;
  auto input = [](Dtype t, int i) {
    FusedStep s;
    s.kind = Kind::Input, s.dtype = t, s.input = i;
    return s;
  };
  auto unary = [](alloy::UnaryOp op, Dtype t, int a) {
    FusedStep s;
    s.kind = Kind::Unary, s.dtype = t, s.unary = op, s.a = a;
    return s;
  };
  auto binary = [](alloy::BinaryOp op, Dtype t, int a, int b) {
    FusedStep s;
    s.kind = Kind::Binary, s.dtype = t, s.binary = op, s.a = a, s.b = b;
    return s;
  };
  auto cast = [](Dtype t, int a) {
    FusedStep s;
    s.kind = Kind::Cast, s.dtype = t, s.a = a;
    return s;
  };
  auto select = [](Dtype t, int c, int a, int b) {
    FusedStep s;
    s.kind = Kind::Select, s.dtype = t, s.a = c, s.b = a, s.c = b;
    return s;
  };
  struct Program {
    std::vector<FusedStep> steps;
    std::vector<FusedRead> reads;
    int vector_width;
  };
  const std::vector<Program> programs = {
      // exp(x * s) + y over float32, s a broadcast scalar
      {{input(Dtype::float32, 0), input(Dtype::float32, 1), binary(alloy::BinaryOp::Multiply, Dtype::float32, 0, 1),
        unary(alloy::UnaryOp::Exp, Dtype::float32, 2), input(Dtype::float32, 2),
        binary(alloy::BinaryOp::Add, Dtype::float32, 3, 4)},
       {FusedRead::Dense, FusedRead::Scalar, FusedRead::Dense},
       4},
      // where(x > y, tanh(x), y) in float16, then a cast to float32 (8-byte
      // reads of float16 values, 16-byte writes: four per iteration)
      {{input(Dtype::float16, 0), input(Dtype::float16, 1), binary(alloy::BinaryOp::Greater, Dtype::bool_, 0, 1),
        unary(alloy::UnaryOp::Tanh, Dtype::float16, 0), select(Dtype::float16, 2, 3, 1), cast(Dtype::float32, 4)},
       {FusedRead::Dense, FusedRead::Dense},
       4},
      // complex64 and bfloat16 together, an int64 chain
      {{input(Dtype::complex64, 0), unary(alloy::UnaryOp::Exp, Dtype::complex64, 0),
        binary(alloy::BinaryOp::Multiply, Dtype::complex64, 1, 0), input(Dtype::bfloat16, 1),
        cast(Dtype::complex64, 3), binary(alloy::BinaryOp::Add, Dtype::complex64, 2, 4)},
       {FusedRead::Dense, FusedRead::Dense},
       2},
      {{input(Dtype::int64, 0), input(Dtype::int64, 1), binary(alloy::BinaryOp::FloorDivide, Dtype::int64, 0, 1),
        unary(alloy::UnaryOp::Abs, Dtype::int64, 2)},
       {FusedRead::Dense, FusedRead::Scalar},
       2},
  };
  const alloy::jit::NvrtcOptions opts = alloy::cuda::kernel_compile_options("sm_90");
  // The module compiles without warnings and defines kernel `name`.
  auto expect_compiles = [&](const std::string& source, const std::string& name, const char* what) {
    try {
      alloy::jit::NvrtcOutput out = alloy::jit::nvrtc_compile(source, "test_fused.cu", opts);
      EXPECT_NE(out.cubin.find(name), std::string::npos) << source;
      EXPECT_EQ(out.log.find("warning"), std::string::npos) << out.log << "\n" << source;
    } catch (const std::exception& ex) {
      ADD_FAILURE() << what << " failed to compile:\n" << ex.what() << "\n--- source ---\n" << source;
    }
  };
  std::set<std::string> keys;
  for (const Program& p : programs) {
    EXPECT_EQ(alloy::cuda::fused_vector_width(p.steps, p.reads), p.vector_width);
    keys.insert(alloy::cuda::fused_family_key(p.steps, p.reads));
    for (const std::string name : {"fused_v", "fused_1"}) {
      expect_compiles(alloy::cuda::fused_module_source(p.steps, p.reads, name), name, "a fused chain");
    }
    // The same chains folded by the Reduce kernels (a sum, or a max on
    // integers; partial sums in the accumulator type).
    const Dtype value_t = p.steps.back().dtype;
    if (value_t == Dtype::complex64) continue;
    const alloy::ReduceOp op = value_t == Dtype::int64 ? alloy::ReduceOp::Max : alloy::ReduceOp::Sum;
    for (const std::string name : {"row_block", "row_warp"}) {
      expect_compiles(alloy::cuda::fused_reduce_module_source(p.steps, p.reads, op, value_t, value_t, name), name,
                      "a fused reduction");
    }
  }
  EXPECT_EQ(keys.size(), programs.size()) << "two programs share a module key";
}

}  // namespace

// Metal 4 tensors and mpp::tensor_ops::matmul2d on the CPU, through the
// whole path: a metal_library program translated by the front end, compiled
// by the host compiler, launched with the arrays' shapes and strides. Inputs
// are fresh random numbers each run (the seed is printed), checked against
// double-precision references.
#include <fstream>
#include <sstream>

#include "alloy/msl/translate.h"
#include "jit/nvrtc.h"
#include "test_cpu_util.h"
#include "../common/seed_sources.h"

namespace alloy::jit::test {
namespace {

constexpr const char* kProgram = R"(
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

// info: rank, extents, strides of `a` (a row-major R x C array: extents (C, R)).
kernel void describe(tensor<device const float, dextents<int, 2>> a [[buffer(0)]],
                     tensor<device float, dextents<int, 1>> info [[buffer(1)]],
                     uint tid [[thread_position_in_grid]]) {
  if (tid != 0) return;
  info[0] = a.get_rank();
  info[1] = a.get_extent(0);
  info[2] = a.get_extent(1);
  info[3] = a.get_stride(0);
  info[4] = a.get_stride(1);
  info[5] = a.get_static_extent(0) == dynamic_extent ? -1.0f : 0.0f;
}

// out[col, row] = a[col, row] + 1 inside the slice at (1, 2); the grid covers
// a bigger area than the slice: load gives 0 there, store drops the write.
kernel void shifted(tensor<device const float, dextents<int, 2>> a [[buffer(0)]],
                    tensor<device float, dextents<int, 2>> out [[buffer(1)]],
                    uint2 gid [[thread_position_in_grid]]) {
  auto s = a.slice(1, 2);
  auto o = out.slice(1, 2);
  o.store(s.load(gid.x, gid.y) + 1.0f, gid.x, gid.y);
  if (gid.x == 0 && gid.y == 0) out[0, 0] = s.get_extent(0) * 100 + s.get_extent(1);
}

// A 4 x 3 static tile at (2, 1): its elements, then its static extents.
kernel void tile(tensor<device const float, dextents<int, 2>> a [[buffer(0)]],
                 tensor<device float, dextents<int, 1>> out [[buffer(1)]],
                 uint2 gid [[thread_position_in_grid]]) {
  auto t = a.slice<4, 3>(2, 1);
  out[gid.y * 4 + gid.x] = t[gid.x, gid.y];
  if (gid.x == 0 && gid.y == 0) out[12] = t.get_static_extent(0) * 10 + t.get_static_extent(1);
}

// The WWDC tiled GEMM: each threadgroup slices its tile of C and runs one op.
template <typename T, typename U, int TM, int TN, bool TL, bool TR, bool ACC, typename Scope>
kernel void gemm(tensor<device const T, dextents<int, 2>> A [[buffer(0)]],
                 tensor<device const T, dextents<int, 2>> B [[buffer(1)]],
                 tensor<device U, dextents<int, 2>> C [[buffer(2)]],
                 uint2 tgid [[threadgroup_position_in_grid]]) {
  auto tA = TL ? A.slice(tgid.y * TM, 0) : A.slice(0, tgid.y * TM);
  auto tB = TR ? B.slice(0, tgid.x * TN) : B.slice(tgid.x * TN, 0);
  auto tC = C.slice(tgid.x * TN, tgid.y * TM);
  constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, TL, TR, false,
      ACC ? matmul2d_descriptor::mode::multiply_accumulate : matmul2d_descriptor::mode::multiply);
  matmul2d<desc, Scope> op;
  op.run(tA, tB, tC);
}
template [[host_name("gemm_nn")]] kernel void gemm<float, float, 8, 8, false, false, false, execution_thread>(
    tensor<device const float, dextents<int, 2>>, tensor<device const float, dextents<int, 2>>,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("gemm_tt_acc")]] kernel void gemm<float, float, 8, 8, true, true, true, execution_thread>(
    tensor<device const float, dextents<int, 2>>, tensor<device const float, dextents<int, 2>>,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("gemm_half_sg")]] kernel void gemm<half, float, 16, 16, false, true, false, execution_simdgroup>(
    tensor<device const half, dextents<int, 2>>, tensor<device const half, dextents<int, 2>>,
    tensor<device float, dextents<int, 2>>, uint2);
)";

struct Program {
  std::shared_ptr<CpuKernel> kernel;
};

// Translates entry `entry` of kProgram for the CPU and compiles it.
std::shared_ptr<CpuKernel> build(const std::string& entry, const std::vector<std::string>& in_types,
                                 const std::vector<std::string>& out_types) {
  msl::KernelSpec spec;
  spec.name = entry;
  spec.source = kProgram;
  spec.program_entry = entry;
  for (std::size_t i = 0; i < in_types.size(); ++i) spec.inputs.push_back({"in" + std::to_string(i), in_types[i]});
  for (std::size_t i = 0; i < out_types.size(); ++i) spec.outputs.push_back({"out" + std::to_string(i), out_types[i]});
  return compile(msl::translate(spec, msl::Target::Cpp).source);
}

// Row-major shape and element strides of an array, as MLX passes them.
struct Layout {
  std::vector<int> shape;
  std::vector<int64_t> strides;
};
Layout row_major(int rows, int cols) { return {{rows, cols}, {cols, 1}}; }

TEST(CpuTensor, ExtentsAndStridesOfATransposedArray) {
  auto k = build("describe", {"float"}, {"float"});
  std::vector<float> a(6 * 5), info(8, -7.0f);
  // The transpose of a row-major 6 x 5 array: shape (5, 6), strides (1, 5).
  Layout in{{5, 6}, {1, 5}}, out{{8}, {1}};
  launch(*k, {a.data(), info.data()}, {1}, {1}, {in.shape.data(), out.shape.data()},
         {in.strides.data(), out.strides.data()});
  EXPECT_EQ(info[0], 2);
  EXPECT_EQ(info[1], 6);  // extent 0: the innermost dimension, the last of the array's shape
  EXPECT_EQ(info[2], 5);
  EXPECT_EQ(info[3], 5);  // stride 0: the array's last stride
  EXPECT_EQ(info[4], 1);
  EXPECT_EQ(info[5], -1);  // dextents: every extent is dynamic
}

TEST(CpuTensor, IndexOrderSliceLoadAndStoreBounds) {
  auto rng = seeded_rng("CpuTensor.IndexOrderSliceLoadAndStoreBounds");
  const int R = 7, C = 9;
  auto a = random_floats(rng, R * C);
  auto out = poisoned<float>(R * C);
  auto k = build("shifted", {"float"}, {"float"});
  Layout l = row_major(R, C);
  launch(*k, {a.data(), out.data()}, {C + 3, R + 3}, {4, 4}, {l.shape.data(), l.shape.data()},
         {l.strides.data(), l.strides.data()});
  // The slice at (col 1, row 2) has extents (C - 1, R - 2).
  EXPECT_EQ(out[0], (C - 1) * 100 + (R - 2));
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      if (r == 0 && c == 0) continue;
      if (r < 2 || c < 1) {
        EXPECT_TRUE(std::isnan(out[r * C + c])) << "written outside the slice at row " << r << " col " << c;
      } else {
        EXPECT_EQ(out[r * C + c], a[r * C + c] + 1.0f) << "row " << r << " col " << c;
      }
    }
}

TEST(CpuTensor, StaticSlice) {
  auto rng = seeded_rng("CpuTensor.StaticSlice");
  const int R = 5, C = 8;
  auto a = random_floats(rng, R * C);
  auto out = poisoned<float>(13);
  auto k = build("tile", {"float"}, {"float"});
  Layout l = row_major(R, C), o{{13}, {1}};
  launch(*k, {a.data(), out.data()}, {4, 3}, {4, 3}, {l.shape.data(), o.shape.data()},
         {l.strides.data(), o.strides.data()});
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_EQ(out[y * 4 + x], a[(1 + y) * C + 2 + x]) << x << "," << y;
  EXPECT_EQ(out[12], 43);
}

// C (M x N) = A (M x K) B (K N), with A given as (K, M) extents or, transposed,
// (M, K); B as (N, K) or, transposed, (K, N). Sizes not multiples of the tile.
void check_gemm(const std::string& entry, bool tl, bool tr, bool acc, bool half_inputs, int tile) {
  auto rng = seeded_rng(("CpuTensor." + entry).c_str());
  const int M = 8 + int(rng() % 30), N = 8 + int(rng() % 30), K = 1 + int(rng() % 40);
  auto a = random_floats(rng, M * K), b = random_floats(rng, K * N), c0 = random_floats(rng, M * N);
  if (half_inputs)
    for (auto* v : {&a, &b})
      for (float& x : *v) x = float(_Float16(x));
  // Host layouts: A is M x K row-major (or K x M when transposed), B K x N (or N x K).
  std::vector<float> a_host(M * K), b_host(K * N);
  for (int m = 0; m < M; ++m)
    for (int kk = 0; kk < K; ++kk) a_host[tl ? kk * M + m : m * K + kk] = a[m * K + kk];
  for (int kk = 0; kk < K; ++kk)
    for (int n = 0; n < N; ++n) b_host[tr ? n * K + kk : kk * N + n] = b[kk * N + n];
  std::vector<_Float16> ah(a_host.begin(), a_host.end()), bh(b_host.begin(), b_host.end());
  std::vector<float> c = c0;
  Layout la = tl ? row_major(K, M) : row_major(M, K), lb = tr ? row_major(N, K) : row_major(K, N),
         lc = row_major(M, N);
  auto k = build(entry, {half_inputs ? "half" : "float", half_inputs ? "half" : "float"}, {"float"});
  std::vector<void*> buffers = {half_inputs ? static_cast<void*>(ah.data()) : a_host.data(),
                                half_inputs ? static_cast<void*>(bh.data()) : b_host.data(), c.data()};
  const unsigned tg = half_inputs ? 32 : 1;  // execution_simdgroup: one SIMD group per tile
  const unsigned gx = (N + tile - 1) / tile, gy = (M + tile - 1) / tile;
  launch(*k, buffers, {gx * tg, gy}, {tg, 1}, {la.shape.data(), lb.shape.data(), lc.shape.data()},
         {la.strides.data(), lb.strides.data(), lc.strides.data()});
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = acc ? c0[m * N + n] : 0.0, mag = std::fabs(ref);
      for (int kk = 0; kk < K; ++kk) {
        ref += double(a[m * K + kk]) * b[kk * N + n];
        mag += std::fabs(double(a[m * K + kk]) * b[kk * N + n]);
      }
      EXPECT_NEAR(c[m * N + n], ref, 1e-5 * (mag + 1)) << entry << " M=" << M << " N=" << N << " K=" << K
                                                       << " at (" << m << ", " << n << ")";
    }
}

TEST(CpuTensor, Matmul2dMultiply) { check_gemm("gemm_nn", false, false, false, false, 8); }
TEST(CpuTensor, Matmul2dTransposedMultiplyAccumulate) { check_gemm("gemm_tt_acc", true, true, true, false, 8); }
TEST(CpuTensor, Matmul2dHalfAtSimdgroupScope) { check_gemm("gemm_half_sg", false, true, false, true, 16); }

// Bad input is a compile error that quotes the user's line: a type
// combination Apple's table lacks, and a scope matmul2d does not run at.
std::string compile_error_of(const std::string& program, const std::string& left) {
  msl::KernelSpec spec;
  spec.name = "bad";
  spec.source = program;
  spec.program_entry = "bad";
  spec.inputs = {{"a", left}, {"b", "float"}};
  spec.outputs = {{"c", left}};
  const msl::TranslatedKernel t = msl::translate(spec, msl::Target::Cpp);
  try {
    compile_cpu(t.source, {}, &test_cache());
  } catch (const CompileError& e) {
    return msl::map_diagnostics(t, e.log(), spec);
  }
  ADD_FAILURE() << "the program compiled";
  return "";
}

constexpr const char* kBadProgram = R"(#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
kernel void bad(tensor<device const LEFT, dextents<int, 2>> a [[buffer(0)]],
                tensor<device const float, dextents<int, 2>> b [[buffer(1)]],
                tensor<device LEFT, dextents<int, 2>> c [[buffer(2)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8);
  matmul2d<desc, SCOPE> op;
  op.run(a, b, c);
}
)";

std::string bad_program(const std::string& scope, const std::string& left) {
  std::string p = kBadProgram;
  p.replace(p.find("SCOPE"), 5, scope);
  for (std::size_t at; (at = p.find("LEFT")) != std::string::npos;) p.replace(at, 4, left);
  return p;
}

TEST(CpuTensor, UnsupportedTypesNameTheUsersLine) {
  const std::string log = compile_error_of(bad_program("execution_thread", "half"), "half");
  EXPECT_NE(log.find("combination of left, right and destination types is not supported"), std::string::npos) << log;
  EXPECT_NE(log.find("source:10"), std::string::npos) << log;
  EXPECT_NE(log.find("op.run(a, b, c);"), std::string::npos) << log;
}

TEST(CpuTensor, UnsupportedScopeNamesTheUsersLine) {
  const std::string log = compile_error_of(bad_program("execution_threads<4>", "float"), "float");
  EXPECT_NE(log.find("the scope must be execution_thread, execution_simdgroup or execution_simdgroups<N>"),
            std::string::npos) << log;
  EXPECT_NE(log.find("source:9"), std::string::npos) << log;
  EXPECT_NE(log.find("matmul2d<desc, execution_threads<4>> op;"), std::string::npos) << log;
  EXPECT_EQ(log.find("not supported"), std::string::npos) << "float x float -> float is supported:\n" << log;
}

// The CUDA target parses the same runtime header: every entry of the program
// compiles with NVRTC for sm_90 (the reference path; no tensor cores yet).
TEST(CpuTensor, CudaTranslationsCompile) {
  if (!nvrtc_available()) GTEST_SKIP() << nvrtc_unavailable_reason();
  const std::vector<std::pair<std::string, std::vector<std::string>>> entries = {
      {"describe", {"float", "float"}},     {"shifted", {"float", "float"}},
      {"tile", {"float", "float"}},         {"gemm_nn", {"float", "float", "float"}},
      {"gemm_tt_acc", {"float", "float", "float"}}, {"gemm_half_sg", {"half", "half", "float"}}};
  for (const auto& [entry, types] : entries) {
    SCOPED_TRACE(entry);
    msl::KernelSpec spec;
    spec.name = entry;
    spec.source = kProgram;
    spec.program_entry = entry;
    for (std::size_t i = 0; i + 1 < types.size(); ++i) spec.inputs.push_back({"in" + std::to_string(i), types[i]});
    spec.outputs.push_back({"out", types.back()});
    NvrtcOptions opts;
    opts.arch = "sm_90";
    try {
      nvrtc_compile(msl::translate(spec, msl::Target::Cuda).source, entry + ".cu", opts);
    } catch (const CompileError& e) {
      ADD_FAILURE() << e.log();
    }
  }
}

// The WWDC26 kernels of examples/metal4 (MXFP8 tensors with scale planes,
// cooperative tensors) and half/bfloat GEMMs at SIMD-group scopes compile
// for sm_90, where matmul2d takes the tensor cores (mma.sync m16n8k16 and
// the FP8 m16n8k32); the GPU suite checks their numbers.
TEST(CpuTensor, Metal4ExamplesCompileForCuda) {
  if (!nvrtc_available()) GTEST_SKIP() << nvrtc_unavailable_reason();
  struct Entry {
    std::string file, entry;
    std::vector<msl::ParamSpec> inputs, outputs;
  };
  auto buffer = [](const std::string& name, const std::string& type) { return msl::ParamSpec{name, type}; };
  auto value = [](const std::string& name, const std::string& type) { return msl::ParamSpec{name, type, true}; };
  const std::vector<Entry> entries = {
      {"mxfp8_matmul", "matmul",
       {buffer("matrixA", "uint8_t"), buffer("matrixA_scales", "uint8_t"), buffer("matrixB", "uint8_t"),
        buffer("matrixB_scales", "uint8_t")},
       {buffer("matrixC", "float16_t")}},
      {"mxfp8_inline", "matmul_inline",
       {buffer("dataBufferA", "uint8_t"), buffer("scalesBufferA", "uint8_t"), buffer("dataBufferB", "uint8_t"),
        buffer("scalesBufferB", "uint8_t"), value("M", "int"), value("N", "int"), value("K", "int")},
       {buffer("bufferC", "float")}},
      {"flash_attention", "flash_attention",
       {buffer("Q", "float16_t"), buffer("K", "float16_t"), buffer("V", "float16_t"), value("S", "int"),
        value("scale", "float")},
       {buffer("O", "float")}},
  };
  for (const Entry& e : entries) {
    SCOPED_TRACE(e.file);
    std::ifstream f(alloy_test::source_root() + "/examples/metal4/" + e.file + ".metal");
    ASSERT_TRUE(f) << "examples/metal4/" << e.file << ".metal is missing";
    std::stringstream text;
    text << f.rdbuf();
    msl::KernelSpec spec;
    spec.name = e.entry;
    spec.source = text.str();
    spec.program_entry = e.entry;
    spec.inputs = e.inputs;
    spec.outputs = e.outputs;
    NvrtcOptions opts;
    opts.arch = "sm_90";
    try {
      nvrtc_compile(msl::translate(spec, msl::Target::Cuda).source, e.entry + ".cu", opts);
    } catch (const CompileError& err) {
      ADD_FAILURE() << err.log();
    }
  }
}

}  // namespace
}  // namespace alloy::jit::test

// NVRTC compiles of kernels in the translator's CUDA-glue form against
// metal_cuda.h, for sm_90 (compile only: no GPU needed).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cuda_test_kernels.h"
#include "jit/cuda_driver.h"
#include "jit/nvrtc.h"

namespace {

using alloy::jit::CompileError;
using alloy::jit::NvrtcOptions;
using alloy::jit::NvrtcOutput;

NvrtcOptions with_defines(std::initializer_list<const char*> defines, std::string math = "safe") {
  NvrtcOptions o;
  o.math_mode = math;
  for (const char* d : defines) o.extra_options.push_back(std::string("-D") + d);
  return o;
}

// Compiles and checks the result is an sm_90 cubin (SASS, not PTX) that
// holds the glue's entry point.
NvrtcOutput compile_ok(const std::string& source, const char* name, const NvrtcOptions& opts = {}) {
  NvrtcOutput out;
  try {
    out = alloy::jit::nvrtc_compile(source, name, opts);
  } catch (const CompileError& e) {
    ADD_FAILURE() << name << " failed to compile:\n" << e.what();
    return out;
  }
  EXPECT_GE(out.cubin.size(), 64u) << name;
  EXPECT_EQ(out.cubin.compare(0, 4, "\x7f" "ELF"), 0) << name << ": not an ELF image";
  EXPECT_EQ(alloy::jit::cubin_sm_arch(out.cubin), 90) << name << ": not SASS for sm_90";
  EXPECT_NE(out.cubin.find("alloy_kernel_main"), std::string::npos) << name << ": entry point missing";
  EXPECT_EQ(out.cubin.find(".version"), std::string::npos) << name << ": looks like PTX text";
  std::printf("[ nvrtc    ] %-28s %7.1f ms, cubin %zu bytes%s%s\n", name, out.compile_ms, out.cubin.size(),
              out.log.empty() ? "" : ", log:\n", out.log.c_str());
  return out;
}

// User kernels on Hopper compile for sm_90a (wgmma); other GPUs keep their own name.
TEST(CudaNvrtc, UserKernelsGetTheArchitectureFeatures) {
  EXPECT_EQ(alloy::jit::with_arch_features("sm_90"), "sm_90a");
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_100", "sm_120"})
    EXPECT_EQ(alloy::jit::with_arch_features(arch), arch);
}

TEST(CudaNvrtc, LoadsAndReportsVersion) {
  ASSERT_TRUE(alloy::jit::nvrtc_available()) << alloy::jit::nvrtc_unavailable_reason();
  auto [major, minor] = alloy::jit::nvrtc_version();
  EXPECT_GE(major, 12) << "NVRTC " << major << "." << minor;
  auto opts = alloy::jit::nvrtc_options({});
  bool has_include = false;
  for (const auto& o : opts) has_include |= o.rfind("-I", 0) == 0 && o.find("cccl") == std::string::npos;
  EXPECT_TRUE(has_include) << "no CUDA include directory found";
}

TEST(CudaNvrtc, SeedExp) { compile_ok(alloy_test::exp_kernel(), "exp.cu"); }

TEST(CudaNvrtc, GridSampleForward) {
  // The first compile in the process includes NVRTC's own start-up.
  NvrtcOutput f = compile_ok(alloy_test::grid_sample_forward(), "grid_sample_f32.cu", with_defines({"ELEM=float"}));
  compile_ok(alloy_test::grid_sample_forward(), "grid_sample_f16.cu", with_defines({"ELEM=float16_t"}));
  compile_ok(alloy_test::grid_sample_forward(), "grid_sample_bf16.cu", with_defines({"ELEM=bfloat16_t"}));
  NvrtcOutput again = compile_ok(alloy_test::grid_sample_forward(), "grid_sample_f32.cu", with_defines({"ELEM=float"}));
  std::printf("[ nvrtc    ] grid_sample forward f32: %.1f ms (again %.1f ms)\n", f.compile_ms, again.compile_ms);
  EXPECT_LT(again.compile_ms, 5000.0);
}

TEST(CudaNvrtc, GridSampleVjp) {
  compile_ok(alloy_test::grid_sample_vjp(), "grid_sample_vjp_f32.cu", with_defines({"ELEM=float"}));
  compile_ok(alloy_test::grid_sample_vjp(), "grid_sample_vjp_f16.cu", with_defines({"ELEM=float16_t"}));
  compile_ok(alloy_test::grid_sample_vjp(), "grid_sample_vjp_bf16.cu", with_defines({"ELEM=bfloat16_t"}));
  compile_ok(alloy_test::grid_sample_vjp(), "grid_sample_vjp_fast.cu", with_defines({"ELEM=float"}, "fast"));
}

TEST(CudaNvrtc, ThreadgroupReduceWithBarriers) { compile_ok(alloy_test::kThreadgroupReduce, "tg_reduce.cu"); }

TEST(CudaNvrtc, ThreadIds) { compile_ok(alloy_test::kThreadIds, "thread_ids.cu"); }

TEST(CudaNvrtc, SimdAndQuadFunctions) { compile_ok(alloy_test::kSimdFunctions, "simd.cu"); }

TEST(CudaNvrtc, Atomics) { compile_ok(alloy_test::kAtomics, "atomics.cu"); }

TEST(CudaNvrtc, SimdgroupMatrix) { compile_ok(alloy_test::kSimdgroupMatrix, "simdgroup_matrix.cu"); }

TEST(CudaNvrtc, VectorsSwizzlesHalfBfloat) { compile_ok(alloy_test::kVectorsAndHalf, "vectors.cu"); }

TEST(CudaNvrtc, HalfRoundingCheck) { compile_ok(alloy_test::kHalfRounding, "half_rounding.cu"); }

// Metal's promotion rules and constant evaluation, checked by the compiler.
TEST(CudaNvrtc, HalfAndBfloatTypeRules) {
  const char* src = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
template <class A, class B> inline constexpr bool same = is_same_v<A, B>;
static_assert(same<decltype(half() * 1.0f), float>, "half * float is float");
static_assert(same<decltype(half() * 1.0), float>, "half * literal double is float");
static_assert(same<decltype(half() + 1), half>, "half + int is half");
static_assert(same<decltype(1u - half()), half>, "uint - half is half");
static_assert(same<decltype(half() * half()), half>, "half * half is half");
static_assert(same<decltype(half() * bfloat()), float>, "half * bfloat is float");
static_assert(same<decltype(bfloat() * 2), bfloat>, "bfloat * int is bfloat");
static_assert(same<decltype(bfloat() * 2.0f), float>, "bfloat * float is float");
static_assert(same<decltype(true ? ::alloy_msl::cond_arm<int>(half()) : ::alloy_msl::cond_lit<half>(0)), half>,
              "cond ? half : 0, as translated, is half");
static_assert(same<decltype(true ? static_cast<::alloy_msl::cond_t<half&, float&>>(::alloy_msl::cond_value<half&>())
                                 : static_cast<::alloy_msl::cond_t<float&, half&>>(::alloy_msl::cond_value<float&>())),
                   float>,
              "cond ? h : f, as translated, is float");
static_assert(same<::alloy_msl::cond_t<float&, float&>, float&>, "same-typed arms keep their value category");
static_assert(same<::alloy_msl::cond_lit_result_t<const float*&, int>, const float*>, "pointer ? : 0 is a pointer");
constexpr int kTruncated = half(-2.75f);  // implicit, as in Metal
static_assert(kTruncated == -2, "half converts to int toward zero");
static_assert(same<decltype(half() < 1), bool>, "comparison");
static_assert(sizeof(half) == 2 && alignof(half) == 2, "half layout");
static_assert(sizeof(half4) == 8 && sizeof(float3) == 16 && sizeof(packed_float3) == 12, "vector sizes");
static_assert(sizeof(atomic<float>) == 4 && sizeof(atomic<half>) == 2, "atomic layout");
static_assert(sizeof(simdgroup_half8x8) == 4 && sizeof(simdgroup_float8x8) == 8, "matrix storage per lane");
// Constant evaluation takes the software rounding path.
static_assert(half(1.0f).bits == 0x3c00, "1");
static_assert(half(-2.5f).bits == 0xc100, "-2.5");
static_assert(half(1.0f / 3.0f).bits == 0x3555, "1/3 rounds to nearest");
static_assert(half(65504.0f).bits == 0x7bff && half(65520.0f).bits == 0x7c00, "max and overflow");
static_assert(half(5.960464477539063e-08f).bits == 0x0001, "smallest subnormal");
static_assert(half(2.98023223876953125e-08f).bits == 0x0000, "2^-25 ties to even (zero)");
static_assert(float(half::from_bits(0x0001)) == 5.960464477539063e-08f, "subnormal to float");
static_assert(float(numeric_limits<half>::max()) == 65504.0f, "limits");
ALLOY_PROGRAM_CONSTANT half kHalfConst = half(0.5);
ALLOY_PROGRAM_CONSTANT float kTable[3] = {1.0f, 2.0f, 3.0f};
extern "C" __global__ void alloy_kernel_main(float* out, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  out[t.thread_position_in_grid.x] = kHalfConst * kTable[t.thread_position_in_grid.x % 3];
}
)CUDA";
  compile_ok(src, "type_rules.cu");
}

TEST(CudaNvrtc, CompileErrorCarriesTheLog) {
  const char* src = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
extern "C" __global__ void alloy_kernel_main(float* out, alloy_msl::cuda::Dispatch d) {
  out[0] = this_name_is_not_declared;
}
)CUDA";
  try {
    alloy::jit::nvrtc_compile(src, "broken.cu");
    FAIL() << "a kernel with an undeclared name compiled";
  } catch (const CompileError& e) {
    std::string what = e.what();
    EXPECT_NE(e.log().find("this_name_is_not_declared"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("broken.cu(5)"), std::string::npos) << e.log();
    EXPECT_EQ(what.rfind("[nvrtc_compile]", 0), 0u) << what;
    EXPECT_NE(what.find(e.log()), std::string::npos) << "the message must carry the full log";
  }
}

TEST(CudaNvrtc, MathModes) {
  const char* src = R"CUDA(
#include "metal_cuda.h"
#ifndef __FAST_MATH__
#error "__FAST_MATH__ is not defined"
#endif
extern "C" __global__ void alloy_kernel_main(float* out, alloy_msl::cuda::Dispatch d) {
  out[0] = metal::fast::exp(out[1]) + metal::precise::exp(out[2]) + metal::exp(out[3]);
}
)CUDA";
  NvrtcOptions fast;
  fast.math_mode = "fast";
  compile_ok(src, "fast.cu", fast);
  EXPECT_THROW(alloy::jit::nvrtc_compile(src, "safe.cu"), CompileError);
  NvrtcOptions bad;
  bad.math_mode = "reckless";
  EXPECT_THROW(alloy::jit::nvrtc_compile(src, "bad.cu", bad), std::invalid_argument);
  // A virtual architecture gives PTX text (the AOT archive's image for GPUs
  // newer than its cubins), not a cubin.
  NvrtcOptions virt;
  virt.arch = "compute_90";
  auto ptx = alloy::jit::nvrtc_compile(alloy_test::exp_kernel(), "virt.cu", virt);
  EXPECT_NE(ptx.cubin.find(".target sm_90"), std::string::npos) << ptx.cubin.substr(0, 400);
  EXPECT_NE(ptx.cubin.find(".entry"), std::string::npos);
  EXPECT_EQ(alloy::jit::cubin_sm_arch(ptx.cubin), -1);
}

TEST(CudaNvrtc, CubinArchParserRejectsOtherBytes) {
  EXPECT_EQ(alloy::jit::cubin_sm_arch(""), -1);
  EXPECT_EQ(alloy::jit::cubin_sm_arch(std::string(100, 'x')), -1);
  std::string x86_elf(64, '\0');
  const char magic[] = {0x7f, 'E', 'L', 'F', 0x02};
  for (int i = 0; i < 5; ++i) x86_elf[i] = magic[i];
  x86_elf[18] = 62;  // EM_X86_64
  EXPECT_EQ(alloy::jit::cubin_sm_arch(x86_elf), -1);
}

// On a machine without a driver the loader must say so and never crash; on
// one with a GPU it must find at least one device.
TEST(CudaDriver, ReportsAvailabilityCleanly) {
  namespace cd = alloy::cuda_driver;
  if (cd::is_available()) {
    EXPECT_TRUE(cd::unavailable_reason().empty());
    EXPECT_GE(cd::device_count(), 1);
    EXPECT_GE(cd::device_attribute(cd::kComputeCapabilityMajor), 7);
  } else {
    EXPECT_FALSE(cd::unavailable_reason().empty());
    std::printf("[ driver   ] unavailable: %s\n", cd::unavailable_reason().c_str());
    EXPECT_THROW(cd::api(), std::runtime_error);
    EXPECT_THROW(cd::device_count(), std::runtime_error);
    EXPECT_FALSE(cd::is_available()) << "the answer must be stable";
  }
}

}  // namespace

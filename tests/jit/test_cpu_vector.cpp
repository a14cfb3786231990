// Vector types as the translator leaves them: Metal sizes, constructors from
// smaller vectors, swizzle reads/writes (.template swizzle<...>() forms), mixed
// vector-scalar arithmetic, half/bfloat promotion; and the static_assert that
// rejects a repeated component on the left of an assignment.
#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

TEST(CpuVector, SwizzlesConstructorsAndSizes) {
  auto rng = seeded_rng("CpuVector.Swizzles");
  const unsigned n = 37;
  auto in = random_floats(rng, n * 4, -2.0f, 2.0f);
  auto out = poisoned<float>(n * 12);
  auto k = compile(translation_unit(R"(
static_assert(sizeof(float3) == 16 && alignof(float3) == 16, "float3 is padded like float4");
static_assert(sizeof(packed_float3) == 12 && alignof(packed_float3) == 4, "packed_float3 is not");
static_assert(sizeof(half3) == 8 && sizeof(uchar3) == 4 && sizeof(long3) == 32 && sizeof(bool2) == 2);
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_swz(const float4* inp, T* out, uint3 thread_position_in_grid) {
  uint i = thread_position_in_grid.x;
  float4 v = inp[i];
  float4 a = float4(v.template swizzle<1, 0>(), 1, 2);            // (y, x, 1, 2)
  a.template swizzle_ref<3, 2>() = v.template swizzle<0, 3>();    // a.wz = v.xw
  a.template swizzle_ref<0, 1>() += float2(10);                   // a.xy += 10
  float3 b = float3(v.template swizzle<2, 2, 0>()) * 2 - 1;       // v.zzx * 2 - 1
  b.r = b.g + v.a;
  float4 c = float4(b, 0.5) + v.template swizzle<3, 2, 1, 0>();
  int4 iv = int4(v * 10);
  bool4 gt = v > 0.0f;
  float sel = select(1.0f, 2.0f, all(gt)) + float(any(gt));
  half h = half(v.x) * 2;             // half * int stays half
  auto hf = half(v.y) * v.z;          // half * float is float
  bfloat bf = bfloat(v.w);
  auto bff = bf * 1.5f;               // bfloat * float is float
  T* o = out + i * 12;
  o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
  o[4] = b.x; o[5] = c.w; o[6] = float(iv.y); o[7] = sel;
  o[8] = float(h); o[9] = hf + (sizeof(hf) == 4 ? 0.0f : 1000.0f);
  o[10] = bff + (sizeof(bff) == 4 ? 0.0f : 1000.0f);
  o[11] = float(sizeof(float3) + sizeof(packed_float3));
}
)",
                                    R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_swz<float>(static_cast<const float4*>(L->buffers[0]), static_cast<float*>(L->buffers[1]),
                             t.thread_position_in_grid);
  });)"));
  launch(*k, {in.data(), out.data()}, {n}, {8});
  for (unsigned i = 0; i < n; ++i) {
    const float* v = &in[i * 4];
    const float* o = &out[i * 12];
    float a[4] = {v[1] + 10, v[0] + 10, v[3], v[0]};
    float b[3] = {v[2] * 2 - 1, v[2] * 2 - 1, v[0] * 2 - 1};
    b[0] = b[1] + v[3];
    bool all = v[0] > 0 && v[1] > 0 && v[2] > 0 && v[3] > 0, any = v[0] > 0 || v[1] > 0 || v[2] > 0 || v[3] > 0;
    EXPECT_EQ(o[0], a[0]) << i;
    EXPECT_EQ(o[1], a[1]) << i;
    EXPECT_EQ(o[2], a[2]) << i;
    EXPECT_EQ(o[3], a[3]) << i;
    EXPECT_EQ(o[4], b[0]) << i;
    EXPECT_EQ(o[5], 0.5f + v[0]) << i;
    EXPECT_EQ(o[6], float(int(v[1] * 10))) << i;
    EXPECT_EQ(o[7], (all ? 2.0f : 1.0f) + float(any)) << i;
    EXPECT_EQ(o[8], float(_Float16(float(_Float16(v[0])) * 2))) << i;
    EXPECT_EQ(o[9], float(_Float16(v[1])) * v[2]) << i;
    EXPECT_NEAR(o[10], v[3] * 1.5f, std::fabs(v[3]) * 1.5f / 128) << i;  // bfloat keeps 8 bits
    EXPECT_EQ(o[11], 28.0f) << i;
  }
}

TEST(CpuVector, RepeatedComponentOnTheLeftIsACompileError) {
  std::string src = translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_bad(T* out, uint3 thread_position_in_grid) {
  float4 v = float4(0);
  v.template swizzle_ref<0, 0>() = float2(1, 2);
  out[0] = v.x;
}
)",
                                     R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_bad<float>(static_cast<float*>(L->buffers[0]), t.thread_position_in_grid);
  });)");
  try {
    compile_cpu(src, {}, &test_cache());
    FAIL() << "a swizzle repeating a component on the left of = compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("repeats a component"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("source:5"), std::string::npos) << e.log();  // the #line maps back to the user's line
    EXPECT_NE(std::string(e.what()).find("[alloy::jit::compile_cpu]"), std::string::npos);
  }
}

}  // namespace
}  // namespace alloy::jit::test

// Casts to device/constant vector pointers become ::alloy_msl::vector_cast,
// and variables declared as such pointers ::alloy_msl::vector_cast_ptr
// (runtime/metal_vector_cast.h), on both targets: which casts, what each
// becomes, and what is left as written. tests/python/
// test_metal_kernel_vector_casts.py runs them.
#include <gtest/gtest.h>

#include <string>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

std::string translated(const std::string& source, Target target, const std::string& header = "") {
  return translate(test::kernel(source, header, {test::param("a", "float")}), target).source;
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(MslVectorCast, CStyleAndNamedCastsBecomeVectorCasts) {
  const std::string body =
      "uint i = thread_position_in_grid.x;\n"
      "float4 v = *((device const float4*)(a + i * 10));\n"
      "half2 h = reinterpret_cast<const device half2*>(a + 1)[i];\n"
      "*(device float4*)out = v + float4(float(h.x));\n"
      "float2 c = ((constant metal::float2*)a)[0];\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string k = translated(body, t);
    EXPECT_TRUE(has(k, "*(::alloy_msl::vector_cast<const float4>((a + i * 10)))")) << k;
    EXPECT_TRUE(has(k, "::alloy_msl::vector_cast<const half2>(a + 1)[i]")) << k;
    EXPECT_TRUE(has(k, "*::alloy_msl::vector_cast<float4>(out) = v")) << k;
    EXPECT_TRUE(has(k, "(::alloy_msl::vector_cast<const metal::float2>(a))[0]")) << k;
  }
}

TEST(MslVectorCast, APointerDeclaredFromACastKeepsItsKind) {
  const std::string body =
      "const device float4* q = (const device float4*)(a + 2);\n"
      "device float4* o = reinterpret_cast<device float4*>(out), *p = nullptr;\n"
      "out[0] = q[0].x;\n";
  const std::string k = translated(body, Target::Cuda);
  EXPECT_TRUE(has(k, "::alloy_msl::vector_cast_ptr<const float4> q = ::alloy_msl::vector_cast<const float4>((a + 2));"))
      << k;
  // Two declarators: the declaration stays (the cast still converts to the plain pointer).
  EXPECT_TRUE(has(k, "float4* o = ::alloy_msl::vector_cast<float4>(out), *p = nullptr;")) << k;
}

TEST(MslVectorCast, VectorPointerVariablesKeepTheKindWhateverTheyAreGiven) {
  const std::string header =
      "struct Row {\n"
      "  const device half4* p;\n"  // a struct member
      "  float first(device const float4* q) const { return float(p[0].x) + q[0].x; }\n"  // a parameter
      "};\n";
  const std::string body =
      "const device float4* p;\n"                       // declared, given a cast later
      "p = (const device float4*)(a + 1);\n"
      "device const float4* q = p + 1;\n"               // from arithmetic on one
      "constant float2* c = nullptr;\n"
      "Row r;\n"
      "r.p = (const device half4*)(a + 3);\n"
      "out[0] = r.first(q) + p[0].y + float(c == nullptr);\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string k = translated(body, t, header);
    EXPECT_TRUE(has(k, "::alloy_msl::vector_cast_ptr<const float4> p;")) << k;
    EXPECT_TRUE(has(k, "::alloy_msl::vector_cast_ptr<const float4> q = p + 1;")) << k;
    EXPECT_TRUE(has(k, "::alloy_msl::vector_cast_ptr<const float2> c = nullptr;")) << k;  // constant: read-only
    EXPECT_TRUE(has(k, "::alloy_msl::vector_cast_ptr<const half4> p;")) << k;
    EXPECT_TRUE(has(k, "float first(const float4* q) const")) << k;
  }
}

TEST(MslVectorCast, OtherCastsAndTypesAreLeftAsWritten) {
  const std::string header =
      "float4 first(device const float4* p);\n"  // a declaration's parameter
      "float4 first(device const float4* p) { return p[0]; }\n";
  const std::string body =
      "uint n = sizeof(device float4*);\n"                        // not a cast
      "device const float* s = (device const float*)(a + 1);\n"   // a scalar pointer
      "threadgroup float4 tile[4];\n"
      "threadgroup float4* t = (threadgroup float4*)(tile);\n"    // threadgroup memory
      "float4 w = *((device const packed_float4*)(a + 1));\n"     // packed: element-aligned already
      "device float4* const* pp = (device float4* const*)(nullptr);\n"  // a pointer to a pointer
      "out[0] = s[0] + t[0].x + w.x + first((device const float4*)(a)).x + float(n) + float(pp == nullptr);\n";
  const std::string k = translated(body, Target::Cuda, header);
  EXPECT_TRUE(has(k, "float4 first(const float4* p);")) << k;
  EXPECT_TRUE(has(k, "sizeof(float4*)")) << k;
  EXPECT_TRUE(has(k, "(const float*)(a + 1)")) << k;
  EXPECT_TRUE(has(k, "(float4*)(tile)")) << k;
  EXPECT_TRUE(has(k, "(const packed_float4*)(a + 1)")) << k;
  EXPECT_TRUE(has(k, "(float4* const*)(nullptr)")) << k;
  // The argument of a call is a cast like any other.
  EXPECT_TRUE(has(k, "first(::alloy_msl::vector_cast<const float4>((a))).x")) << k;
}

TEST(MslVectorCast, AReinterpretCastToAScalarMemoryPointerTakesVectorPointersToo) {
  // `reinterpret_cast` cannot take a vector_cast_ptr (a class): a cast to a
  // scalar pointer into device or constant memory goes through pointer_cast,
  // which also takes plain pointers. C-style and static casts stay as
  // written (vector_cast_ptr converts explicitly to any pointer).
  const std::string body =
      "const device char4* p4 = (const device char4*)(a);\n"
      "float r = float(reinterpret_cast<const device int8_t*>(p4)[3]);\n"
      "float c = float(((const device int8_t*)p4)[2]);\n"
      "thread float* local = reinterpret_cast<thread float*>(&r);\n"
      "out[0] = r + c + *local + float(reinterpret_cast<uintptr_t>(a) != 0);\n";
  for (Target t : {Target::Cpp, Target::Cuda}) {
    const std::string k = translated(body, t);
    EXPECT_TRUE(has(k, "::alloy_msl::pointer_cast<const int8_t*>(p4)[3]")) << k;
    EXPECT_TRUE(has(k, "((const int8_t*)p4)[2]")) << k;
    EXPECT_TRUE(has(k, "reinterpret_cast<float*>(&r)")) << k;  // thread memory: as written
    EXPECT_TRUE(has(k, "reinterpret_cast<uintptr_t>(a)")) << k;
  }
}

}  // namespace
}  // namespace alloy::msl

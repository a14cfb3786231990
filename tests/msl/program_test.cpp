// Whole programs (metal_library): the entry points and parameters the front
// end finds, the errors Apple's compiler would give, and the translation of
// one entry for both C++ targets.
#include <gtest/gtest.h>

#include "alloy/msl/program.h"
#include "alloy/msl/translate.h"

namespace alloy::msl {
namespace {

using Role = ProgramParam::Role;

const char* kTemplated = R"(#include <metal_stdlib>
using namespace metal;
constant uint TILE = 16;
template <typename T, typename Op>
kernel void binary_op(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]],
                      device T* out [[buffer(2)]], uint id [[thread_position_in_grid]]) {
  out[id] = Op{}(a[id], b[id]);
}
struct Add { template <typename T> T operator()(T x, T y) { return x + y; } };
template [[host_name("binary_add_f32")]]
kernel void binary_op<float, Add>(device const float*, device const float*, device float*, uint);
template [[host_name("binary_add_f16")]]
kernel void binary_op<half, Add>(device const half*, device const half*, device half*, uint);
[[max_total_threads_per_threadgroup(256)]]
kernel void tiled(device const float4* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant uint& n [[buffer(3)]], threadgroup float* scratch [[threadgroup(0)]],
                  threadgroup float tile[32][33] [[threadgroup(1)]],
                  uint2 gid [[thread_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
  scratch[lane] = tile[gid.y][gid.x] + x[gid.x].x + TILE;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid.x] = scratch[lane] + n;
}
)";

TEST(MslProgram, FindsKernelsAndInstantiationsInOrder) {
  ProgramInfo info = parse_program(kTemplated);
  ASSERT_EQ(info.kernels.size(), 3u);
  EXPECT_EQ(info.kernels[0].name, "binary_add_f32");
  EXPECT_EQ(info.kernels[0].function, "binary_op");
  EXPECT_EQ(info.kernels[0].template_args, "<float, Add>");
  EXPECT_EQ(info.kernels[1].name, "binary_add_f16");
  EXPECT_EQ(info.kernels[1].params[0].type, "half");  // the instantiation's type, the definition's name
  EXPECT_EQ(info.kernels[1].params[0].name, "a");
  EXPECT_EQ(info.kernels[1].params[2].role, Role::WriteBuffer);
  EXPECT_EQ(info.kernels[2].name, "tiled");
  EXPECT_EQ(info.kernels[2].max_total_threads_per_threadgroup, 256);
  EXPECT_TRUE(info.warnings.empty());
}

TEST(MslProgram, ParameterRolesIndicesAndTypes) {
  const ProgramKernel k = parse_program(kTemplated).kernels[2];
  ASSERT_EQ(k.params.size(), 7u);
  EXPECT_EQ(k.params[0].role, Role::ReadBuffer);
  EXPECT_EQ(k.params[0].type, "float4");
  EXPECT_EQ(k.params[1].role, Role::WriteBuffer);
  EXPECT_EQ(k.params[2].role, Role::ConstantValue);
  EXPECT_EQ(k.params[2].index, 3);
  EXPECT_EQ(k.params[3].role, Role::Threadgroup);
  EXPECT_TRUE(k.params[3].array_dims.empty());
  EXPECT_EQ(k.params[4].role, Role::Threadgroup);
  EXPECT_EQ(k.params[4].index, 1);
  EXPECT_EQ(k.params[4].array_dims, (std::vector<std::string>{"32", "33"}));
  EXPECT_EQ(k.params[5].role, Role::Attribute);
  EXPECT_EQ(k.params[5].attribute, "thread_position_in_grid");
  EXPECT_EQ(k.params[5].type, "uint2");
  EXPECT_EQ(k.params[6].type, "ushort");
}

CompileError error_of(const std::string& src) {
  try {
    check_program(src, "");
  } catch (const CompileError& e) {
    return e;
  }
  ADD_FAILURE() << "no CompileError for:\n" << src;
  return CompileError("none", "", 0, 0);
}

TEST(MslProgram, AttributeOfAnInvalidTypeNamesTheLineAndTheValidTypes) {
  CompileError e = error_of("kernel void f(device float* o [[buffer(0)]],\n"
                            "              uint4 id [[thread_position_in_grid]]) { o[id.x] = 1; }\n");
  EXPECT_EQ(e.line(), 2);
  std::string what = e.what();
  EXPECT_NE(what.find("'uint4' is not valid for [[thread_position_in_grid]]"), std::string::npos) << what;
  EXPECT_NE(what.find("uint, uint2 or uint3"), std::string::npos) << what;
  EXPECT_NE(what.find("uint4 id"), std::string::npos) << what;  // the line quoted
}

TEST(MslProgram, InvalidVectorTypeInAProgramNamesTheLine) {
  CompileError e = error_of("kernel void f(device const half8* a [[buffer(0)]],\n"
                            "              device half8* o [[buffer(1)]], uint id [[thread_position_in_grid]]) {\n"
                            "  o[id] = a[id];\n}\n");
  EXPECT_EQ(e.line(), 1);
  EXPECT_NE(std::string(e.what()).find("half8"), std::string::npos);
}

// Metal 4 tensor parameters: the element type without its address space, the
// rank, and the role (const elements are read, the others written).
TEST(MslProgram, TensorParameters) {
  ProgramInfo info = parse_program(
      "template <typename T, typename S>\n"
      "kernel void mm(tensor<device const half, dextents<int, 2>> a [[buffer(1)]],\n"
      "               metal::tensor<constant float, extents<int, 4, 8, 2>> b [[buffer(0)]],\n"
      "               tensor<device T, dextents<int, 3>, tensor_handle> c [[buffer(2)]]) { }\n"
      "template [[host_name(\"mm_f\")]] kernel void mm<float, execution_simdgroups<4>>(\n"
      "    tensor<device const half, dextents<int, 2>>, tensor<constant float, extents<int, 4, 8, 2>>,\n"
      "    tensor<device float, dextents<int, 3>, tensor_handle>);\n");
  ASSERT_EQ(info.kernels.size(), 1u);
  const ProgramKernel& k = info.kernels[0];
  EXPECT_EQ(k.template_args, "<float, execution_simdgroups<4>>");
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].role, Role::ReadBuffer);
  EXPECT_EQ(k.params[0].type, "half");
  EXPECT_EQ(k.params[0].tensor_rank, 2);
  EXPECT_EQ(k.params[0].index, 1);
  EXPECT_EQ(k.params[1].role, Role::ReadBuffer);
  EXPECT_EQ(k.params[1].type, "float");
  EXPECT_EQ(k.params[1].tensor_rank, 3);
  EXPECT_EQ(k.params[2].role, Role::WriteBuffer);
  EXPECT_EQ(k.params[2].type, "float");
  EXPECT_EQ(k.params[2].tensor_rank, 3);
  EXPECT_EQ(k.params[2].index, 2);
  // A program-scope alias names the tensor type (the seed's `mxfp8_tensor`).
  ProgramInfo aliased = parse_program(
      "using matrix = metal::tensor<device half, dextents<int, 2>>;\n"
      "kernel void g(matrix m [[buffer(0)]], uint i [[thread_position_in_grid]]) { }\n");
  ASSERT_EQ(aliased.kernels.size(), 1u);
  EXPECT_EQ(aliased.kernels[0].params[0].role, Role::WriteBuffer);
  EXPECT_EQ(aliased.kernels[0].params[0].type, "half");
  EXPECT_EQ(aliased.kernels[0].params[0].tensor_rank, 2);
  CompileError tg = error_of("kernel void f(tensor<threadgroup float, dextents<int, 2>> t [[buffer(0)]]) { }\n");
  EXPECT_NE(std::string(tg.what()).find("threadgroup tensors are made in the kernel with tensor_inline"),
            std::string::npos)
      << tg.what();
  CompileError rank = error_of("kernel void f(tensor<device float, dextents<int, n>> t [[buffer(0)]]) { }\n");
  EXPECT_NE(std::string(rank.what()).find("dextents<I, R> takes a rank R"), std::string::npos) << rank.what();
}

TEST(MslProgram, NoKernelAndDuplicateNamesAreErrors) {
  EXPECT_NE(std::string(error_of("float f(float x) { return x; }\n").what()).find("declares no kernel"),
            std::string::npos);
  CompileError dup = error_of(
      "kernel void f(device float* o [[buffer(0)]]) { o[0] = 1; }\n"
      "kernel void g(device float* o [[buffer(0)]]) { o[0] = 2; }\n"
      "template <typename T> kernel void h(device T* o [[buffer(0)]]) { o[0] = 3; }\n"
      "template [[host_name(\"f\")]] kernel void h<float>(device float*);\n");
  EXPECT_EQ(dup.line(), 4);
  EXPECT_NE(std::string(dup.what()).find("two kernels are named 'f'"), std::string::npos) << dup.what();
  CompileError unnamed = error_of("template <typename T> kernel void h(device T* o [[buffer(0)]]) { o[0] = 3; }\n"
                                  "template kernel void h<float>(device float*);\n");
  EXPECT_NE(std::string(unnamed.what()).find("needs a name"), std::string::npos) << unnamed.what();
}

TEST(MslProgram, UnknownStatementAttributeWarnsWithTheLine) {
  ProgramInfo info = check_program(
      "kernel void f(device float* o [[buffer(0)]], uint id [[thread_position_in_grid]]) {\n"
      "  float acc = 0;\n"
      "  [[unroll]] for (uint i = 0; i < 2; ++i) acc += i;\n"
      "  o[id] = acc;\n}\n",
      "");
  ASSERT_EQ(info.warnings.size(), 1u);
  EXPECT_NE(info.warnings[0].find("source:3:5: warning: unknown attribute 'unroll' ignored"), std::string::npos)
      << info.warnings[0];
  EXPECT_NE(info.warnings[0].find("#pragma unroll"), std::string::npos);
}

KernelSpec entry_spec(const std::string& entry) {
  KernelSpec s;
  s.name = entry;
  s.program_entry = entry;
  s.source = kTemplated;
  s.inputs = {{"x", "float"}, {"n", "uint", /*is_scalar=*/true}};
  s.outputs = {{"y", "float"}};
  s.threadgroup_bytes = {128, 32 * 33 * 4};
  return s;
}

TEST(MslProgram, TranslatesOneEntryForBothTargets) {
  for (Target t : {Target::Cpp, Target::Cuda}) {
    TranslatedKernel k = translate(entry_spec("tiled"), t);
    EXPECT_EQ(k.entry, "alloy_kernel_main");
    EXPECT_TRUE(k.analysis.uses_sync);
    // 128 bytes, then the 16-aligned 4224 of tile[32][33].
    EXPECT_EQ(k.threadgroup_parameter_bytes, 128u + 32u * 33u * 4u);
    EXPECT_NE(k.source.find("ALLOY_KERNEL_FN void tiled("), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("reinterpret_cast<float (*)[33]>(alloy_tg_memory + 128u)"), std::string::npos);
    // The CPU splits the entry into regions (msl/cpu_regions.h): the group
    // passes its state, and each region declares the thread's attributes.
    const char* gid = t == Target::Cpp
                          ? "const uint2 gid = ::alloy_msl::attribute_as<uint2>(::alloy_msl::cpu::region_thread_position_in_grid(alloy_g, alloy_tid, alloy_lid));"
                          : "::alloy_msl::attribute_as<uint2>(t.thread_position_in_grid)";
    EXPECT_NE(k.source.find(gid), std::string::npos) << k.source;
    EXPECT_EQ(k.source.find("::alloy_msl::cpu::GroupThreads& alloy_g) {") != std::string::npos, t == Target::Cpp);
    // Instantiations are the glue's business, not the program's.
    EXPECT_EQ(k.source.find("host_name"), std::string::npos);
    ASSERT_EQ(k.params.size(), 3u);
    EXPECT_EQ(k.params[1].kind, GlueParam::Scalar);
  }
}

TEST(MslProgram, InstantiationCallsTheTemplateWithItsArguments) {
  KernelSpec s;
  s.name = s.program_entry = "binary_add_f16";
  s.source = kTemplated;
  s.inputs = {{"a", "float16_t"}, {"b", "float16_t"}};
  s.outputs = {{"out", "float16_t"}};
  TranslatedKernel k = translate(s, Target::Cpp);
  EXPECT_NE(k.source.find("binary_op<half, Add>("), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("static_cast<const half*>(L->buffers[0])"), std::string::npos);
  // `tiled`'s barrier is in another kernel's body: this one runs without fibers.
  EXPECT_FALSE(k.analysis.uses_sync);
}

}  // namespace
}  // namespace alloy::msl

// analyze(): what a body uses, decided on tokens.
#include <gtest/gtest.h>

#include "alloy/msl/translate.h"
#include "test_kernels.h"

namespace alloy::msl {
namespace {

using test::param;

KernelSpec body(std::string source, std::string header = "") {
  return test::kernel(std::move(source), std::move(header), {param("inp", "float"), param("x", "float")});
}

using Names = std::vector<std::string>;

TEST(MslAnalysis, SeedKernels) {
  Analysis a = analyze(test::myexp());
  EXPECT_EQ(a.attributes, Names{"thread_position_in_grid"});
  EXPECT_FALSE(a.uses_sync);
  EXPECT_FALSE(a.uses_atomics);

  a = analyze(test::myexp_strided());
  EXPECT_EQ(a.uses_shape, std::vector<bool>{true});
  EXPECT_EQ(a.uses_strides, std::vector<bool>{true});
  EXPECT_EQ(a.uses_ndim, std::vector<bool>{true});

  a = analyze(test::grid_sample());
  EXPECT_EQ(a.uses_shape, (std::vector<bool>{true, true}));
  EXPECT_EQ(a.uses_strides, (std::vector<bool>{false, false}));
  EXPECT_FALSE(a.uses_sync);

  a = analyze(test::grid_sample_grad());
  // MLX's order, not the order of first use.
  EXPECT_EQ(a.attributes, (Names{"thread_index_in_simdgroup", "thread_position_in_grid",
                                 "threads_per_simdgroup"}));
  EXPECT_TRUE(a.uses_sync);  // simd_sum
  EXPECT_TRUE(a.uses_atomics);
}

TEST(MslAnalysis, NamesAreWholeTokens) {
  // `my_grid_size` and `grid_size_z` contain `grid_size` but are other names.
  Analysis a = analyze(body("uint my_grid_size = 3; uint grid_size_z = my_grid_size;\n"
                            "out[0] = inp_shapes + xinp_shape + inp_ndims;"));
  EXPECT_TRUE(a.attributes.empty());
  EXPECT_EQ(a.uses_shape, (std::vector<bool>{false, false}));
  EXPECT_EQ(a.uses_ndim, (std::vector<bool>{false, false}));

  a = analyze(body("uint3 g = grid_size; out[0] = x_ndim;"));
  EXPECT_EQ(a.attributes, Names{"grid_size"});
  EXPECT_EQ(a.uses_ndim, (std::vector<bool>{false, true}));
}

TEST(MslAnalysis, CommentsStringsAndMembersDoNotCount) {
  Analysis a = analyze(body(
      "// thread_position_in_grid, inp_shape, threadgroup_barrier(mem_flags::mem_none)\n"
      "/* threads_per_grid simd_sum(x) */\n"
      "const char* s = \"grid_origin threadgroup atomic_fetch_add_explicit(\";\n"
      "char c = 'x';\n"
      "out[0] = params.grid_size.x + p->threads_per_threadgroup.x + q.simd_sum(1);\n"));
  EXPECT_TRUE(a.attributes.empty());
  EXPECT_EQ(a.uses_shape, (std::vector<bool>{false, false}));
  EXPECT_FALSE(a.uses_sync);
  EXPECT_FALSE(a.uses_atomics);
}

TEST(MslAnalysis, MacroBodiesCount) {
  Analysis a = analyze(body("#define IDX thread_position_in_grid.x\n"
                            "#define SYNC threadgroup_barrier(mem_flags::mem_threadgroup)\n"
                            "#if defined(threads_per_grid)\n#endif\n"
                            "out[IDX] = inp[IDX] * inp_ndim; SYNC;"));
  EXPECT_EQ(a.attributes, Names{"thread_position_in_grid"});  // not the #if's name
  EXPECT_EQ(a.uses_ndim, (std::vector<bool>{true, false}));
  EXPECT_TRUE(a.uses_sync);
}

TEST(MslAnalysis, AttributesComeFromSourceOnly) {
  Analysis a = analyze(body("out[0] = 1;", "inline uint f(uint3 thread_position_in_grid) { return 0; }"));
  EXPECT_TRUE(a.attributes.empty());
}

TEST(MslAnalysis, AllTwentyAttributesInMlxOrder) {
  Names all = {"dispatch_quadgroups_per_threadgroup", "dispatch_simdgroups_per_threadgroup",
               "dispatch_threads_per_threadgroup", "grid_origin", "grid_size",
               "quadgroup_index_in_threadgroup", "quadgroups_per_threadgroup",
               "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup",
               "thread_execution_width", "thread_index_in_quadgroup", "thread_index_in_simdgroup",
               "thread_index_in_threadgroup", "thread_position_in_grid",
               "thread_position_in_threadgroup", "threadgroup_position_in_grid",
               "threadgroups_per_grid", "threads_per_grid", "threads_per_simdgroup",
               "threads_per_threadgroup"};
  std::string src;
  for (auto it = all.rbegin(); it != all.rend(); ++it) src += "(void)" + *it + ";\n";
  Analysis a = analyze(body(src));
  EXPECT_EQ(a.attributes, all);
  // Ids alone need no synchronisation.
  EXPECT_FALSE(a.uses_sync);
}

TEST(MslAnalysis, SyncFeatures) {
  auto sync = [](std::string src, std::string header = "") {
    return analyze(body(std::move(src), std::move(header))).uses_sync;
  };
  EXPECT_TRUE(sync("threadgroup_barrier(mem_flags::mem_threadgroup);"));
  EXPECT_TRUE(sync("simdgroup_barrier(mem_flags::mem_none);"));
  EXPECT_TRUE(sync("float s = simd_sum(1.0f);"));
  EXPECT_TRUE(sync("float s = metal::simd_prefix_exclusive_sum(1.0f);"));
  EXPECT_TRUE(sync("float s = simd_shuffle_down(1.0f, 2);"));
  EXPECT_TRUE(sync("float s = quad_broadcast(1.0f, 0);"));
  EXPECT_TRUE(sync("threadgroup float buf[32];"));
  EXPECT_TRUE(sync("simdgroup_matrix<float, 8, 8> m;"));
  EXPECT_TRUE(sync("simdgroup_float8x8 m;"));
  EXPECT_TRUE(sync("simdgroup_multiply_accumulate(c, a, b, c);"));
  // In a helper of the header.
  EXPECT_TRUE(sync("out[0] = f(1.0f);", "inline float f(float v) { return simd_max(v); }"));
  // Variables that merely start like SIMD functions, and the SIMD ids.
  EXPECT_FALSE(sync("uint simd_idx = thread_index_in_simdgroup; uint quad_lane = simd_idx;"
                    "uint g = simdgroup_index_in_threadgroup + simdgroups_per_threadgroup;"));
  EXPECT_FALSE(sync("out[0] = inp[0];"));
}

TEST(MslAnalysis, Atomics) {
  KernelSpec s = body("out[0] = 1;");
  EXPECT_FALSE(analyze(s).uses_atomics);
  s.atomic_outputs = true;
  EXPECT_TRUE(analyze(s).uses_atomics);
  EXPECT_TRUE(analyze(body("atomic_store_explicit((device atomic<float>*)out, 1.0f, memory_order_relaxed);"))
                  .uses_atomics);
  EXPECT_TRUE(analyze(body("device atomic_float* o = (device atomic_float*)out;")).uses_atomics);
  EXPECT_FALSE(analyze(body("int atomicity = 1; out[0] = atomicity;")).uses_atomics);
}

TEST(MslAnalysis, ScalarInputsHaveNoShapeInfo) {
  KernelSpec s = body("out[0] = x_shape[0] + x_ndim + inp_ndim;");
  s.inputs[1].is_scalar = true;
  Analysis a = analyze(s);
  EXPECT_EQ(a.uses_shape, (std::vector<bool>{false, false}));
  EXPECT_EQ(a.uses_ndim, (std::vector<bool>{true, false}));
}

TEST(MslAnalysis, FpContractOff) {
  const std::string use = "uint i = thread_position_in_grid.x;\nx[i] = inp[i] * 2.0f;\n";
  EXPECT_FALSE(analyze(body(use)).fp_contract_off);
  for (const char* pragma : {"#pragma STDC FP_CONTRACT OFF", "#  pragma   STDC  FP_CONTRACT\tOFF",
                             "#pragma clang fp contract(off)", "#pragma clang fp contract ( off )"}) {
    SCOPED_TRACE(pragma);
    EXPECT_TRUE(analyze(body(std::string(pragma) + "\n" + use)).fp_contract_off);
    EXPECT_TRUE(analyze(body(use, std::string(pragma) + "\n")).fp_contract_off);  // in the header
  }
  // Other settings, other pragmas, and the words where they are not a directive.
  for (const char* text : {"#pragma STDC FP_CONTRACT ON", "#pragma STDC FP_CONTRACT DEFAULT",
                           "#pragma clang fp contract(fast)", "#pragma STDC FENV_ACCESS OFF",
                           "// #pragma STDC FP_CONTRACT OFF", "/* #pragma clang fp contract(off) */"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(analyze(body(std::string(text) + "\n" + use)).fp_contract_off);
  }
}

TEST(MslAnalysis, AssumedBufferAlignment) {
  auto alignment = [](const std::string& source, const std::string& header = "") {
    return analyze(body(source, header)).assumed_buffer_alignment;
  };
  EXPECT_EQ(alignment("x[0] = inp[0];"), 0u);
  // Casts to pointers into device or constant memory whose pointee needs more than 8 bytes.
  EXPECT_EQ(alignment("float4 v = *(const device float4*)(inp + 4);"), 16u);
  EXPECT_EQ(alignment("*(device float4*)(x) = 1;"), 16u);
  EXPECT_EQ(alignment("auto p = reinterpret_cast<const device uint4*>(inp);"), 16u);
  EXPECT_EQ(alignment("auto p = (device long4*)x;"), 32u);
  EXPECT_EQ(alignment("auto p = (device float3x4*)x;"), 16u);
  EXPECT_EQ(alignment("auto p = (const device Params*)inp;"), 16u);  // a user's type: as if it held a float4
  EXPECT_EQ(alignment("x[0] = 1;", "inline float4 ld(const device float* p) { return *(const device float4*)p; }"),
            16u);  // in the header
  // Types no wider than what MLX's CPU buffers give (8 bytes), packed vectors, atomics, threadgroup pointers.
  for (const char* ok : {"auto p = (device half4*)x;", "auto p = (const device float2*)inp;",
                         "auto p = (device packed_float4*)x;", "auto p = (device atomic<float>*)x;",
                         "auto p = (device metal::atomic_uint*)x;", "auto p = (const device uchar*)inp;",
                         "threadgroup float4 t[4]; auto p = (threadgroup float4*)t;",
                         "auto p = reinterpret_cast<const device ulong*>(inp);", "float4 v = float4(inp[0]);",
                         "float f(device float4* p);"}) {
    SCOPED_TRACE(ok);
    EXPECT_EQ(alignment(ok), 0u);
  }
}

}  // namespace
}  // namespace alloy::msl

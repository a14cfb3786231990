// The CUDA launch plan kept on disk beside a variant's cubin: it round-trips,
// damaged bytes are refused, and its key changes with everything that
// changes the generated code (and only with that).
#include <gtest/gtest.h>

#include "fast/cuda_plan.h"

namespace alloy::fast {
namespace {

msl::KernelSpec spec() {
  msl::KernelSpec s;
  s.name = "k";
  s.source = "uint i = thread_position_in_grid.x; out[i] = inp[i] + T(1);";
  s.inputs = {{"inp", "float", false, false}};
  s.outputs = {{"out", "float", false, false}};
  s.template_args = {{"T", msl::TemplateArg::Type, "float"}};
  return s;
}

CudaLaunchPlan plan() {
  CudaLaunchPlan p;
  p.params = {{msl::GlueParam::Buffer, 0, {}}, {msl::GlueParam::Shape, 0, {}}, {msl::GlueParam::Buffer, 1, {}},
              {msl::GlueParam::Ndim, 0, {}}};
  p.threadgroups_per_block = 4;
  p.entry = "alloy_kernel_main";
  p.dynamic_threadgroup = 70000;
  p.cubin = std::make_shared<const std::string>(std::string("\x7f" "ELF\0\1\2 cubin bytes", 20));
  return p;
}

TEST(CudaPlan, RoundTrips) {
  const CudaLaunchPlan p = plan();
  auto back = decode_plan(encode_plan(p));
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->params.size(), p.params.size());
  for (size_t i = 0; i < p.params.size(); ++i) {
    EXPECT_EQ(back->params[i].kind, p.params[i].kind);
    EXPECT_EQ(back->params[i].index, p.params[i].index);
  }
  EXPECT_EQ(back->threadgroups_per_block, 4);
  EXPECT_EQ(back->entry, p.entry);
  EXPECT_EQ(back->dynamic_threadgroup, 70000u);
  EXPECT_EQ(*back->cubin, *p.cubin);
}

TEST(CudaPlan, DamagedBytesAreRefused) {
  const std::string good = encode_plan(plan());
  for (size_t cut = 0; cut < good.size(); ++cut) EXPECT_FALSE(decode_plan(good.substr(0, cut))) << cut;
  EXPECT_FALSE(decode_plan(good + "x"));
  std::string wrong_magic = good;
  wrong_magic[5] ^= 1;
  EXPECT_FALSE(decode_plan(wrong_magic));
  std::string bad_kind = good;
  bad_kind[10 + 4] = 9;  // the first parameter's kind
  EXPECT_FALSE(decode_plan(bad_kind));
}

TEST(CudaPlan, KeyFollowsWhatChangesTheCode) {
  const std::string base = cuda_plan_key(spec(), "sm_90");
  EXPECT_EQ(cuda_plan_key(spec(), "sm_90"), base);
  EXPECT_NE(cuda_plan_key(spec(), "sm_80"), base);
  auto differs = [&](auto change) {
    msl::KernelSpec s = spec();
    change(s);
    return cuda_plan_key(s, "sm_90") != base;
  };
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.source += " "; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.header = "// h"; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.name = "k2"; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.inputs[0].type = "half"; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.inputs[0].in_constant = true; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.inputs[0].is_scalar = true; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.outputs[0].name = "o"; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.template_args[0].value = "half"; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.math_mode = "fast"; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.atomic_outputs = true; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.dialect = msl::Dialect::Cuda; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.bounds_check = true; }));
  msl::KernelSpec checked = spec(), tolerant = spec();
  checked.bounds_check = tolerant.bounds_check = true;
  tolerant.tolerate_input_reads = true;  // alloy.mlx on MLX's CUDA backend: reads of inputs clamped
  EXPECT_NE(cuda_plan_key(checked, "sm_90"), cuda_plan_key(tolerant, "sm_90"));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) {
    s.threadgroup_storage = msl::KernelSpec::ThreadgroupStorage::Dynamic;
  }));
  // metal_library: the entry, and the threadgroup memory its launch gives
  // (which the plan carries as dynamic shared memory).
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.program_entry = "k"; }));
  EXPECT_TRUE(differs([](msl::KernelSpec& s) { s.threadgroup_bytes = {256}; }));
  msl::KernelSpec a = spec(), b = spec();
  a.threadgroup_bytes = {256};
  b.threadgroup_bytes = {1024};
  EXPECT_NE(cuda_plan_key(a, "sm_90"), cuda_plan_key(b, "sm_90"));
}

}  // namespace
}  // namespace alloy::fast

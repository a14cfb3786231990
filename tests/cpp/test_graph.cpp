// The lazy graph: evaluation order, multi-output nodes, graph release,
// deep graphs, errors that leave earlier results intact, dtype table.
#include <gtest/gtest.h>

#include <random>

#include "alloy/alloy.h"

using namespace alloy;

namespace {
std::mt19937 rng(std::random_device{}());
float uniform() { return std::uniform_real_distribution<float>(-1, 1)(rng); }
}  // namespace

TEST(Graph, OpsAreLazyUntilEvaluated) {
  array a({uniform(), uniform(), uniform()});
  array b = exp(a) + a;
  EXPECT_FALSE(b.is_evaluated());
  EXPECT_TRUE(b.has_primitive());
  eval(b);
  EXPECT_TRUE(b.is_evaluated());
  for (int i = 0; i < 3; ++i) {
    float x = to_host(a).data<float>()[i];
    EXPECT_NEAR(to_host(b).data<float>()[i], std::exp(x) + x, 1e-6);
  }
  // Nothing traces b: its graph was released after evaluation.
  EXPECT_FALSE(b.has_primitive());
  EXPECT_TRUE(b.inputs().empty());
}

TEST(Graph, SharedSubgraphIsComputedOnce) {
  array a({1.0f, 2.0f});
  array s = a * 3;
  array u = s + 1, v = s - 1;
  eval(u, v);
  EXPECT_EQ(to_host(u).data<float>()[1], 7.0f);
  EXPECT_EQ(to_host(v).data<float>()[0], 2.0f);
}

namespace {
// A kernel with three outputs: one primitive, three sibling arrays.
std::vector<array> three_outputs(const array& a) {
  auto k = fast::metal_kernel("graph_three", {"a"}, {"o0", "o1", "o2"},
                              "uint i = thread_position_in_grid.x; o0[i] = a[i]; o1[i] = 2 * a[i]; o2[i] = 3 * a[i];");
  fast::KernelCall call;
  call.inputs = {a};
  call.output_shapes = {a.shape(), a.shape(), a.shape()};
  call.output_dtypes = {float32, float32, float32};
  call.grid = {static_cast<int>(a.size()), 1, 1};
  call.threadgroup = {32, 1, 1};
  return k(call);
}
}  // namespace

TEST(Graph, MultiOutputNodeEvaluatesAllSiblings) {
  array a(std::vector<float>{1, 2, 3, 4}, {4});
  auto outs = three_outputs(a);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].siblings().size(), 2u);
  EXPECT_EQ(outs[1].outputs().size(), 3u);
  eval(outs[1]);  // evaluating one output fills its siblings too
  EXPECT_TRUE(outs[0].is_evaluated());
  EXPECT_TRUE(outs[2].is_evaluated());
  EXPECT_EQ(to_host(outs[2]).data<float>()[3], 12.0f);
}

TEST(Graph, DroppedSiblingStillGetsMemory) {
  array a(std::vector<float>{1, 2, 3, 4}, {4});
  array kept = three_outputs(a)[1];  // the other outputs are dropped at once
  eval(kept);
  EXPECT_EQ(to_host(kept).data<float>()[2], 6.0f);
}

TEST(Graph, VeryDeepGraphsEvaluateAndFreeWithoutRecursion) {
  array x(0.0f);
  for (int i = 0; i < 100000; ++i) x = x + 1.0f;
  eval(x);
  EXPECT_EQ(x.item<float>(), 100000.0f);
  array y(0.0f);
  for (int i = 0; i < 100000; ++i) y = y + 1.0f;
  y = array(0.0f);  // dropping an unevaluated deep graph must not overflow the stack
  SUCCEED();
}

TEST(Graph, FailedEvaluationLeavesEarlierResultsIntact) {
  array good = array({1.0f, 2.0f}) * 2;
  eval(good);
  auto k = fast::metal_kernel("graph_broken", {}, {"out"}, "out[0] = undefined_name;");
  fast::KernelCall call;
  call.output_shapes = {{1}};
  call.output_dtypes = {float32};
  array bad = k(call)[0];
  array depends = bad + good;
  EXPECT_THROW(eval(depends), std::runtime_error);
  EXPECT_FALSE(depends.is_evaluated());
  EXPECT_EQ(to_host(good).data<float>()[1], 4.0f);
  array after = good + 1;
  eval(after);
  EXPECT_EQ(to_host(after).data<float>()[0], 3.0f);
}

TEST(Graph, ItemEvaluatesAndConverts) {
  array a = array({2.5f}) * 2;
  EXPECT_EQ(a.item<int>(), 5);
  EXPECT_THROW(array({1.0f, 2.0f}).item<float>(), std::invalid_argument);
}

TEST(Dtypes, TableDrivesSizesNamesAndParsing) {
  EXPECT_EQ(size_of(float16), 2u);
  EXPECT_EQ(size_of(complex64), 8u);
  EXPECT_STREQ(dtype_name(bfloat16), "bfloat16");
  EXPECT_STREQ(dtype_info(int32).msl_name, "int32_t");
  EXPECT_EQ(dtype_from_name("float16_t"), float16);
  EXPECT_EQ(dtype_from_name("half"), float16);
  EXPECT_THROW(dtype_from_name("float128"), std::invalid_argument);
  int seen = 0;
  for (int i = 0; i < kNumDtypes; ++i) {
    dispatch_dtype(static_cast<Dtype>(i), [&](auto tag) {
      using T = typename decltype(tag)::type;
      EXPECT_EQ(sizeof(T), size_of(static_cast<Dtype>(i)));
      EXPECT_EQ(dtype_of<T>, static_cast<Dtype>(i));
      ++seen;
    });
  }
  EXPECT_EQ(seen, kNumDtypes);
}

TEST(Devices, CpuAlwaysAvailableGpuReportsWhyNot) {
  EXPECT_TRUE(is_available(Device(Device::cpu)));
  if (!is_available(Device(Device::gpu))) {
    // Strict mode: asking for the missing GPU is an error naming why.
    setenv("ALLOY_GPU_FALLBACK", "error", 1);
    try {
      set_default_device(Device(Device::gpu));
      FAIL() << "setting an unavailable GPU as default must throw under ALLOY_GPU_FALLBACK=error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("not available"), std::string::npos);
    }
    EXPECT_THROW(new_stream(Device(Device::gpu)), std::invalid_argument);
    unsetenv("ALLOY_GPU_FALLBACK");
    EXPECT_EQ(default_device().type, Device::cpu);
    // Default: work asked of the missing GPU runs on the CPU.
    EXPECT_EQ(to_stream(Device(Device::gpu)).device.type, Device::cpu);
    EXPECT_EQ(new_stream(Device(Device::gpu)).device.type, Device::cpu);
    array y = add(array(1.0f), array(2.0f), Device(Device::gpu));
    EXPECT_EQ(y.item<float>(), 3.0f);
  }
}

TEST(Memory, ActiveMemoryFollowsLiveArrays) {
  size_t before = get_active_memory();
  {
    array big = zeros({1 << 20}, float32);
    eval(big);
    EXPECT_GE(get_active_memory(), before + (size_t(4) << 20));
    EXPECT_GE(get_peak_memory(), get_active_memory());
  }
  EXPECT_LE(get_active_memory(), before + 4096);
}

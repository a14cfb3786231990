// Deep lazy graphs as CUDA graphs (backend/cuda/graph_eval.cpp): a tape
// shape evaluated again runs as one graph launch with the values the direct
// path gives; a failure inside a recording leaves the earlier nodes
// computed; a recording the driver loses falls back to node by node.
// Needs a GPU (the GPU machine runs this binary through scripts/gpu_check.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "alloy/alloy.h"
#include "alloy/primitive.h"
#include "backend/cuda/device.h"
#include "backend/cuda/graph_eval.h"

using namespace alloy;

namespace {

const Device kGpu(Device::gpu);

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

unsigned fresh_seed() {
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  return seed;
}

// A chain of `n` small dependent ops of several kinds, on `d`.
array chain(array x, const array& y, int n, Device d) {
  for (int i = 0; i < n; ++i) {
    if (i % 3 == 0) x = add(multiply(x, y, d), array(0.5f), d);
    else if (i % 3 == 1) x = sin(x, d);
    else x = subtract(x, y, d);
  }
  return x;
}

std::vector<float> values(const array& a) {
  array h = to_host(a);
  const float* p = h.data<float>();
  return std::vector<float>(p, p + h.size());
}

// Passes its input through on the GPU (a view), or, as asked, throws or does
// what a recording does not allow (waits for the stream it records into).
class Probe : public Primitive {
 public:
  enum Mode { pass, fail, break_recording };
  Probe(Stream s, const Mode* mode) : Primitive(s), mode_(mode) {}
  const char* name() const override { return "Probe"; }
  bool graph_capturable() const override { return true; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    outputs[0].copy_shared_buffer(inputs[0]);
  }
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override {
    if (*mode_ == fail) throw std::runtime_error("[Probe] failed on purpose");
    if (*mode_ == break_recording) {
      // Refused while the stream records, which loses the recording; the
      // error itself is dropped, as a careless primitive would.
      (void)cuda_driver::api().cuStreamSynchronize(cuda::stream_for(stream()));
    }
    outputs[0].copy_shared_buffer(inputs[0]);
  }

 private:
  const Mode* mode_;
};

array probe(const array& x, const Probe::Mode* mode) {
  return array(x.shape(), x.dtype(), std::make_shared<Probe>(default_stream(kGpu), mode), {x});
}

}  // namespace

TEST(CudaGraphs, RepeatedChainRunsAsOneGraphWithTheDirectPathsValues) {
  if (!is_available(kGpu)) GTEST_SKIP() << "no GPU here";
  const unsigned seed = fresh_seed();
  const size_t n = 1000;
  const array y(random_values(n, seed + 1), Shape{int(n)}, float32);
  const array x1(random_values(n, seed), Shape{int(n)}, float32);
  const array x2(random_values(n, seed + 2), Shape{int(n)}, float32);
  const uint64_t before = cuda::graph_launches();
  array direct = chain(x1, y, 600, kGpu);  // a new shape: node by node
  eval({direct});
  const uint64_t after_direct = cuda::graph_launches();
  array made = chain(x1, y, 600, kGpu);  // seen before: recorded, new executables
  eval({made});
  const uint64_t after_made = cuda::graph_launches();
  array updated = chain(x2, y, 600, kGpu);  // the executables updated with x2's buffers
  eval({updated});
  EXPECT_EQ(after_direct, before);
  EXPECT_GE(after_made - after_direct, 2u);  // 600 nodes: several segments
  EXPECT_EQ(cuda::graph_launches() - after_made, after_made - after_direct);
  // The same kernels in the same order: the same bits.
  EXPECT_EQ(values(direct), values(made));
  const std::vector<float> got = values(updated), want = values(chain(x2, y, 600, Device(Device::cpu)));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "element " << i;
}

TEST(CudaGraphs, FailureInsideARecordingLeavesEarlierNodesComputed) {
  if (!is_available(kGpu)) GTEST_SKIP() << "no GPU here";
  const unsigned seed = fresh_seed();
  const array y(random_values(256, seed + 1), Shape{256}, float32);
  const array x(random_values(256, seed), Shape{256}, float32);
  Probe::Mode mode = Probe::pass;
  auto build = [&](array& head) {
    head = chain(x, y, 30, kGpu);
    return chain(probe(head, &mode), y, 30, kGpu);
  };
  array head(0.0f), out(0.0f);
  out = build(head);
  eval({out});  // seen
  out = build(head);
  mode = Probe::fail;
  EXPECT_THROW(eval({out}), std::runtime_error);
  // The nodes before the failing one ran, as they do without graphs.
  ASSERT_TRUE(head.is_evaluated());
  const std::vector<float> got = values(head), want = values(chain(x, y, 30, Device(Device::cpu)));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "element " << i;
  mode = Probe::pass;
  out = build(head);
  eval({out});
  const std::vector<float> again = values(out),
                           full = values(chain(chain(x, y, 30, Device(Device::cpu)), y, 30, Device(Device::cpu)));
  for (size_t i = 0; i < again.size(); ++i) EXPECT_NEAR(again[i], full[i], 1e-4) << "element " << i;
}

TEST(CudaGraphs, LostRecordingFallsBackToNodeByNode) {
  if (!is_available(kGpu)) GTEST_SKIP() << "no GPU here";
  const unsigned seed = fresh_seed();
  const array y(random_values(512, seed + 1), Shape{512}, float32);
  const array x(random_values(512, seed), Shape{512}, float32);
  Probe::Mode mode = Probe::pass;
  auto build = [&] { return chain(probe(chain(x, y, 20, kGpu), &mode), y, 20, kGpu); };
  eval({build()});  // seen
  mode = Probe::break_recording;
  const uint64_t before = cuda::graph_launches();
  array out = build();
  eval({out});
  EXPECT_EQ(cuda::graph_launches(), before);  // nothing ran as a graph...
  const std::vector<float> got = values(out),
                           want = values(chain(chain(x, y, 20, Device(Device::cpu)), y, 20, Device(Device::cpu)));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "element " << i;  // ...yet all ran
}

TEST(CudaGraphs, UncheckedMetalKernelsJoinTheGraph) {
  if (!is_available(kGpu)) GTEST_SKIP() << "no GPU here";
  const unsigned seed = fresh_seed();
  auto k = fast::metal_kernel("axpb", {"x", "a"}, {"y"},
                              "uint i = thread_position_in_grid.x; y[i] = x[i] * a[i] + 0.125f;");
  const array a(random_values(256, seed + 1), Shape{256}, float32);
  auto build = [&](array x) {
    for (int i = 0; i < 20; ++i) {
      fast::KernelCall call;
      call.inputs = {x, a};
      call.output_shapes = {Shape{256}};
      call.output_dtypes = {float32};
      call.grid = {256, 1, 1};
      call.threadgroup = {64, 1, 1};
      x = multiply(sin(k(call)[0], kGpu), array(0.5f), kGpu);
    }
    return x;
  };
  const array x0(random_values(256, seed), Shape{256}, float32);
  eval({build(x0)});  // seen
  const uint64_t before = cuda::graph_launches();
  array out = build(x0);
  eval({out});
  EXPECT_GT(cuda::graph_launches(), before);
  std::vector<float> x = random_values(256, seed), av = random_values(256, seed + 1);
  const std::vector<float> got = values(out);
  for (int i = 0; i < 20; ++i) {
    for (size_t j = 0; j < x.size(); ++j) x[j] = std::sin(x[j] * av[j] + 0.125f) * 0.5f;
  }
  for (size_t j = 0; j < x.size(); ++j) EXPECT_NEAR(got[j], x[j], 1e-5) << "element " << j;
}

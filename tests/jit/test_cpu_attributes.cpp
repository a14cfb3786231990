// Every Metal attribute on a 3-D grid whose threadgroups are partial in x, y
// and z, on both executor paths; expected values computed independently here.
#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

constexpr int kFields = 9 * 3 + 11;

const char* kKernel = R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_attrs(uint* out, uint3 thread_position_in_grid, uint3 thread_position_in_threadgroup,
    uint3 threadgroup_position_in_grid, uint3 threads_per_threadgroup, uint3 threads_per_grid, uint3 threadgroups_per_grid,
    uint3 grid_size, uint3 grid_origin, uint3 dispatch_threads_per_threadgroup, uint thread_index_in_threadgroup,
    uint thread_index_in_simdgroup, uint threads_per_simdgroup, uint simdgroup_index_in_threadgroup,
    uint simdgroups_per_threadgroup, uint dispatch_simdgroups_per_threadgroup, uint thread_execution_width,
    uint thread_index_in_quadgroup, uint quadgroup_index_in_threadgroup, uint quadgroups_per_threadgroup,
    uint dispatch_quadgroups_per_threadgroup) {
  uint3 p = thread_position_in_grid;
  uint* o = out + ((p.z * threads_per_grid.y + p.y) * threads_per_grid.x + p.x) * 38;
  uint3 v3[9] = {thread_position_in_grid, thread_position_in_threadgroup, threadgroup_position_in_grid,
                 threads_per_threadgroup, threads_per_grid, threadgroups_per_grid, grid_size, grid_origin,
                 dispatch_threads_per_threadgroup};
  for (int i = 0; i < 9; ++i) { o[3 * i] = v3[i].x; o[3 * i + 1] = v3[i].y; o[3 * i + 2] = v3[i].z; }
  uint v1[11] = {thread_index_in_threadgroup, thread_index_in_simdgroup, threads_per_simdgroup,
                 simdgroup_index_in_threadgroup, simdgroups_per_threadgroup, dispatch_simdgroups_per_threadgroup,
                 thread_execution_width, thread_index_in_quadgroup, quadgroup_index_in_threadgroup,
                 quadgroups_per_threadgroup, dispatch_quadgroups_per_threadgroup};
  for (int i = 0; i < 11; ++i) o[27 + i] = v1[i];
}
)";

std::string glue(bool sync) {
  return std::string("alloy_msl::cpu::run<") + (sync ? "true" : "false") + R"(>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_attrs<float>(static_cast<uint*>(L->buffers[0]), t.thread_position_in_grid,
        t.thread_position_in_threadgroup, t.threadgroup_position_in_grid, t.threads_per_threadgroup, t.threads_per_grid,
        t.threadgroups_per_grid, t.grid_size, t.grid_origin, t.dispatch_threads_per_threadgroup,
        t.thread_index_in_threadgroup, t.thread_index_in_simdgroup, t.threads_per_simdgroup,
        t.simdgroup_index_in_threadgroup, t.simdgroups_per_threadgroup, t.dispatch_simdgroups_per_threadgroup,
        t.thread_execution_width, t.thread_index_in_quadgroup, t.quadgroup_index_in_threadgroup,
        t.quadgroups_per_threadgroup, t.dispatch_quadgroups_per_threadgroup);
  });)";
}

void check_attributes(bool sync) {
  const unsigned G[3] = {10, 7, 3}, TG[3] = {4, 3, 2};  // groups of x 4,4,2; y 3,3,1; z 2,1
  const unsigned total = G[0] * G[1] * G[2];
  std::vector<unsigned> out(total * kFields, 0xdeadbeef);
  auto k = compile(translation_unit(kKernel, glue(sync)));
  launch(*k, {out.data()}, {G[0], G[1], G[2]}, {TG[0], TG[1], TG[2]});
  for (unsigned z = 0; z < G[2]; ++z)
    for (unsigned y = 0; y < G[1]; ++y)
      for (unsigned x = 0; x < G[0]; ++x) {
        unsigned p[3] = {x, y, z}, local[3], group[3], actual[3], groups[3];
        for (int d = 0; d < 3; ++d) {
          group[d] = p[d] / TG[d];
          local[d] = p[d] % TG[d];
          actual[d] = std::min(TG[d], G[d] - group[d] * TG[d]);
          groups[d] = (G[d] + TG[d] - 1) / TG[d];
        }
        unsigned linear = local[0] + actual[0] * (local[1] + actual[1] * local[2]);
        unsigned count = actual[0] * actual[1] * actual[2], requested = TG[0] * TG[1] * TG[2];
        std::vector<unsigned> expect;
        for (const unsigned* v : std::initializer_list<const unsigned*>{p, local, group, actual, G, groups, G}) expect.insert(expect.end(), v, v + 3);
        expect.insert(expect.end(), {0, 0, 0});
        expect.insert(expect.end(), TG, TG + 3);
        expect.insert(expect.end(), {linear, linear % 32, 32, linear / 32, (count + 31) / 32, (requested + 31) / 32, 32,
                                     linear % 4, linear / 4, (count + 3) / 4, (requested + 3) / 4});
        const unsigned* o = &out[((z * G[1] + y) * G[0] + x) * kFields];
        for (int f = 0; f < kFields; ++f)
          ASSERT_EQ(o[f], expect[f]) << "thread (" << x << "," << y << "," << z << ") field " << f;
      }
}

TEST(CpuAttributes, PartialThreadgroupsLoopPath) { check_attributes(false); }
TEST(CpuAttributes, PartialThreadgroupsFiberPath) { check_attributes(true); }

TEST(CpuAttributes, ThreadgroupLimitAndEmptyGrid) {
  auto k = compile(translation_unit(kKernel, glue(false)));
  std::vector<unsigned> out(kFields, 7);
  EXPECT_THROW(launch(*k, {out.data()}, {2048}, {1025}), std::invalid_argument);
  EXPECT_THROW(launch(*k, {out.data()}, {4}, {0}), std::invalid_argument);
  launch(*k, {out.data()}, {0}, {32});  // no threads: nothing runs
  EXPECT_EQ(out[0], 7u);
  launch(*k, {out.data()}, {1}, {1024});  // the threadgroup is clamped to the grid
  EXPECT_EQ(out[27 + 5], 1u);             // dispatch_simdgroups_per_threadgroup of a 1-thread group
}

}  // namespace
}  // namespace alloy::jit::test

// Kernels in the form the MSL translator emits for the CUDA target (the
// user's body unchanged inside a kernel function, then the extern "C" glue),
// shared by the NVRTC compile tests and the GPU smoke test. The seeds'
// bodies come from examples/seeds, between a hand-written signature and glue.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../common/seed_sources.h"
#include "msl/conditionals.h"
#include "msl/lexer.h"

namespace alloy_test {

// A seed's body with its conditionals as the translator writes them
// (msl/conditionals.h): half and bfloat convert to and from the integers
// implicitly, so `c ? I_nw : 0` needs Metal's typing spelled out.
inline std::string with_translated_conditionals(const std::string& body) {
  const alloy::msl::LexedText lexed = alloy::msl::lex_text(body, "source");
  std::vector<std::optional<std::string>> out(lexed.tokens.size());
  alloy::msl::wrap_conditionals(lexed.tokens, out);
  std::string text;
  std::size_t at = 0;
  for (std::size_t i = 0; i < lexed.tokens.size(); ++i) {
    const alloy::msl::Token& t = lexed.tokens[i];
    text += body.substr(at, t.begin - at) + (out[i] ? *out[i] : t.text);
    at = t.end;
  }
  return text + body.substr(at);
}

// The seed's exp, inputs float16, T = float.
inline std::string exp_kernel() {
  return R"CUDA(
#include "metal_cuda.h"
using namespace metal;
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_myexp(const float16_t* inp, float16_t* out, uint3 thread_position_in_grid) {
)CUDA" + seed_source("exp_elementwise.py") + R"CUDA(
}
extern "C" __global__ void alloy_kernel_main(const float16_t* __restrict__ inp, float16_t* __restrict__ out,
                                             alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  custom_kernel_myexp<float>(inp, out, t.thread_position_in_grid);
}
)CUDA";
}

// The seed's grid_sample forward; ELEM is defined by the compile options
// (-DELEM=float or -DELEM=float16_t), T = ELEM.
inline std::string grid_sample_forward() {
  return R"CUDA(
#include "metal_cuda.h"
using namespace metal;
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_grid_sample(const ELEM* x, const int* x_shape, const ELEM* grid,
                                               const int* grid_shape, ELEM* out, uint3 thread_position_in_grid) {
)CUDA" + with_translated_conditionals(seed_source("grid_sample.py", 0)) + R"CUDA(
}
extern "C" __global__ void alloy_kernel_main(const ELEM* __restrict__ x, const int* __restrict__ x_shape,
                                             const ELEM* __restrict__ grid, const int* __restrict__ grid_shape,
                                             ELEM* __restrict__ out, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  custom_kernel_grid_sample<ELEM>(x, x_shape, grid, grid_shape, out, t.thread_position_in_grid);
}
)CUDA";
}

// The seed's grid_sample VJP: atomic outputs, simd_sum, ceildiv,
// threads_per_simdgroup, thread_index_in_simdgroup. T = ELEM.
inline std::string grid_sample_vjp() {
  return R"CUDA(
#include "metal_cuda.h"
using namespace metal;
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_grid_sample_grad(const ELEM* x, const int* x_shape, const ELEM* grid,
    const int* grid_shape, const ELEM* cotangent, atomic<ELEM>* x_grad, atomic<ELEM>* grid_grad,
    uint3 thread_position_in_grid, uint thread_index_in_simdgroup, uint threads_per_simdgroup) {
)CUDA" + seed_source("grid_sample.py", 1) + R"CUDA(
}
extern "C" __global__ void alloy_kernel_main(const ELEM* __restrict__ x, const int* __restrict__ x_shape,
    const ELEM* __restrict__ grid, const int* __restrict__ grid_shape, const ELEM* __restrict__ cotangent,
    ELEM* __restrict__ x_grad, ELEM* __restrict__ grid_grad, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  custom_kernel_grid_sample_grad<ELEM>(x, x_shape, grid, grid_shape, cotangent,
      reinterpret_cast<atomic<ELEM>*>(x_grad), reinterpret_cast<atomic<ELEM>*>(grid_grad),
      t.thread_position_in_grid, t.thread_index_in_simdgroup, t.threads_per_simdgroup);
}
)CUDA";
}

// Threadgroup reduction with barriers over a possibly partial threadgroup
// of a 2-D grid: out[group] = sum of inp over the group's threads; also each
// thread's threads_per_threadgroup product (to check the partial size).
inline constexpr const char* kThreadgroupReduce = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
#define MAX_TG 1024
ALLOY_KERNEL_FN void custom_kernel_tg_reduce(const float* inp, float* out, uint3 thread_position_in_grid,
    uint3 threadgroup_position_in_grid, uint3 threadgroups_per_grid, uint3 threads_per_grid,
    uint thread_index_in_threadgroup, uint3 threads_per_threadgroup) {
  ALLOY_THREADGROUP float partial[MAX_TG];
  uint n = threads_per_threadgroup.x * threads_per_threadgroup.y * threads_per_threadgroup.z;
  uint gid = thread_position_in_grid.x + threads_per_grid.x * thread_position_in_grid.y;
  partial[thread_index_in_threadgroup] = inp[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = 512; stride > 0; stride >>= 1) {
    if (thread_index_in_threadgroup < stride && thread_index_in_threadgroup + stride < n) {
      partial[thread_index_in_threadgroup] += partial[thread_index_in_threadgroup + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (thread_index_in_threadgroup == 0) {
    uint g = threadgroup_position_in_grid.x + threadgroups_per_grid.x * threadgroup_position_in_grid.y;
    out[g] = partial[0];
  }
}
extern "C" __global__ void alloy_kernel_main(const float* __restrict__ inp, float* __restrict__ out,
                                             alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  custom_kernel_tg_reduce(inp, out, t.thread_position_in_grid, t.threadgroup_position_in_grid,
                          t.threadgroups_per_grid, t.threads_per_grid, t.thread_index_in_threadgroup,
                          t.threads_per_threadgroup);
}
)CUDA";

// Every thread writes its 20 Metal attributes (38 uints) at its linear grid
// position: x + grid.x * (y + grid.y * z).
inline constexpr const char* kThreadIds = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
extern "C" __global__ void alloy_kernel_main(uint* __restrict__ out, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  uint3 p = t.thread_position_in_grid, g = t.threads_per_grid;
  uint* o = out + 38ul * (p.x + g.x * (p.y + g.y * p.z));
  uint3 v3[9] = {t.thread_position_in_grid, t.thread_position_in_threadgroup, t.threadgroup_position_in_grid,
                 t.threads_per_threadgroup, t.threads_per_grid, t.threadgroups_per_grid, t.grid_size,
                 t.grid_origin, t.dispatch_threads_per_threadgroup};
  for (int i = 0; i < 9; ++i) { o[3 * i] = v3[i].x; o[3 * i + 1] = v3[i].y; o[3 * i + 2] = v3[i].z; }
  uint v1[11] = {t.thread_index_in_threadgroup, t.thread_index_in_simdgroup, t.threads_per_simdgroup,
                 t.simdgroup_index_in_threadgroup, t.simdgroups_per_threadgroup,
                 t.dispatch_simdgroups_per_threadgroup, t.thread_execution_width, t.thread_index_in_quadgroup,
                 t.quadgroup_index_in_threadgroup, t.quadgroups_per_threadgroup,
                 t.dispatch_quadgroups_per_threadgroup};
  for (int i = 0; i < 11; ++i) o[27 + i] = v1[i];
}
)CUDA";

// Every SIMD-group and quad-group function, on a 1-D grid whose last
// threadgroup (and its last SIMD group) is partial. Thread g writes
// kSimdOutputs floats at fo[g * kSimdOutputs] and as many ints at io[...].
// Inputs: f[g] small integers (exact sums), p[g] in {1, 2, -1} (exact
// products), u[g] random bits.
inline constexpr int kSimdOutputs = 40;
inline constexpr const char* kSimdFunctions = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
ALLOY_KERNEL_FN void custom_kernel_simd(const float* f, const float* p, const uint* u, float* fo, int* io,
                                        uint3 thread_position_in_grid, uint thread_index_in_simdgroup) {
  uint g = thread_position_in_grid.x;
  uint lane = thread_index_in_simdgroup;
  float x = f[g], q = p[g];
  uint b = u[g];
  int k = int(b % 1000u) - 500;
  float* F = fo + g * 40;
  int* I = io + g * 40;
  F[0] = simd_sum(x);
  F[1] = simd_product(q);
  F[2] = simd_min(x);
  F[3] = simd_max(x);
  F[4] = simd_prefix_inclusive_sum(x);
  F[5] = simd_prefix_exclusive_sum(x);
  F[6] = simd_prefix_inclusive_product(q);
  F[7] = simd_prefix_exclusive_product(q);
  F[8] = simd_shuffle(x, (lane * 7u + 3u) % 32u);
  F[9] = simd_broadcast(x, 0u);
  F[10] = simd_broadcast_first(x);
  F[11] = simd_shuffle_up(x, 3u);
  F[12] = simd_shuffle_down(x, 3u);
  F[13] = simd_shuffle_xor(x, 5u);
  F[14] = simd_shuffle_rotate_up(x, 5u);
  F[15] = simd_shuffle_rotate_down(x, 5u);
  F[16] = simd_shuffle_and_fill_up(x, -x, 2u, 8u);
  F[17] = simd_shuffle_and_fill_down(x, -x, 2u, 8u);
  F[18] = quad_sum(x);
  F[19] = quad_product(q);
  F[20] = quad_min(x);
  F[21] = quad_max(x);
  F[22] = quad_prefix_inclusive_sum(x);
  F[23] = quad_prefix_exclusive_sum(x);
  F[24] = quad_shuffle(x, 0u);
  F[25] = quad_broadcast(x, 0u);
  F[26] = quad_shuffle_up(x, 1u);
  F[27] = quad_shuffle_down(x, 1u);
  F[28] = quad_shuffle_xor(x, 1u);
  F[29] = quad_shuffle_rotate_down(x, 1u);
  F[30] = float(simd_sum(half(x)));
  float4 v = simd_sum(float4(x, 2.0f * x, q, 1.0f));
  F[31] = v.x; F[32] = v.y; F[33] = v.z; F[34] = v.w;
  F[35] = float(simd_sum(bfloat(x)));
  F[36] = float(simd_shuffle_down(half(x), 1u));
  F[37] = quad_prefix_exclusive_product(q);
  F[38] = quad_broadcast_first(x);
  F[39] = simd_shuffle_rotate_up(x, 37u);

  I[0] = simd_sum(k);
  I[1] = int(simd_sum(b));
  I[2] = simd_min(k);
  I[3] = simd_max(k);
  I[4] = int(simd_min(b));
  I[5] = int(simd_max(b));
  I[6] = int(simd_and(b));
  I[7] = int(simd_or(b));
  I[8] = int(simd_xor(b));
  simd_vote vote = simd_ballot((b & 1u) != 0u);
  I[9] = int(uint64_t(vote) & 0xffffffffu);
  I[10] = int(uint64_t(vote) >> 32);
  I[11] = simd_all(k > -1000) ? 1 : 0;
  I[12] = simd_any(k > 400) ? 1 : 0;
  I[13] = simd_is_first() ? 1 : 0;
  long wide = (long(k) << 33) + long(b);
  long sw = simd_shuffle_xor(wide, 1u);
  I[14] = int(sw >> 33);
  I[15] = int(uint(sw & 0x1ffffffffl) & 0xffffffffu);
  I[16] = simd_shuffle_down((b & 2u) != 0u, 2u) ? 1 : 0;
  I[17] = quad_sum(k);
  I[18] = int(quad_and(b));
  I[19] = int(quad_or(b));
  I[20] = int(uint8_t(quad_ballot((b & 1u) != 0u)));
  I[21] = quad_all((b & 1u) != 0u) ? 1 : 0;
  I[22] = quad_any((b & 1u) != 0u) ? 1 : 0;
  I[23] = quad_is_first() ? 1 : 0;
  I[24] = simd_prefix_inclusive_sum(k);
  I[25] = simd_prefix_exclusive_sum(k);
  I[26] = int(simd_sum(short(k)));
  I[27] = int(simd_max(uchar(b)));
  I[28] = simd_active_threads_mask().all() ? 1 : 0;
  I[29] = int(uint64_t(simd_active_threads_mask()));
  for (int j = 30; j < 40; ++j) I[j] = 0;
}
extern "C" __global__ void alloy_kernel_main(const float* __restrict__ f, const float* __restrict__ p,
    const uint* __restrict__ u, float* __restrict__ fo, int* __restrict__ io, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  custom_kernel_simd(f, p, u, fo, io, t.thread_position_in_grid, t.thread_index_in_simdgroup);
}
)CUDA";

// Atomics on atomic<T> outputs and on plain storage cast to atomic types.
// Thread g (of n) does, with v = u[g]:
//   ih[g % 4] += 1 (half), ib[g % 4] += 1 (bfloat), old values to oh/ob;
//   iacc[0] += 1 (int, via a compare_exchange_weak loop), iacc[1] = min,
//   iacc[2] = max (of int(v % 100000) - 50000), iacc[3] &= v, iacc[4] |= v,
//   iacc[5] ^= v, iacc[6] fetch_sub 3, uacc[0] min, uacc[1] max of v;
//   facc[0] += float(g % 7) (exact), facc[1] min, facc[2] max of f[g];
//   xchg: exchange g into slot[g % 8] and record the old value in olds[g];
//   ul[0] += v (ulong), and a threadgroup atomic_int counter per group.
inline constexpr const char* kAtomics = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
ALLOY_KERNEL_FN void custom_kernel_atomics(const uint* u, const float* f, atomic<half>* ih, atomic<bfloat>* ib,
    half* oh, bfloat* ob, int* iacc, uint* uacc, float* facc, int* slot, int* olds, ulong* ul, int* group_counts,
    uint3 thread_position_in_grid, uint thread_index_in_threadgroup, uint3 threadgroup_position_in_grid) {
  uint g = thread_position_in_grid.x;
  uint v = u[g];
  ALLOY_THREADGROUP atomic_int counter;
  if (thread_index_in_threadgroup == 0) atomic_store_explicit(&counter, 0, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);

  oh[g] = atomic_fetch_add_explicit(&ih[g % 4], half(1), memory_order_relaxed);
  ob[g] = atomic_fetch_add_explicit(&ib[g % 4], bfloat(1), memory_order_relaxed);

  atomic_int* ia = (atomic_int*)iacc;
  int expected = atomic_load_explicit(&ia[0], memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&ia[0], &expected, expected + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  int s = int(v % 100000u) - 50000;
  atomic_fetch_min_explicit(&ia[1], s, memory_order_relaxed);
  atomic_fetch_max_explicit(&ia[2], s, memory_order_relaxed);
  atomic_fetch_and_explicit(&ia[3], int(v | 0x80000000u), memory_order_relaxed);
  atomic_fetch_or_explicit(&ia[4], int(v & 0x0f0f0f0fu), memory_order_relaxed);
  atomic_fetch_xor_explicit(&ia[5], int(v), memory_order_relaxed);
  atomic_fetch_sub_explicit(&ia[6], 3, memory_order_relaxed);
  atomic_uint* ua = (atomic_uint*)uacc;
  atomic_fetch_min_explicit(&ua[0], v, memory_order_relaxed);
  atomic_fetch_max_explicit(&ua[1], v, memory_order_relaxed);
  atomic_float* fa = (atomic_float*)facc;
  atomic_fetch_add_explicit(&fa[0], float(g % 7u), memory_order_relaxed);
  atomic_fetch_min_explicit(&fa[1], f[g], memory_order_relaxed);
  atomic_fetch_max_explicit(&fa[2], f[g], memory_order_relaxed);
  olds[g] = atomic_exchange_explicit((atomic_int*)&slot[g % 8u], int(g), memory_order_relaxed);
  atomic_fetch_add_explicit((atomic_ulong*)ul, ulong(v), memory_order_relaxed);

  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (thread_index_in_threadgroup == 0)
    group_counts[threadgroup_position_in_grid.x] = atomic_load_explicit(&counter, memory_order_relaxed);
}
extern "C" __global__ void alloy_kernel_main(const uint* __restrict__ u, const float* __restrict__ f,
    half* ih, bfloat* ib, half* oh, bfloat* ob, int* iacc, uint* uacc, float* facc, int* slot, int* olds,
    ulong* ul, int* group_counts, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  custom_kernel_atomics(u, f, reinterpret_cast<atomic<half>*>(ih), reinterpret_cast<atomic<bfloat>*>(ib), oh, ob,
                        iacc, uacc, facc, slot, olds, ul, group_counts, t.thread_position_in_grid,
                        t.thread_index_in_threadgroup, t.threadgroup_position_in_grid);
}
)CUDA";

// simdgroup_matrix: one SIMD group per threadgroup; group 0 does half, 1
// float, 2 bfloat, 3 half inputs with a float accumulator. Each computes
// D = A * B + C with A loaded transposed from a stride-12 buffer at origin
// (2, 1), B and C plain; D stored to d + 64 * group. Also each lane's
// thread_elements() of A go to te[group * 64 + lane * 2 ..].
inline constexpr const char* kSimdgroupMatrix = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
template <typename TI, typename TA>
METAL_FUNC void run(const float* a, const float* b, const float* c, float* d, float* te, uint lane) {
  ALLOY_THREADGROUP TI sa[12 * 10];
  ALLOY_THREADGROUP TI sb[64];
  ALLOY_THREADGROUP TA sc[64];
  for (uint i = lane; i < 120; i += 32) sa[i] = TI(a[i]);
  for (uint i = lane; i < 64; i += 32) { sb[i] = TI(b[i]); sc[i] = TA(c[i]); }
  simdgroup_barrier(mem_flags::mem_threadgroup);
  simdgroup_matrix<TI, 8, 8> A, B;
  simdgroup_matrix<TA, 8, 8> C, D;
  simdgroup_load(A, sa, 12, ulong2(2, 1), true);
  simdgroup_load(B, sb);
  simdgroup_load(C, sc, 8);
  simdgroup_multiply_accumulate(D, A, B, C);
  ALLOY_THREADGROUP TA sd[64];
  simdgroup_store(D, sd);
  simdgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = lane; i < 64; i += 32) d[i] = float(sd[i]);
  te[lane * 2] = float(A.thread_elements()[0]);
  te[lane * 2 + 1] = float(A.thread_elements()[1]);
}
ALLOY_KERNEL_FN void custom_kernel_mma(const float* a, const float* b, const float* c, float* d, float* te,
                                       uint3 threadgroup_position_in_grid, uint thread_index_in_simdgroup) {
  uint g = threadgroup_position_in_grid.x;
  uint lane = thread_index_in_simdgroup;
  if (g == 0) run<half, half>(a, b, c, d, te, lane);
  if (g == 1) run<float, float>(a, b, c, d + 64, te + 64, lane);
  if (g == 2) run<bfloat, bfloat>(a, b, c, d + 128, te + 128, lane);
  if (g == 3) run<half, float>(a, b, c, d + 192, te + 192, lane);
}
extern "C" __global__ void alloy_kernel_main(const float* __restrict__ a, const float* __restrict__ b,
    const float* __restrict__ c, float* __restrict__ d, float* __restrict__ te, alloy_msl::cuda::Dispatch dd) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(dd, t)) return;
  custom_kernel_mma(a, b, c, d, te, t.threadgroup_position_in_grid, t.thread_index_in_simdgroup);
}
)CUDA";

// Vectors, swizzles (as the translator spells them), half and bfloat
// arithmetic with Metal's promotions. Thread g reads x[4g..4g+3] and writes
// 16 floats at out[16 g].
inline constexpr const char* kVectorsAndHalf = R"CUDA(
#include "metal_cuda.h"
using namespace metal;
ALLOY_KERNEL_FN void custom_kernel_vec(const float* x, const half* h, const bfloat* bf, float* out,
                                       uint3 thread_position_in_grid) {
  uint g = thread_position_in_grid.x;
  float4 v = float4(x[4 * g], x[4 * g + 1], x[4 * g + 2], x[4 * g + 3]);
  float2 a = v.template swizzle<3, 0>();
  v.template swizzle_ref<1, 2>() = a * 2.0f;
  float3 w = v.template swizzle<0, 1, 2>() + float3(1.0f);
  half hh = h[g];
  bfloat bb = bf[g];
  auto hf = hh * 2.0f;    // half * float -> float
  auto hi = hh + 1;       // half + int -> half
  auto bi = bb * 3;       // bfloat * int -> bfloat
  half sel = g % 2 == 0 ? ::alloy_msl::cond_arm<decltype(0)>(hh) : ::alloy_msl::cond_lit<decltype((hh))>(0);
  half4 hv = half4(hh) * half(0.5f);
  float* o = out + 16 * g;
  o[0] = v.x; o[1] = v.y; o[2] = v.z; o[3] = v.w;
  o[4] = w.x; o[5] = w.y; o[6] = w.z;
  o[7] = hf;
  o[8] = float(hi);
  o[9] = float(bi);
  o[10] = float(sel);
  o[11] = float(hv.w);
  o[12] = dot(v, float4(1.0f));
  o[13] = float(metal::exp(hh));
  o[14] = sizeof(hf) == 4 && sizeof(hi) == 2 && sizeof(bi) == 2 && sizeof(float3) == 16 ? 1.0f : 0.0f;
  o[15] = float(max(hh, half(0.25f)));
}
extern "C" __global__ void alloy_kernel_main(const float* __restrict__ x, const half* __restrict__ h,
    const bfloat* __restrict__ bf, float* __restrict__ out, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  custom_kernel_vec(x, h, bf, out, t.thread_position_in_grid);
}
)CUDA";

// Software (constant-evaluation) half rounding against the hardware's, per
// element of `in`: out[2i] = float->half agrees, out[2i+1] = half->float of
// bits i & 0xffff agrees.
inline constexpr const char* kHalfRounding = R"CUDA(
#include "metal_cuda.h"
extern "C" __global__ void alloy_kernel_main(const float* in, unsigned* out, alloy_msl::cuda::Dispatch d) {
  alloy_msl::ThreadIds t;
  if (!alloy_msl::cuda::thread_ids(d, t)) return;
  unsigned i = t.thread_position_in_grid.x;
  float f = in[i];
  unsigned short soft = metal::half_detail::float_to_half_bits(f), hard = metal::half(f).bits;
  float back_soft = metal::half_detail::half_bits_to_float((unsigned short)(i & 0xffffu));
  float back_hard = float(metal::half::from_bits((unsigned short)(i & 0xffffu)));
  bool both_nan = f != f && (soft & 0x7c00u) == 0x7c00u && (soft & 0x3ffu) && (hard & 0x7c00u) == 0x7c00u && (hard & 0x3ffu);
  out[2 * i] = soft == hard || both_nan ? 1u : 0u;
  out[2 * i + 1] = (__float_as_uint(back_soft) == __float_as_uint(back_hard) || (back_soft != back_soft && back_hard != back_hard)) ? 1u : 0u;
}
)CUDA";

}  // namespace alloy_test

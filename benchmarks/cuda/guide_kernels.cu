// The guide's kernels (seed 001) hand-written in CUDA: the same algorithm and
// launch shape as each Metal kernel in examples/guide/, for
// benchmarks/bench_guide.py to time against the Metal source run through
// mx.fast.metal_library. Written here (not translated): what a CUDA
// programmer would write for the same kernel. Launched by CuPy (RawModule).
#include <cuda_fp16.h>

#define GUIDE_INF __int_as_float(0x7f800000)

extern "C" __global__ void vector_add(const float* a, const float* b, float* out, unsigned n) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id < n) out[id] = a[id] + b[id];
}

extern "C" __global__ void add_f32_vec4(const float4* a, const float4* b, float4* out, unsigned n4) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id < n4) {
    float4 x = a[id], y = b[id];
    out[id] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
}

extern "C" __global__ void scaled_elu_f32(const float* x, float* out, float alpha, unsigned n) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id < n) {
    float v = x[id];
    out[id] = v > 0.0f ? v : alpha * (expf(v) - 1.0f);
  }
}

// memory_spaces_demo: through shared memory and back, one barrier.
extern "C" __global__ void memory_spaces_demo(const float* in, float* out, float scale, unsigned n) {
  extern __shared__ float tile[];
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  float v = gid < n ? in[gid] * scale : 0.0f;
  tile[threadIdx.x] = v;
  __syncthreads();
  if (gid < n) out[gid] = tile[threadIdx.x];
}

// softmax_kernel as the page writes it, with a block of 32 (one warp): warp
// max and sum, the same shared-memory passes over 8 slots.
__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
extern "C" __global__ void softmax_kernel(const float* input, float* output, unsigned n) {
  __shared__ float shmem[32];
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x, lid = threadIdx.x, lane = lid % 32;
  float val = gid < n ? input[gid] : -GUIDE_INF;
  shmem[lid] = val;
  __syncthreads();
  float row_max = warp_max(val);
  if (lane == 0) shmem[lid / 32] = row_max;
  __syncthreads();
  if (lid == 0)
    for (unsigned i = 1; i < 8; ++i) shmem[0] = fmaxf(shmem[0], shmem[i]);
  __syncthreads();
  row_max = shmem[0];
  float e = expf(val - row_max);
  float row_sum = warp_sum(e);
  if (lane == 0) shmem[lid / 32] = row_sum;
  __syncthreads();
  if (lid == 0)
    for (unsigned i = 1; i < 8; ++i) shmem[0] += shmem[i];
  __syncthreads();
  row_sum = shmem[0];
  if (gid < n) output[gid] = e / row_sum;
}

// matmul_tiled: 16x16 tiles in shared memory, one output per thread.
extern "C" __global__ void matmul_tiled(const float* A, const float* B, float* C, unsigned M, unsigned N, unsigned K) {
  __shared__ float tA[16 * 16], tB[16 * 16];
  unsigned row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.0f;
  for (unsigned t = 0; t < (K + 15) / 16; ++t) {
    unsigned ac = t * 16 + threadIdx.x, br = t * 16 + threadIdx.y;
    tA[threadIdx.y * 16 + threadIdx.x] = (row < M && ac < K) ? A[row * K + ac] : 0.0f;
    tB[threadIdx.y * 16 + threadIdx.x] = (br < K && col < N) ? B[br * N + col] : 0.0f;
    __syncthreads();
    for (unsigned k = 0; k < 16; ++k) acc += tA[threadIdx.y * 16 + k] * tB[k * 16 + threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

// column_via_transpose: a 32x33 tile, coalesced both ways.
extern "C" __global__ void column_via_transpose(const float* mat, float* out, unsigned N) {
  __shared__ float tile[32][33];
  unsigned lx = threadIdx.x, ly = threadIdx.y;
  tile[ly][lx] = mat[(blockIdx.y * 32 + ly) * N + blockIdx.x * 32 + lx];
  __syncthreads();
  out[(blockIdx.x * 32 + ly) * N + blockIdx.y * 32 + lx] = tile[lx][ly];
}

// flash_attention as the page writes it (K as V, one head, D <= 64): each
// thread a query, the block loads K tiles of 64 rows by warp lane.
extern "C" __global__ void flash_attention(const __half* Q, const __half* K, __half* Out, unsigned N, unsigned D,
                                           float scale) {
  extern __shared__ __half kv_tile[];
  unsigned q_idx = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
  if (q_idx >= N) return;
  float q[64], o[64] = {0};
  for (unsigned d = 0; d < D; ++d) q[d] = __half2float(Q[q_idx * D + d]);
  float m = -GUIDE_INF, s = 0.0f;
  for (unsigned kv_start = 0; kv_start < N; kv_start += 64) {
    unsigned kv_end = min(kv_start + 64, N);
    for (unsigned i = lane; i < (kv_end - kv_start) * D; i += 32) kv_tile[i] = K[(kv_start + i / D) * D + i % D];
    __syncthreads();
    for (unsigned j = kv_start; j < kv_end; ++j) {
      float score = 0.0f;
      for (unsigned d = 0; d < D; ++d) score += q[d] * __half2float(kv_tile[(j - kv_start) * D + d]);
      score *= scale;
      float m_new = fmaxf(m, score), e = expf(score - m_new), c = expf(m - m_new);
      s = c * s + e;
      for (unsigned d = 0; d < D; ++d) o[d] = c * o[d] + e * __half2float(kv_tile[(j - kv_start) * D + d]);
      m = m_new;
    }
    __syncthreads();
  }
  for (unsigned d = 0; d < D; ++d) Out[q_idx * D + d] = __float2half(o[d] / s);
}

// matmul_simdgroup (the fixed page kernel's algorithm and launch): one warp
// per 8x8 tile of C, K stepped by 8, A read with row stride N as the page
// does, half inputs and float accumulation. Written as CUDA programmers do:
// each lane loads its mma.sync m16n8k8 fragments straight from memory (A's
// rows 8-15 are zero), one tensor-core MMA per step.
extern "C" __global__ void matmul_simdgroup(const __half* A, const __half* B, float* C, unsigned M, unsigned N,
                                            unsigned K) {
  const unsigned lane = threadIdx.x, g = lane >> 2, t = lane & 3u;
  const unsigned row = blockIdx.y * 8u + g, col = blockIdx.x * 8u + g;
  float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;
  for (unsigned k = 0; k < K; k += 8) {
    const unsigned a0 = *reinterpret_cast<const unsigned*>(A + (size_t)row * N + k + 2u * t);
    const __half b_lo = B[(size_t)(k + 2u * t) * N + col], b_hi = B[(size_t)(k + 2u * t + 1u) * N + col];
    const unsigned b0 = (unsigned)__half_as_ushort(b_lo) | ((unsigned)__half_as_ushort(b_hi) << 16);
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a0), "r"(0u), "r"(b0), "f"(d0), "f"(d1), "f"(d2), "f"(d3));
  }
  float* out = C + (size_t)(blockIdx.y * 8u + g) * N + blockIdx.x * 8u + 2u * t;
  out[0] = d0;
  out[1] = d1;
}

// vector_add_half and binary_op<half, Add>: half in, half out, one element a thread.
extern "C" __global__ void vector_add_half(const __half* a, const __half* b, __half* out, unsigned n) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id < n) out[id] = __hadd(a[id], b[id]);
}

// binary_op<float, Mul> (binary_mul_f32); <float, Add> is vector_add.
extern "C" __global__ void binary_mul_f32(const float* a, const float* b, float* out, unsigned n) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id < n) out[id] = a[id] * b[id];
}

// scaled_elu_f16: half in and out, the arithmetic in float.
extern "C" __global__ void scaled_elu_f16(const __half* x, __half* out, float alpha, unsigned n) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id < n) {
    float v = __half2float(x[id]);
    out[id] = __float2half(v > 0.0f ? v : alpha * (expf(v) - 1.0f));
  }
}

// simd_reduce_sum: each warp's sum, written by its lane 0 at the warp's index.
extern "C" __global__ void simd_reduce_sum(const float* input, float* output, unsigned n) {
  unsigned gid = blockIdx.x * blockDim.x + threadIdx.x;
  float v = gid < n ? input[gid] : 0.0f;
  v = warp_sum(v);
  if (gid < n && threadIdx.x % 32 == 0) output[threadIdx.x / 32] = v;
}

// optimised_dot (the fixed page kernel): eight halves a thread in two 8-byte
// loads, float FMAs, the warp's sum written by every lane at its own index.
extern "C" __global__ void optimised_dot(const uint2* a, const uint2* b, float* c, unsigned threads) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f;
  if (id < threads) {
    for (unsigned i = 0; i < 2; ++i) {
      uint2 av = a[2 * id + i], bv = b[2 * id + i];
      const __half* ah = reinterpret_cast<const __half*>(&av);
      const __half* bh = reinterpret_cast<const __half*>(&bv);
      for (int k = 0; k < 4; ++k) acc = fmaf(__half2float(ah[k]), __half2float(bh[k]), acc);
    }
  }
  acc = warp_sum(acc);
  if (id < threads) c[id] = acc;
}

// silu_gate_fused (the fixed page kernel): four halves of each input a thread
// (8-byte loads), gate * silu(up) in float, stored as four halves.
extern "C" __global__ void silu_gate_fused(const uint2* gate, const uint2* up, uint2* out, unsigned threads) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= threads) return;
  uint2 g = gate[id], u = up[id], r;
  const __half* gh = reinterpret_cast<const __half*>(&g);
  const __half* uh = reinterpret_cast<const __half*>(&u);
  __half* rh = reinterpret_cast<__half*>(&r);
  for (int k = 0; k < 4; ++k) {
    float uf = __half2float(uh[k]);
    rh[k] = __float2half(__half2float(gh[k]) * (uf * (1.0f / (1.0f + expf(-uf)))));
  }
  out[id] = r;
}

// add_f16_vec8 (the fixed page kernel): two half4 (8-byte) pairs a thread.
extern "C" __global__ void add_f16_vec8(const uint2* a, const uint2* b, uint2* out, unsigned threads) {
  unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  if (id >= threads) return;
  for (unsigned i = 0; i < 2; ++i) {
    uint2 x = a[2 * id + i], y = b[2 * id + i], r;
    const __half2* xh = reinterpret_cast<const __half2*>(&x);
    const __half2* yh = reinterpret_cast<const __half2*>(&y);
    __half2* rh = reinterpret_cast<__half2*>(&r);
    rh[0] = __hadd2(xh[0], yh[0]);
    rh[1] = __hadd2(xh[1], yh[1]);
    out[2 * id + i] = r;
  }
}

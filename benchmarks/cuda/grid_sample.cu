// Hand-written CUDA of the seed's grid_sample kernels (same algorithm: one
// thread per output element; the backward pads channels to 32 and reduces
// the grid gradient across each warp before one atomic per warp). The peer
// that bench_gpu.py measures metal_kernel against.

__device__ __forceinline__ bool inside(int iy, int ix, int H, int W) {
  return iy >= 0 && iy <= H - 1 && ix >= 0 && ix <= W - 1;
}

extern "C" __global__ void grid_sample_fwd(const float* __restrict__ x, const float* __restrict__ grid,
                                           float* __restrict__ out, int H, int W, int C, int gH, int gW,
                                           unsigned total) {
  unsigned elem = blockIdx.x * blockDim.x + threadIdx.x;
  if (elem >= total) return;
  const int h_stride = W * C, b_stride = H * h_stride;
  const unsigned g = elem / C * 2;
  const float ix = ((grid[g] + 1) * W - 1) / 2, iy = ((grid[g + 1] + 1) * H - 1) / 2;
  const int x0 = floorf(ix), y0 = floorf(iy), x1 = x0 + 1, y1 = y0 + 1;
  const int base = elem / C / gH / gW * b_stride + elem % C;
  float v00 = inside(y0, x0, H, W) ? x[base + y0 * h_stride + x0 * C] : 0.f;
  float v01 = inside(y0, x1, H, W) ? x[base + y0 * h_stride + x1 * C] : 0.f;
  float v10 = inside(y1, x0, H, W) ? x[base + y1 * h_stride + x0 * C] : 0.f;
  float v11 = inside(y1, x1, H, W) ? x[base + y1 * h_stride + x1 * C] : 0.f;
  out[elem] = (x1 - ix) * (y1 - iy) * v00 + (ix - x0) * (y1 - iy) * v01 + (x1 - ix) * (iy - y0) * v10 +
              (ix - x0) * (iy - y0) * v11;
}

extern "C" __global__ void grid_sample_bwd(const float* __restrict__ x, const float* __restrict__ grid,
                                           const float* __restrict__ cot, float* x_grad, float* grid_grad,
                                           int H, int W, int C, int gH, int gW, unsigned total) {
  unsigned elem = blockIdx.x * blockDim.x + threadIdx.x;
  if (elem >= total) return;
  const int Cp = (C + 31) / 32 * 32;
  const int h_stride = W * C, b_stride = H * h_stride;
  const unsigned g = elem / Cp * 2;
  const float ix = ((grid[g] + 1) * W - 1) / 2, iy = ((grid[g + 1] + 1) * H - 1) / 2;
  const int x0 = floorf(ix), y0 = floorf(iy), x1 = x0 + 1, y1 = y0 + 1;
  const int c = elem % Cp;
  const int base = elem / Cp / gH / gW * b_stride + c;
  float gx = 0.f, gy = 0.f;
  if (c < C) {
    const float ct = cot[elem / Cp * C + c];
    if (inside(y0, x0, H, W)) {
      int o = base + y0 * h_stride + x0 * C;
      atomicAdd(x_grad + o, (x1 - ix) * (y1 - iy) * ct);
      gx -= x[o] * (y1 - iy) * ct; gy -= x[o] * (x1 - ix) * ct;
    }
    if (inside(y0, x1, H, W)) {
      int o = base + y0 * h_stride + x1 * C;
      atomicAdd(x_grad + o, (ix - x0) * (y1 - iy) * ct);
      gx += x[o] * (y1 - iy) * ct; gy -= x[o] * (ix - x0) * ct;
    }
    if (inside(y1, x0, H, W)) {
      int o = base + y1 * h_stride + x0 * C;
      atomicAdd(x_grad + o, (x1 - ix) * (iy - y0) * ct);
      gx -= x[o] * (iy - y0) * ct; gy += x[o] * (x1 - ix) * ct;
    }
    if (inside(y1, x1, H, W)) {
      int o = base + y1 * h_stride + x1 * C;
      atomicAdd(x_grad + o, (ix - x0) * (iy - y0) * ct);
      gx += x[o] * (iy - y0) * ct; gy += x[o] * (ix - x0) * ct;
    }
  }
  for (int s = 16; s > 0; s >>= 1) {
    gx += __shfl_xor_sync(0xffffffffu, gx, s);
    gy += __shfl_xor_sync(0xffffffffu, gy, s);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(grid_grad + g, gx * (W / 2));
    atomicAdd(grid_grad + g + 1, gy * (H / 2));
  }
}

extern "C" __global__ void exp_f32(const float* __restrict__ in, float* __restrict__ out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = expf(in[i]);
}

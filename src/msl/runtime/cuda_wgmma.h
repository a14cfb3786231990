// matmul2d on Hopper's warpgroup MMA (wgmma, sm_90a). Included by
// cuda_tensor_ops.h inside namespace detail::tc, after the staged path whose
// slabs and copies it shares.
//
// A threadgroup of whole warpgroups (4 SIMD groups each) whose operands the
// staged path would take (half or bfloat, K-major, inside the tensors; here
// K need only be a multiple of 8) skips the ldmatrix/mma.sync loop. The
// threadgroup copies slabs of 64 K elements (rows of 128 bytes) of both
// tiles into shared memory in Hopper's 128-byte swizzle (16-byte chunk c of
// row r stored at chunk c ^ r % 8, 8 rows to 1024 bytes), three stages deep,
// and wgmma reads both operands from the slab through descriptors: a warp
// issues a handful of instructions per slab instead of one ldmatrix per
// fragment and one mma per 16 x 8, and the next slab's MMAs are issued
// while this one's finish.
// Warpgroup w owns rows [w * BM / WG, (w + 1) * BM / WG) of the tile and all
// its columns, as m64 x n(64 or 128) x k16 instructions; the accumulators
// are laid out as mma.sync's (row r % 8 + 8 h of 16, columns 2 (lane % 4)),
// one 16-row band per warp.
#pragma once

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ALLOY_WGMMA_REGS32 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define ALLOY_WGMMA_ACC32 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define ALLOY_WGMMA_REGS64 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "\
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "\
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "\
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define ALLOY_WGMMA_ACC64 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// A shared-memory operand of K-major rows of 128 bytes in the 128-byte
// swizzle: start address, leading byte offset 16 (unused when the swizzle
// spans the instruction's K), 1024 bytes from one 8-row group to the next,
// swizzle mode 1.
ALLOY_FUNC uint64_t wgmma_operand(unsigned shared_byte) {
  return uint64_t((shared_byte & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

// One wgmma of SHAPE on TYPE operands into the accumulators ACC (listed as
// REGS), descriptors a and b, accumulating (scale-d 1), no transposes.
// A, B and P are the operand numbers of a, b and the scale-d flag.
#define ALLOY_WGMMA_ASM(SHAPE, TYPE, REGS, ACC, A, B, P)                                                 \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" P ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." \
               TYPE "." TYPE " " REGS ", %" A ", %" B ", p, 1, 1, 0, 0;\n}\n"                          \
               : ACC                                                                                    \
               : "l"(a), "l"(b), "r"(1))

// d (+)= A (64 x 16) * B (16 x N) for N = 64 or 128; Kind 1 half, 2 bfloat.
template <int Kind, int N> ALLOY_FUNC void wgmma(float (&d)[N / 2], uint64_t a, uint64_t b) {
  if constexpr (N == 64 && Kind == 1)
    ALLOY_WGMMA_ASM("m64n64k16", "f16", ALLOY_WGMMA_REGS32, ALLOY_WGMMA_ACC32, "32", "33", "34");
  else if constexpr (N == 64 && Kind == 2)
    ALLOY_WGMMA_ASM("m64n64k16", "bf16", ALLOY_WGMMA_REGS32, ALLOY_WGMMA_ACC32, "32", "33", "34");
  else if constexpr (N == 128 && Kind == 1)
    ALLOY_WGMMA_ASM("m64n128k16", "f16", ALLOY_WGMMA_REGS64, ALLOY_WGMMA_ACC64, "64", "65", "66");
  else if constexpr (N == 128 && Kind == 2)
    ALLOY_WGMMA_ASM("m64n128k16", "bf16", ALLOY_WGMMA_REGS64, ALLOY_WGMMA_ACC64, "64", "65", "66");
}

// Which tiles the warpgroups take: NW a multiple of 4, K-major operands of
// half or bfloat, whole m64 instructions per warpgroup, N a multiple of 64
// and at most 128 accumulators a thread.
template <matmul2d_descriptor Desc, int NW, int Kind> struct warpgroup_shape {
  static constexpr int WG = NW / 4;
  static constexpr int ROWS = WG > 0 ? Desc.m / WG : 0;  // a warpgroup's rows
  static constexpr int MI = ROWS / 64;                   // its m64 instructions
  static constexpr int NI = Desc.n % 128 == 0 ? 128 : 64;
  static constexpr int NJ = Desc.n / NI;
  static constexpr int ROW = 128;  // bytes of K a slab holds
  static constexpr int SLAB = (Desc.m + Desc.n) * ROW;
  // Three stages: two slabs in flight while the tensor cores work on one.
  static constexpr int STAGES = 3;
  static constexpr bool ok = (Kind == 1 || Kind == 2) && NW % 4 == 0 && !Desc.transpose_left &&
                             Desc.transpose_right && ROWS % 64 == 0 && MI > 0 && Desc.n % 64 == 0 &&
                             MI * NJ * NI / 2 <= 128 && STAGES * SLAB <= 200 * 1024;
};

// The whole tile on the warpgroups, epilogue included; false when the launch
// does not qualify (the caller then reads the operands from the tensors).
template <matmul2d_descriptor Desc, int NW, int Kind, class AV, class BV, class DT>
ALLOY_FUNC bool warpgroup_tile(const AV& A, const BV& B, long K, unsigned tid, unsigned count, DT& dest) {
  typedef warpgroup_shape<Desc, NW, Kind> W;
  constexpr int BM = Desc.m, E = 2, S = 32 * NW, ST = W::STAGES, SLAB = W::SLAB, ROW = W::ROW;
  constexpr int MI = W::MI, NJ = W::NJ, NI = W::NI;
  constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
  if (!staged_fits<BM, Desc.n, S, 16>(A, B, K, count)) return false;
  // Static shared memory: for sm_90a ptxas takes more than 48 KB of it.
  const unsigned stages = shared_address(stage_memory<ST * SLAB>());
  const slab_copy<BM, Desc.n, S, ROW> copy(A.data, A.s_o * E, B.data, B.s_o * E, K * E, tid);
  const int wg = int(tid) / 128;
  float acc[MI][NJ][NI / 2];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int e = 0; e < NI / 2; ++e) acc[i][j][e] = 0.0f;

  // Slab s goes to stage s % ST. Every step commits one copy group (empty
  // past the end), so "all but ST - 2 groups done" means slab ks is in. The
  // last slab's chunks past K are zeros.
  const long slabs_k = (K * E + ROW - 1) / ROW;
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < slabs_k) copy.issue(stages + unsigned(s) * SLAB, long(s) * ROW);
    else asm volatile("cp.async.commit_group;");
  }
  for (long ks = 0; ks < slabs_k; ++ks) {
    asm volatile("cp.async.wait_group %0;" ::"n"(ST - 2));
    // cp.async wrote through the generic proxy; wgmma reads through the async one.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const unsigned base = stages + unsigned(ks % ST) * SLAB;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < ROW / 32; ++kk)  // k16 steps: 32 bytes of each row
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
          wgmma<Kind, NI>(acc[i][j], wgmma_operand(base + (wg * W::ROWS + i * 64) * ROW + kk * 32),
                          wgmma_operand(base + (BM + j * NI) * ROW + kk * 32));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    // The previous slab's MMAs are done (this one's may still run), so its
    // stage, the next copy's, is free once every warp is past here (each
    // warp waits for its own share of a warpgroup's MMA).
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    __syncthreads();
    const long next = ks + ST - 1;
    if (next < slabs_k) copy.issue(stages + unsigned(next % ST) * SLAB, next * ROW);
    else asm volatile("cp.async.commit_group;");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");

  // Register e of an n-block: row (lane / 4) + 8 ((e / 2) % 2) of this
  // warp's 16, column 8 (e / 4) + 2 (lane % 4) + e % 2.
  const int warp = (int(tid) % 128) / 32, lane = int(tid) % 32;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int e = 0; e < NI / 2; ++e) {
        const long m = wg * W::ROWS + i * 64 + warp * 16 + (lane >> 2) + 8 * ((e >> 1) & 1);
        const long n = j * NI + 8 * (e >> 2) + 2 * (lane & 3) + (e & 1);
        store_result<accumulate>(dest, m, n, acc[i][j][e]);
      }
  return true;
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

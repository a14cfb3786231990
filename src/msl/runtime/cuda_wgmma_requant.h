// MX FP8 matmul2d tiles with relaxed precision on Hopper's FP8 warpgroup
// MMA at its own rate. Included by cuda_wgmma.h (sm_90a only), after the
// per-block path (warpgroup_tile) and the decoded one, whose slabs, scales
// and row offsets it shares.
//
// Why: both exact paths pay for MX's per-block scales: the per-block path
// with two FP32 instructions per accumulator per 32 of K (four times the
// issue slots of the block's MMAs), the decoded path with the half MMA's
// rate (half the FP8 rate). When the descriptor allows relaxed precision,
// each row's block scales are folded into its codes instead, and the MMAs
// run on FP8 codes as they are, four blocks at a time.
//
// What changes in the numbers (relaxed_precision's licence): a code of a
// block with scale e, in a row whose largest block scale is R, becomes the
// FP8 code nearest code * 2^(e - R). That is exact while the product stays
// in the format's normal range; below it the code rounds to the subnormal
// grid, an error of at most half the smallest subnormal (2^-10 for E4M3,
// 2^-17 for E5M2) times 2^(R - 127), the row's largest block scale. Then
// the FP8 MMA sums a slab of 128 K (four blocks) in its own accumulator
// (about 14 bits kept: sums land on a grid of 2^-13 of their magnitude)
// before the slab is added into float; the exact paths add every 32.
//
// How: slabs of 128 bytes of K arrive by cp.async STAGES deep (the
// per-block path's layout: A's rows then B's, 128-byte swizzle). Trip ks
// issues slab ks's MMAs into a fresh accumulator and the copy of a later
// slab; while they run, each thread rewrites its rows of slab ks + 1 in
// place (rows whose blocks all have e == R are left as they are; the
// others' codes are decoded a pair at a time to half, multiplied by 2^(e - R) as a half pair
// and rounded back to FP8, all exact but the last step); then the slab's
// sum is added into the float result. The epilogue multiplies element
// (m, n) by 2^(R_m - 127) 2^(R_n - 127). A tile where some row's scales
// spread wider than -D_LO octaves (past it the half in between would round
// too) or hold the NaN code returns false, and the exact paths run.
#pragma once

// Four FP8 codes (one word) times the half pair `factor`, rounded back to
// the format (saturating: the factor is at most 1, so nothing finite grows).
template <int Kind> ALLOY_FUNC uint32_t requant4(uint32_t w, uint32_t factor) {
  uint32_t d;
  if constexpr (Kind == 3)
    asm("{\n.reg .b16 l, h, ol, oh;\n.reg .b32 fl, fh;\nmov.b32 {l, h}, %1;\n"
        "cvt.rn.f16x2.e4m3x2 fl, l;\ncvt.rn.f16x2.e4m3x2 fh, h;\n"
        "mul.rn.f16x2 fl, fl, %2;\nmul.rn.f16x2 fh, fh, %2;\n"
        "cvt.rn.satfinite.e4m3x2.f16x2 ol, fl;\ncvt.rn.satfinite.e4m3x2.f16x2 oh, fh;\n"
        "mov.b32 %0, {ol, oh};\n}"
        : "=r"(d)
        : "r"(w), "r"(factor));
  else
    asm("{\n.reg .b16 l, h, ol, oh;\n.reg .b32 fl, fh;\nmov.b32 {l, h}, %1;\n"
        "cvt.rn.f16x2.e5m2x2 fl, l;\ncvt.rn.f16x2.e5m2x2 fh, h;\n"
        "mul.rn.f16x2 fl, fl, %2;\nmul.rn.f16x2 fh, fh, %2;\n"
        "cvt.rn.satfinite.e5m2x2.f16x2 ol, fl;\ncvt.rn.satfinite.e5m2x2.f16x2 oh, fh;\n"
        "mov.b32 %0, {ol, oh};\n}"
        : "=r"(d)
        : "r"(w), "r"(factor));
  return d;
}

// This thread's rows of the slab at `slab` (its rows tid + p S, each 128
// bytes in the 128-byte swizzle) rewritten in place: the codes of block b
// times 2^(e_b - R) for the block's scale e_b (byte b of the row's word of
// scale_words) and the row's
// offset R; then made visible to wgmma's proxy. A row's eight chunks are
// read first and written last, without branches between, so their
// latencies overlap (a block with e_b == R goes through unchanged: the
// round trip through half is exact); a row whose blocks all have e_b == R
// is left alone. (Skipping such blocks one by one measured slower: the
// branches kept the chunks' conversions from interleaving.)
template <int Kind, class Q, int ROWS, int S, int PER>
ALLOY_FUNC void requant_slab(unsigned char* slab, const uint32_t (&scale_words)[PER], const int (&offset)[PER],
                             unsigned tid) {
#pragma unroll
  for (int p = 0; p < PER; ++p) {
    const int r = int(tid) + p * S;
    if (r >= ROWS) continue;
    uint32_t factor[4];
    bool moves = false;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      // Blocks past K read scale 127 (their codes are zeros): clamped.
      const int e = int((scale_words[p] >> (8 * b)) & 0xffu);
      const int d = max(Q::D_LO, min(0, e - offset[p]));
      moves = moves || d != 0;
      factor[b] = uint32_t(d + 15) << 10;
      factor[b] |= factor[b] << 16;
    }
    if (!moves) continue;
    uint4* at[8];
    uint4 chunk[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      at[c] = reinterpret_cast<uint4*>(slab + r * 128 + ((c ^ (r & 7)) << 4));
      chunk[c] = *at[c];
    }
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const uint32_t f = factor[c >> 1];
      chunk[c].x = requant4<Kind>(chunk[c].x, f);
      chunk[c].y = requant4<Kind>(chunk[c].y, f);
      chunk[c].z = requant4<Kind>(chunk[c].z, f);
      chunk[c].w = requant4<Kind>(chunk[c].w, f);
    }
#pragma unroll
    for (int c = 0; c < 8; ++c) *at[c] = chunk[c];
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

template <matmul2d_descriptor Desc, int NW, int Kind, class LT, class RT, class AV, class BV, class DT>
ALLOY_FUNC bool warpgroup_tile_requant(const LT& left, const RT& right, const AV& A, const BV& B, long K,
                                       unsigned tid, unsigned count, DT& dest) {
  typedef requant_shape<Desc, NW, Kind, true> Q;
  typedef typename Q::W W;
  constexpr int BM = Desc.m, BN = Desc.n, S = 32 * NW, ROW = Q::ROW, SLAB = Q::SLAB, ST = Q::STAGES;
  constexpr int MI = W::MI, NJ = W::NJ, NI = W::NI;
  constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
  typedef slab_scales<BM, BN, S> Scales;
  constexpr int PER = Scales::PER;
  if (!staged_fits<BM, BN, S, 16>(A, B, K, count)) return false;
  unsigned char* memory = stage_memory<warpgroup_stage_bytes<Desc, NW, Kind, true>()>();
  const unsigned stages = shared_address(memory);
  short* const offsets = reinterpret_cast<short*>(memory + ST * SLAB);  // R of each row
  const slab_copy<BM, BN, S, ROW> copy(A.data, A.s_o, B.data, B.s_o, K, tid);
  const int wg = int(tid) / 128;
  Scales scales(left, right, K, tid);  // rows tid + p S: the rows this thread rewrites

  int offset[PER];
  if (!__syncthreads_and(row_offsets<Q, BM + BN, S>(scales, offsets, offset, tid))) return false;

  float acc[MI][NJ][NI / 2];
  float part[MI][NJ][NI / 2];  // one slab's sum, from the FP8 MMAs
  clear_tile(acc);

  // Slab s goes to stage s % ST. Slabs 0 .. ST - 2 are issued before the
  // loop and trip ks issues slab ks + ST - 1 (one copy group a trip, empty
  // past the end), into the stage of slab ks - 1, whose MMAs every warp
  // waited for before the trip's barrier. So at trip ks "all but ST - 3
  // groups done" means slab ks + 1 is in. Slab 0 is rewritten before the
  // loop; one barrier a trip.
  const long slabs_k = (K + ROW - 1) / ROW;
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < slabs_k) copy.issue(stages + unsigned(s) * SLAB, long(s) * ROW);
    else asm volatile("cp.async.commit_group;");
  }
  scales.load(0);
  asm volatile("cp.async.wait_group %0;" ::"n"(ST - 2) : "memory");
  __syncthreads();
  requant_slab<Kind, Q, BM + BN, S, PER>(memory, scales.next, offset, tid);
  if (slabs_k > 1) scales.load(1);
  int read_stage = 0, fill_stage = ST - 1;
  for (long ks = 0; ks < slabs_k; ++ks) {
    asm volatile("cp.async.wait_group %0;" ::"n"(ST - 3) : "memory");
    // Slab ks rewritten and fenced by every thread, slab ks + 1 in, and
    // every warp's MMAs of slab ks - 1 done.
    __syncthreads();
    const unsigned base = stages + unsigned(read_stage) * SLAB;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    wgmma_step<Kind, NI, false>(part, base, wg * W::ROWS, base, BM, 0);
#pragma unroll
    for (int kk = 1; kk < ROW / 32; ++kk) wgmma_step<Kind, NI, true>(part, base, wg * W::ROWS, base, BM, kk);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    if (ks + ST - 1 < slabs_k) copy.issue(stages + unsigned(fill_stage) * SLAB, (ks + ST - 1) * ROW);
    else asm volatile("cp.async.commit_group;");
    const int next_stage = read_stage == ST - 1 ? 0 : read_stage + 1;
    if (ks + 1 < slabs_k) {
      // Slab ks + 2's scale words are loaded before slab ks + 1 is
      // rewritten, so the load has a whole trip to arrive.
      uint32_t words[PER];
#pragma unroll
      for (int p = 0; p < PER; ++p) words[p] = scales.next[p];
      if (ks + 2 < slabs_k) scales.load(ks + 2);
      requant_slab<Kind, Q, BM + BN, S, PER>(memory + next_stage * SLAB, words, offset, tid);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < NI / 2; ++e) acc[i][j][e] += part[i][j][e];
    fill_stage = read_stage;
    read_stage = next_stage;
  }
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  store_warpgroup_tile<accumulate, W::ROWS>(acc, int(tid), dest, [&](long m, long n, float v) {
    return ldexpf(v, int(offsets[m]) + int(offsets[BM + n]) - 254);
  });
  return true;
}

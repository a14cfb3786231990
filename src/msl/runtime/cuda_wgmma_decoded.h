// FP8 matmul2d tiles decoded to half precision for Hopper's half wgmma.
// Included by cuda_wgmma.h (sm_90a only), after the per-block FP8 path and
// decoded_shape, whose layout comments this file follows.
//
// Why: the per-block path adds each 32-wide block's FP8 products into float
// with two FP32 instructions per accumulator element (the scale product and
// an FMA), four times the issue slots of the block's MMAs at the FP8 rate.
// Decoding costs one conversion and one multiply per two operand elements
// per tile instead, and the half MMA adds all of K in float exactly (no
// 13-bit FP8 sums). The price is the half MMA's rate (half the FP8 rate).
//
// How: before the loop each thread finds the smallest and largest block
// scale of its rows (the tile's M + N rows over all of K) and takes the row
// offset R = largest - D_HI; a threadgroup where some row's scales spread
// beyond D_HI - D_LO (or hold the NaN code) returns false and the caller
// runs the per-block path. In the loop FP8 slabs arrive by cp.async three
// stages deep; trip ks converts slab ks + 1 (each thread its rows: E4M3 or
// E5M2 pairs to half pairs by cvt, times 2^(e - R) as a half pair, exact)
// into half buffer (ks + 1) % 2 while the MMAs of buffer ks % 2 run. The
// epilogue multiplies element (m, n) by 2^(R_m - 127) 2^(R_n - 127).
#pragma once

// The FP8 pair in half H (0 low, 1 high) of w as a half pair; the halves
// are split in PTX, so ptxas reads the high one as an operand half rather
// than shifting it down first.
template <int Kind, int H> ALLOY_FUNC uint32_t fp8x2_to_f16x2(uint32_t w) {
  uint32_t d;
  if constexpr (Kind == 3 && H == 0)
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e4m3x2 %0, l;\n}" : "=r"(d) : "r"(w));
  else if constexpr (Kind == 3)
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e4m3x2 %0, h;\n}" : "=r"(d) : "r"(w));
  else if constexpr (H == 0)
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e5m2x2 %0, l;\n}" : "=r"(d) : "r"(w));
  else
    asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %1;\ncvt.rn.f16x2.e5m2x2 %0, h;\n}" : "=r"(d) : "r"(w));
  return d;
}

ALLOY_FUNC uint32_t mul_f16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// Each of this thread's rows (tid + p S, below ROWS) gets the offset R of
// its block scales (127 for an unscaled row), stored at offsets[row]; false
// when one of them spreads wider than D_LO..D_HI around it or holds the NaN
// code.
template <class D, int ROWS, int S, int PER, class Scales>
ALLOY_FUNC bool row_offsets(const Scales& scales, short* offsets, int (&offset)[PER], unsigned tid) {
  bool fits = true;
#pragma unroll
  for (int p = 0; p < PER; ++p) {
    const int r = int(tid) + p * S;
    offset[p] = 127;
    if (r >= ROWS) continue;
    uint32_t lo, hi;
    scales.range(p, lo, hi);
    fits = fits && hi != 0xffu && int(hi) - int(lo) <= D::D_HI - D::D_LO;
    if (scales.row_at[p]) offset[p] = int(hi) - D::D_HI;
    offsets[r] = short(offset[p]);
  }
  return fits;
}

// This thread's rows of the FP8 slab at src (ROW bytes a row, the 128-byte
// swizzle) into the two half-slabs at dst (HALF bytes apart, same rows),
// each code times 2^(e - R) for its block's scale e (from scales.next) and
// its row's offset; then made visible to wgmma's proxy.
template <int Kind, bool Scaled, class D, int ROWS, int S, int PER, int HALF, class Scales>
ALLOY_FUNC void decode_slab(const unsigned char* src, unsigned char* dst, const Scales& scales,
                            const int (&offset)[PER], unsigned tid) {
  constexpr int ROW = D::ROW;
#pragma unroll
  for (int p = 0; p < PER; ++p) {
    const int r = int(tid) + p * S;
    if (r >= ROWS) continue;
    // The row's eight 16-byte chunks (16 codes each, half a scale block)
    // read first, so the reads overlap.
    uint4 chunk[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) chunk[c] = *reinterpret_cast<const uint4*>(src + r * ROW + ((c ^ (r & 7)) << 4));
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const uint4 v = chunk[c];
      // 2^(e - R) as a half pair; blocks past K (zeros, scale byte 127)
      // are clamped into range.
      uint32_t factor = 0x3c003c00u;
      if constexpr (Scaled) {
        const int e = int((scales.next[p] >> (8 * (c >> 1))) & 0xffu);
        const int d = max(D::D_LO, min(D::D_HI, e - offset[p]));
        factor = uint32_t(d + 15) << 10;
        factor |= factor << 16;
      }
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
      uint32_t o[8];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        o[2 * q] = fp8x2_to_f16x2<Kind, 0>(w[q]);
        o[2 * q + 1] = fp8x2_to_f16x2<Kind, 1>(w[q]);
        if constexpr (Scaled) {
          o[2 * q] = mul_f16x2(o[2 * q], factor);
          o[2 * q + 1] = mul_f16x2(o[2 * q + 1], factor);
        }
      }
      // K 16 c .. 16 c + 15: half-slab c / 4, its chunks 2 (c % 4) and the next.
      unsigned char* row = dst + (c >> 2) * HALF + r * ROW;
      const int q0 = 2 * (c & 3);
      *reinterpret_cast<uint4*>(row + ((q0 ^ (r & 7)) << 4)) = uint4{o[0], o[1], o[2], o[3]};
      *reinterpret_cast<uint4*>(row + (((q0 + 1) ^ (r & 7)) << 4)) = uint4{o[4], o[5], o[6], o[7]};
    }
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

template <matmul2d_descriptor Desc, int NW, int Kind, class LT, class RT, class AV, class BV, class DT>
ALLOY_FUNC bool warpgroup_tile_decoded(const LT& left, const RT& right, const AV& A, const BV& B, long K,
                                       unsigned tid, unsigned count, DT& dest) {
  typedef decoded_shape<Desc, NW, Kind> D;
  typedef typename D::hw W;
  constexpr bool scaled = LT::scaled_ || RT::scaled_;
  constexpr int BM = Desc.m, BN = Desc.n, S = 32 * NW, ROW = D::ROW, RAW = D::RAW, HALF = D::HALF;
  constexpr int ST = D::RAW_STAGES, MI = W::MI, NJ = W::NJ, NI = W::NI;
  constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
  typedef slab_scales<BM, BN, S> Scales;
  constexpr int PER = Scales::PER;
  if (!staged_fits<BM, BN, S, 16>(A, B, K, count)) return false;
  unsigned char* memory = stage_memory<warpgroup_stage_bytes<Desc, NW, Kind, scaled>()>();
  const unsigned raw = shared_address(memory);
  unsigned char* const half_mem = memory + ST * RAW;  // two buffers of two half-slabs
  short* const offsets = reinterpret_cast<short*>(half_mem + 2 * 2 * HALF);  // R of each row
  const slab_copy<BM, BN, S, ROW> copy(A.data, A.s_o, B.data, B.s_o, K, tid);
  const int wg = int(tid) / 128;
  Scales scales(left, right, K, tid);  // rows tid + p S: the rows this thread converts

  // Each row's offset, and whether every row's scales fit around it.
  int offset[PER];
  if constexpr (scaled)
    if (!__syncthreads_and(row_offsets<D, BM + BN, S>(scales, offsets, offset, tid))) return false;

  float acc[MI][NJ][NI / 2];
  clear_tile(acc);
  auto convert = [&](int stage, int buf) {
    decode_slab<Kind, scaled, D, BM + BN, S, PER, HALF>(memory + stage * RAW, half_mem + buf * 2 * HALF, scales,
                                                        offset, tid);
  };

  // Slab s goes to FP8 stage s % ST; every trip commits one copy group
  // (empty past the end). Slab 0 is converted before the loop; trip ks
  // needs slab ks + 1 in: all but one group done.
  const long slabs_k = (K + ROW - 1) / ROW;
#pragma unroll
  for (int s = 0; s < ST; ++s) {
    if (s < slabs_k) copy.issue(raw + unsigned(s) * RAW, long(s) * ROW);
    else asm volatile("cp.async.commit_group;");
  }
  if constexpr (scaled) scales.load(0);
  asm volatile("cp.async.wait_group %0;" ::"n"(ST - 1));
  __syncthreads();
  convert(0, 0);
  if constexpr (scaled)
    if (slabs_k > 1) scales.load(1);
  int next_stage = 1, fill_stage = 0;  // slab ks + 1's stage; the stage slab ks + ST takes
  for (long ks = 0; ks < slabs_k; ++ks) {
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    __syncthreads();  // buffer ks % 2 converted and fenced; slab ks + 1 in
    const unsigned base = shared_address(half_mem) + unsigned(ks & 1) * 2 * HALF;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int kk = 0; kk < ROW / 32; ++kk)
        wgmma_step<1, NI, true>(acc, base + h * HALF, wg * W::ROWS, base + h * HALF, BM, kk);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    // Trip ks - 1's MMAs are done in every warp past the barrier: buffer
    // (ks + 1) % 2 is free; slab ks's FP8 stage was converted last trip.
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    __syncthreads();
    if (ks + ST < slabs_k) copy.issue(raw + unsigned(fill_stage) * RAW, (ks + ST) * ROW);
    else asm volatile("cp.async.commit_group;");
    if (ks + 1 < slabs_k) {
      convert(next_stage, int((ks + 1) & 1));
      if constexpr (scaled)
        if (ks + 2 < slabs_k) scales.load(ks + 2);
    }
    next_stage = next_stage == ST - 1 ? 0 : next_stage + 1;
    fill_stage = fill_stage == ST - 1 ? 0 : fill_stage + 1;
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  if constexpr (scaled) {
    store_warpgroup_tile<accumulate, W::ROWS>(acc, int(tid), dest, [&](long m, long n, float v) {
      return ldexpf(v, int(offsets[m]) + int(offsets[BM + n]) - 254);
    });
  } else {
    store_warpgroup_tile<accumulate, W::ROWS>(acc, int(tid), dest, [](long, long, float v) { return v; });
  }
  return true;
}

// FP8 (MX-scaled or plain) beside half, K-major, on whole warpgroups: the
// FP8 operand is decoded to half as above (its rows' offsets applied in the
// epilogue), the half operand is copied as it is into a ring of its own
// (three stages of two half-slabs), and the half wgmma reads each operand
// from its own buffer. Before this, such tiles ran on the TF32 path with
// every element converted as it was loaded (13 TFLOP/s at 8192^3).
template <matmul2d_descriptor Desc, int NW, class L, class R> struct mixed_decoded_shape {
  static constexpr bool fp8_left = is_fp8_v<L> && metal::is_same_v<R, half>;
  static constexpr bool fp8_right = is_fp8_v<R> && metal::is_same_v<L, half>;
  typedef metal::conditional_t<fp8_left, L, R> F;  // the FP8 format
  static constexpr int Kind = metal::is_same_v<F, metal::metal_fp8_e4m3_format> ? 3 : 4;
  typedef decoded_shape<Desc, NW, Kind> D;  // its offsets' range, and the half tiles' split
  static constexpr int ROW = 128, ST = 3;
  static constexpr int F_ROWS = fp8_left ? Desc.m : Desc.n, H_ROWS = fp8_left ? Desc.n : Desc.m;
  static constexpr int RAW = F_ROWS * ROW;     // an FP8 slab: 128 codes of K a row
  static constexpr int HALF_F = F_ROWS * ROW;  // a decoded half-slab: 64 halves of K a row
  static constexpr int HALF_H = H_ROWS * ROW;  // a half-slab of the half operand
  static constexpr int BYTES = ST * RAW + 2 * 2 * HALF_F + ST * 2 * HALF_H + 2 * F_ROWS;
  static constexpr bool ok = (fp8_left || fp8_right) && D::hw::ok && BYTES <= 224 * 1024;
};

template <bool First, class X, class Y> ALLOY_FUNC const auto& first_or_second(const X& x, const Y& y) {
  if constexpr (First) return x;
  else return y;
}

template <matmul2d_descriptor Desc, int NW, class LT, class RT, class AV, class BV, class DT>
ALLOY_FUNC bool warpgroup_tile_mixed(const LT& left, const RT& right, const AV& A, const BV& B, long K, unsigned tid,
                                     unsigned count, DT& dest) {
  typedef mixed_decoded_shape<Desc, NW, typename LT::value_type, typename RT::value_type> X;
  typedef typename X::D D;
  typedef typename D::hw W;
  constexpr bool FL = X::fp8_left;
  constexpr bool scaled = metal::conditional_t<FL, LT, RT>::scaled_;
  constexpr int S = 32 * NW, ROW = X::ROW, ST = X::ST, FR = X::F_ROWS, HR = X::H_ROWS;
  constexpr int RAW = X::RAW, HF = X::HALF_F, HH = X::HALF_H, MI = W::MI, NJ = W::NJ, NI = W::NI;
  constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
  typedef slab_scales<FR, 0, S> Scales;  // the FP8 operand's rows only
  constexpr int PER = Scales::PER;
  const auto& FV = first_or_second<FL>(A, B);  // the FP8 operand's view, and the half one's
  const auto& HV = first_or_second<!FL>(A, B);
  const auto& FT = first_or_second<FL>(left, right);
  // Whole tiles inside both operands, K contiguous, rows and starts 16-byte
  // aligned, K a multiple of 16; scale blocks starting on the slice.
  if (count != unsigned(S) || FV.s_k != 1 || HV.s_k != 1 || FV.s_o % 16 != 0 || (HV.s_o * 2) % 16 != 0 ||
      reinterpret_cast<unsigned long>(FV.data) % 16 != 0 || reinterpret_cast<unsigned long>(HV.data) % 16 != 0 ||
      FV.valid_o < FR || HV.valid_o < HR || K % 16 != 0 || FV.valid_k < K || HV.valid_k < K)
    return false;
  if constexpr (scaled)
    if (FT.scales_.origin0 % 32 != 0) return false;
  unsigned char* memory = stage_memory<X::BYTES>();
  const unsigned raw = shared_address(memory);
  unsigned char* const dec = memory + ST * RAW;  // two buffers of two decoded half-slabs
  const unsigned ring = shared_address(dec + 2 * 2 * HF);
  short* const offsets = reinterpret_cast<short*>(dec + 2 * 2 * HF + ST * 2 * HH);  // R of each FP8 row
  const slab_copy<FR, 0, S, ROW> fp8_copy(FV.data, FV.s_o, FV.data, 0, K, tid);
  const slab_copy<HR, 0, S, ROW> half_copy(HV.data, HV.s_o * 2, HV.data, 0, K * 2, tid);
  const int wg = int(tid) / 128;
  Scales scales(FT, FT, K, tid);

  int offset[PER];
  if constexpr (scaled)
    if (!__syncthreads_and(row_offsets<D, FR, S>(scales, offsets, offset, tid))) return false;

  float acc[MI][NJ][NI / 2];
  clear_tile(acc);
  // One copy group: FP8 slab f and half slab h (either past the end: none),
  // each into its ring's stage (slab % ST).
  const int slabs_k = int((K + ROW - 1) / ROW);
  auto issue = [&](int f, int h) {
    if (f < slabs_k) fp8_copy.issue(raw + unsigned(f % ST) * RAW, long(f) * ROW, false);
    if (h >= 0 && h < slabs_k) {
#pragma unroll
      for (int q = 0; q < 2; ++q)
        half_copy.issue(ring + unsigned(h % ST) * 2 * HH + q * HH, long(h) * 2 * ROW + q * ROW, false);
    }
    asm volatile("cp.async.commit_group;");
  };
  auto convert = [&](int f, int buf) {
    decode_slab<X::Kind, scaled, D, FR, S, PER, HF>(memory + (f % ST) * RAW, dec + buf * 2 * HF, scales, offset, tid);
  };

  // Group g holds FP8 slab g and half slab g - 1 (g >= 3; the first three:
  // slabs 0 and 1 of both, FP8 slab 2). Trip ks needs FP8 slab ks + 1 (to
  // convert) and half slab ks (to multiply): groups up to ks + 1, all but
  // the last issued. A stage is refilled once the trip that read it is done.
  issue(0, 0);
  issue(1, 1);
  issue(2, -1);
  if constexpr (scaled) scales.load(0);
  asm volatile("cp.async.wait_group 2;" ::: "memory");
  __syncthreads();
  convert(0, 0);
  if constexpr (scaled)
    if (slabs_k > 1) scales.load(1);
  for (int ks = 0; ks < slabs_k; ++ks) {
    asm volatile("cp.async.wait_group 1;" ::: "memory");
    // The half slab came by cp.async (the generic proxy); wgmma reads through the async one.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();  // buffer ks % 2 decoded and fenced; half slab ks and FP8 slab ks + 1 in
    const unsigned dec_base = shared_address(dec) + unsigned(ks & 1) * 2 * HF;
    const unsigned ring_base = ring + unsigned(ks % ST) * 2 * HH;
    const unsigned a_base = FL ? dec_base : ring_base, b_base = FL ? ring_base : dec_base;
    constexpr int A_HALF = FL ? HF : HH, B_HALF = FL ? HH : HF;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int kk = 0; kk < ROW / 32; ++kk)
        wgmma_step<1, NI, true>(acc, a_base + h * A_HALF, wg * W::ROWS, b_base + h * B_HALF, 0, kk);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    // Trip ks - 1's MMAs are done in every warp past the barrier: decoded
    // buffer (ks + 1) % 2 and half slab ks - 1's stage are free; FP8 slab
    // ks's stage was converted last trip.
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    __syncthreads();
    issue(ks + ST, ks + ST - 1);
    if (ks + 1 < slabs_k) {
      convert(ks + 1, (ks + 1) & 1);
      if constexpr (scaled)
        if (ks + 2 < slabs_k) scales.load(ks + 2);
    }
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  if constexpr (scaled) {
    store_warpgroup_tile<accumulate, W::ROWS>(acc, int(tid), dest, [&](long m, long n, float v) {
      return ldexpf(v, int(offsets[FL ? m : n]) - 127);
    });
  } else {
    store_warpgroup_tile<accumulate, W::ROWS>(acc, int(tid), dest, [](long, long, float v) { return v; });
  }
  return true;
}

// matmul2d on Hopper's warpgroup MMA (wgmma, sm_90a). Included by
// cuda_tensor_ops.h inside namespace detail::tc, after the staged path whose
// slabs and copies it shares.
//
// A threadgroup of whole warpgroups (4 SIMD groups each) whose operands the
// staged path would take (K-major, inside the tensors; here K need only be a
// multiple of 16 bytes) skips the ldmatrix/mma.sync loop: half and bfloat
// (k16 instructions), e4m3 and e5m2 (k32), FP8 with or without MX scales.
// The threadgroup copies slabs of 128 bytes of K (64 half or 128 FP8
// elements a row) of both tiles into shared memory in Hopper's 128-byte
// swizzle (16-byte chunk c of row r stored at chunk c ^ r % 8, 8 rows to
// 1024 bytes), three stages deep, and wgmma reads both operands from the
// slab through descriptors: a warp issues a handful of instructions per slab
// instead of one ldmatrix per fragment and one mma per 16 x 8, and the next
// slab's MMAs are issued while this one's finish.
// FP8: an FP8 instruction's 32 bytes of K are one MX scale block, and
// Hopper's FP8 MMA adds its products with about 14 bits kept (measured: sums
// land on a grid of 2^-13 of their magnitude), so each block's MMAs go into
// a fresh accumulator (scale-d 0), and the block before it, finished
// meanwhile, is added into the float result, times its row and column scales
// for MX operands (two such accumulators alternate). The rounding of one
// block's 32 products is then all that remains of the FP8 MMA's, as with
// cuBLASLt's FP8 GEMM without fast accumulation. The slab's scales are read a
// slab ahead into registers, then written to shared memory as floats, a
// thread's columns side by side. FP8 tiles whose scales allow are decoded to
// half instead (decoded_shape below, cuda_wgmma_decoded.h); this per-block
// path is their fallback.
// Warpgroup w owns rows [w * BM / WG, (w + 1) * BM / WG) of the tile and all
// its columns, as m64 x n(64 or 128) instructions; the accumulators are laid
// out as mma.sync's (row r % 8 + 8 h of 16, columns 2 (lane % 4)), one
// 16-row band per warp.
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
// REGS), descriptors a and b, adding to them (scale-d 1) when Accumulate,
// else overwriting them; TAIL ends the operands (16-bit types name their
// transposes, none; FP8 has none to name). A, B and P are the operand
// numbers of a, b and the scale-d flag.
#define ALLOY_WGMMA_ASM(SHAPE, TYPE, TAIL, REGS, ACC, A, B, P)                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" P ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." \
               TYPE "." TYPE " " REGS ", %" A ", %" B ", p, 1, 1" TAIL ";\n}\n"                        \
               : ACC                                                                                    \
               : "l"(a), "l"(b), "r"(int(Accumulate)))
#define ALLOY_WGMMA_N(K, TYPE, TAIL)                                                                       \
  if constexpr (N == 64)                                                                                   \
    ALLOY_WGMMA_ASM("m64n64" K, TYPE, TAIL, ALLOY_WGMMA_REGS32, ALLOY_WGMMA_ACC32, "32", "33", "34");      \
  else                                                                                                     \
    ALLOY_WGMMA_ASM("m64n128" K, TYPE, TAIL, ALLOY_WGMMA_REGS64, ALLOY_WGMMA_ACC64, "64", "65", "66")

// d (+)= A (64 x 32 bytes of K) * B (32 bytes of K x N) for N = 64 or 128:
// Kind 1 half and 2 bfloat (k16), 3 e4m3 and 4 e5m2 (k32).
template <int Kind, int N, bool Accumulate = true> ALLOY_FUNC void wgmma(float (&d)[N / 2], uint64_t a, uint64_t b) {
  static_assert(N == 64 || N == 128, "wgmma: n64 or n128");
  if constexpr (Kind == 1) {
    ALLOY_WGMMA_N("k16", "f16", ", 0, 0");
  } else if constexpr (Kind == 2) {
    ALLOY_WGMMA_N("k16", "bf16", ", 0, 0");
  } else if constexpr (Kind == 3) {
    ALLOY_WGMMA_N("k32", "e4m3", "");
  } else if constexpr (Kind == 4) {
    ALLOY_WGMMA_N("k32", "e5m2", "");
  }
}

// One 32-byte K step of a warpgroup's tile: its MI x NJ instructions into
// d (added to it, or overwriting it), A's rows of this warpgroup from row
// a_row of the slab at a_base and B's from row b_row of the slab at b_base
// (one slab holding both, or one each).
template <int Kind, int NI, bool Accumulate, int MI, int NJ>
ALLOY_FUNC void wgmma_step(float (&d)[MI][NJ][NI / 2], unsigned a_base, int a_row, unsigned b_base, int b_row,
                           int kk) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
      wgmma<Kind, NI, Accumulate>(d[i][j], wgmma_operand(a_base + (a_row + i * 64) * 128 + kk * 32),
                                  wgmma_operand(b_base + (b_row + j * NI) * 128 + kk * 32));
}

// Which tiles the warpgroups take: NW a multiple of 4, K-major operands of
// half, bfloat or FP8, whole m64 instructions per warpgroup, N a multiple
// of 64 and at most 128 accumulators a thread (FP8: 64, beside two blocks'
// own).
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
  static constexpr bool by_blocks = Kind >= 3;  // FP8: per-block accumulators (above)
  static constexpr bool ok = Kind >= 1 && Kind <= 4 && NW % 4 == 0 && !Desc.transpose_left &&
                             Desc.transpose_right && ROWS % 64 == 0 && MI > 0 && Desc.n % 64 == 0 &&
                             MI * NJ * NI / 2 <= (by_blocks ? 64 : 128) && STAGES * SLAB <= 200 * 1024;
};

// The float scales of MX operands for one slab of BM + BN rows (4 blocks of
// 32 along K), in shared memory: block kk's row scales of the left operand
// at [kk][row], then its column scales of the right operand permuted so
// that the BN / 4 columns a thread of the accumulator layout owns (8 q + 2 t
// + h for lane % 4 = t) lie side by side, each t's run padded by 4 floats
// against bank conflicts. Each thread carries PER rows: their 4 scale bytes
// are read into registers a slab before they are stored. Rows of an
// unscaled operand, and blocks past K, read 1.
template <int BM, int BN, int S> struct slab_scales {
  static constexpr int ROWS = BM + BN, PER = (ROWS + S - 1) / S;
  static constexpr int RUN = BN / 4 + 4;             // floats from one t's columns to the next's
  static constexpr int FLOATS = 4 * (BM + 4 * RUN);  // one slab
  const unsigned char* row_at[PER];                  // a row's scale of block 0 (null: unscaled)
  bool words;                                        // each row's scales of a slab: one aligned word
  long blocks;                                       // blocks of K
  uint32_t next[PER];
  unsigned tid;

  template <class LT, class RT> ALLOY_FUNC slab_scales(const LT& left, const RT& right, long K, unsigned t) : tid(t) {
    blocks = (K + 31) / 32;
    words = true;
#pragma unroll
    for (int p = 0; p < PER; ++p) {
      const int r = int(t) + p * S;
      row_at[p] = nullptr;
      if (r < BM) row_at[p] = rows_of(left, r);
      else if (r < ROWS) row_at[p] = rows_of(right, r - BM);
      if (row_at[p] && reinterpret_cast<unsigned long>(row_at[p]) % 4 != 0) words = false;
    }
  }
  // Where row r's scales start: the operand is K-major (dimension 0 is K),
  // its slice starts on a block's edge.
  template <class T> ALLOY_FUNC static const unsigned char* rows_of(const T& t, int r) {
    if constexpr (!T::scaled_) {
      return nullptr;
    } else {
      return reinterpret_cast<const unsigned char*>(t.scales_.scales) + t.scales_.origin0 / 32 +
             long(r) * long(t.scales_.strides[1]);
    }
  }
  // The scale bytes of slab ks (blocks 4 ks ...) into registers.
  ALLOY_FUNC void load(long ks) {
    const long b0 = 4 * ks;
#pragma unroll
    for (int p = 0; p < PER; ++p) {
      next[p] = 0x7f7f7f7fu;  // 2^0 each
      const unsigned char* at = row_at[p];
      if (!at) continue;
      if (words && b0 + 4 <= blocks) {
        next[p] = *reinterpret_cast<const uint32_t*>(at + b0);
      } else {
        for (int q = 0; q < 4; ++q)
          if (b0 + q < blocks) next[p] = (next[p] & ~(0xffu << (8 * q))) | (uint32_t(at[b0 + q]) << (8 * q));
      }
    }
  }
  // The smallest and the largest scale byte of row p's blocks over all of K
  // (127 for a row without scales).
  ALLOY_FUNC void range(int p, uint32_t& lo, uint32_t& hi) const {
    lo = hi = 127u;
    const unsigned char* at = row_at[p];
    if (!at) return;
    uint32_t low4 = 0xffffffffu, high4 = 0u;
    long b = 0;
    // Unrolled so that several loads are in flight (each waited for in turn
    // this took a tenth of an 8192^3 GEMM's time).
    if (reinterpret_cast<unsigned long>(at) % 16 == 0) {
#pragma unroll 4
      for (; b + 16 <= blocks; b += 16) {
        const uint4 w = *reinterpret_cast<const uint4*>(at + b);
        low4 = __vminu4(__vminu4(low4, w.x), __vminu4(w.y, __vminu4(w.z, w.w)));
        high4 = __vmaxu4(__vmaxu4(high4, w.x), __vmaxu4(w.y, __vmaxu4(w.z, w.w)));
      }
    }
    if (words) {
#pragma unroll 4
      for (; b + 4 <= blocks; b += 4) {
        const uint32_t w = *reinterpret_cast<const uint32_t*>(at + b);
        low4 = __vminu4(low4, w);
        high4 = __vmaxu4(high4, w);
      }
    }
    for (; b < blocks; ++b) {
      low4 = __vminu4(low4, 0xffffff00u | at[b]);
      high4 = __vmaxu4(high4, at[b]);
    }
    low4 = __vminu4(low4, low4 >> 16);
    high4 = __vmaxu4(high4, high4 >> 16);
    lo = min(low4 & 0xffu, (low4 >> 8) & 0xffu);
    hi = max(high4 & 0xffu, (high4 >> 8) & 0xffu);
  }
  // The loaded bytes into the slab's buffer, as floats.
  ALLOY_FUNC void store(float* buf) const {
#pragma unroll
    for (int p = 0; p < PER; ++p) {
      const int r = int(tid) + p * S;
      if (r >= ROWS) continue;
      int at, per_block;
      if (r < BM) {
        at = r;
        per_block = BM;
      } else {
        const int c = r - BM;
        at = 4 * BM + ((c >> 1) & 3) * RUN + 2 * (c >> 3) + (c & 1);
        per_block = 4 * RUN;
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        buf[at + kk * per_block] = float(metal::metal_fp8_ue8m0_format::from_bits(uint8_t(next[p] >> (8 * kk))));
      }
    }
  }
};

// FP8 tiles decoded to half precision in shared memory (cuda_wgmma_decoded.h):
// an FP8 slab of 128 bytes of K a row, three stages deep, turned into two
// half-slabs of 64 half elements, double-buffered, and each row's exponent
// offset. A row's block scales 2^(e - 127) become 2^(e - R) for the row's
// offset 2^(R - 127), applied to the result at the end: E4M3 codes times
// 2^d are exact halves for d in [-12, 6] (2^-9 * 2^-12 is a multiple of
// half's smallest step 2^-24; 448 * 2^6 < 65504), E5M2 codes for d in
// [-6, 0]. A tile whose rows' scales spread wider (or hold a NaN) takes the
// per-block path above.
template <matmul2d_descriptor Desc, int NW, int Kind> struct decoded_shape {
  typedef warpgroup_shape<Desc, NW, 1> hw;  // the half tiles' split
  static constexpr int ROW = 128;
  static constexpr int RAW = (Desc.m + Desc.n) * ROW;   // an FP8 slab: 128 of K
  static constexpr int HALF = (Desc.m + Desc.n) * ROW;  // a half-slab: 64 halves of K
  static constexpr int RAW_STAGES = 3;
  static constexpr int EXPS = (Desc.m + Desc.n) * 2;   // the rows' offsets R, as shorts
  static constexpr int BYTES = RAW_STAGES * RAW + 2 * 2 * HALF + EXPS;
  static constexpr int D_LO = Kind == 3 ? -12 : -6, D_HI = Kind == 3 ? 6 : 0;
  static constexpr bool ok = (Kind == 3 || Kind == 4) && hw::ok && BYTES - EXPS <= 224 * 1024;
};

// MX FP8 tiles with relaxed precision on the FP8 MMA, each row's block
// scales folded into its codes (cuda_wgmma_requant.h).
template <matmul2d_descriptor Desc, int NW, int Kind, bool Scaled> struct requant_shape {
  typedef warpgroup_shape<Desc, NW, Kind> W;  // the FP8 tiles' split (at most 64 accumulators a thread)
  static constexpr int ROW = 128, SLAB = W::SLAB;
  // Four stages: slab ks in the MMAs, ks + 1 being rewritten, two in flight.
  static constexpr int STAGES = 4;
  // Row offsets R (row_offsets() reads D_LO and D_HI): codes times 2^d for
  // d in [D_LO, 0]. E4M3's smallest code 2^-9 times 2^-14 and E5M2's 2^-16
  // times 2^-8 are still halves; 2^-14 is the smallest normal half factor.
  static constexpr int D_HI = 0, D_LO = Kind == 3 ? -14 : -8;
  static constexpr int BYTES = STAGES * SLAB + (Desc.m + Desc.n) * 2;
  static constexpr bool ok = Desc.relaxed_precision && Scaled && (Kind == 3 || Kind == 4) && W::ok &&
                             BYTES <= 224 * 1024;
};

// The static stage array the FP8 paths share (the relaxed one falls back to
// the decoded one, that to the per-block one, at run time): the largest of
// their sizes.
template <matmul2d_descriptor Desc, int NW, int Kind, bool Scaled> constexpr int warpgroup_stage_bytes() {
  typedef warpgroup_shape<Desc, NW, Kind> W;
  typedef decoded_shape<Desc, NW, Kind> D;
  const int per_block = W::ok ? W::STAGES * W::SLAB + (Scaled ? 2 * slab_scales<Desc.m, Desc.n, 32 * NW>::FLOATS * 4 : 0) : 0;
  const int decoded = D::ok ? D::BYTES : 0;
  const int requant = requant_shape<Desc, NW, Kind, Scaled>::ok ? requant_shape<Desc, NW, Kind, Scaled>::BYTES : 0;
  const int most = per_block > decoded ? per_block : decoded;
  return most > requant ? most : requant;
}

// Accumulators [MI][NJ][N] to 0.
template <int MI, int NJ, int N> ALLOY_FUNC void clear_tile(float (&acc)[MI][NJ][N]) {
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int e = 0; e < N; ++e) acc[i][j][e] = 0.0f;
}

// A warpgroup tile's accumulators into the destination, each through
// map(m, n, value): register e of an n-block is row (lane / 4) + 8 ((e / 2) % 2) of the warp's 16, column
// 8 (e / 4) + 2 (lane % 4) + e % 2.
template <bool Accumulate, int ROWS, int MI, int NJ, int HALF_NI, class DT, class Map>
ALLOY_FUNC void store_warpgroup_tile(const float (&acc)[MI][NJ][HALF_NI], int tid, DT& dest, const Map& map) {
  const int wg = tid / 128, warp = (tid % 128) / 32, lane = tid % 32;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int e = 0; e < HALF_NI; ++e) {
        const long m = wg * ROWS + i * 64 + warp * 16 + (lane >> 2) + 8 * ((e >> 1) & 1);
        const long n = j * 2 * HALF_NI + 8 * (e >> 2) + 2 * (lane & 3) + (e & 1);
        store_result<Accumulate>(dest, m, n, map(m, n, acc[i][j][e]));
      }
}

// The whole tile on the warpgroups, epilogue included; false when the launch
// does not qualify (the caller then reads the operands from the tensors).
template <matmul2d_descriptor Desc, int NW, int Kind, class LT, class RT, class AV, class BV, class DT>
ALLOY_FUNC bool warpgroup_tile(const LT& left, const RT& right, const AV& A, const BV& B, long K, unsigned tid,
                               unsigned count, DT& dest) {
  constexpr bool scaled = LT::scaled_ || RT::scaled_;
  typedef warpgroup_shape<Desc, NW, Kind> W;
  constexpr bool by_blocks = W::by_blocks;
  constexpr int BM = Desc.m, BN = Desc.n, E = Kind <= 2 ? 2 : 1, S = 32 * NW, ST = W::STAGES, SLAB = W::SLAB,
                ROW = W::ROW;
  constexpr int MI = W::MI, NJ = W::NJ, NI = W::NI;
  constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
  typedef slab_scales<BM, BN, S> Scales;
  if (!staged_fits<BM, BN, S, 16>(A, B, K, count)) return false;
  // Static shared memory: for sm_90a ptxas takes more than 48 KB of it. MX
  // operands add two slabs' scales (slab ks's in buffer ks % 2).
  unsigned char* memory = stage_memory<warpgroup_stage_bytes<Desc, NW, Kind, scaled>()>();
  const unsigned stages = shared_address(memory);
  const slab_copy<BM, BN, S, ROW> copy(A.data, A.s_o * E, B.data, B.s_o * E, K * E, tid);
  const int wg = int(tid) / 128, warp = (int(tid) % 128) / 32, lane = int(tid) % 32;
  float acc[MI][NJ][NI / 2];
  clear_tile(acc);

  // FP8: two blocks' own accumulators; MX: their scales.
  float part[2][MI][NJ][NI / 2];
  float* const scale_buf = reinterpret_cast<float*>(memory + ST * SLAB);
  Scales scales(left, right, K, tid);  // (nothing to read for unscaled operands)
  // Block kk's scales from shared memory: this thread's rows (sa) and its
  // columns, 8 q + 2 (lane % 4) + h of each n-block (sb, in that order).
  // The rows and the first EARLY columns are read before the wait for the
  // block's MMAs, so their latency hides behind it (all of them would take
  // more registers than are left), the rest while the first are used.
  constexpr int COLS = NJ * NI / 4, EARLY = COLS / 2;
  struct block_scales {
    float sa[MI][2];
    float sb[EARLY];
  };
  const int sb_at = 4 * BM + (lane & 3) * Scales::RUN;
  auto scales_of = [&](const float* sc, int kk) {
    block_scales b;
    if constexpr (scaled) {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          b.sa[i][h] = sc[kk * BM + wg * W::ROWS + i * 64 + warp * 16 + (lane >> 2) + 8 * h];
#pragma unroll
      for (int c = 0; c < EARLY; c += 4) {
        const float4 s4 = *reinterpret_cast<const float4*>(sc + sb_at + kk * 4 * Scales::RUN + c);
        b.sb[c] = s4.x;
        b.sb[c + 1] = s4.y;
        b.sb[c + 2] = s4.z;
        b.sb[c + 3] = s4.w;
      }
    }
    return b;
  };
  // The products of block kk of this slab (in part[kk % 2]), times their
  // scales, into acc. kk is a constant wherever this is called (unrolled),
  // so part stays in registers. Register e of an n-block is row 8 ((e / 2)
  // % 2) on and column 8 (e / 4) + e % 2 on: the thread's column 2 (e / 4)
  // + e % 2 of the n-block.
  auto add_block = [&](const float* sc, int kk, const block_scales& b) {
    float(&p)[MI][NJ][NI / 2] = part[kk % 2];
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int q = 0; q < NI / 8; q += 2) {  // two 8-column groups: four of the thread's columns
        const int c = 2 * (j * NI / 8 + q);
        float s4[4];
        if constexpr (scaled) {
          if (c < EARLY) {
#pragma unroll
            for (int x = 0; x < 4; ++x) s4[x] = b.sb[c + x];
          } else {
            const float4 v = *reinterpret_cast<const float4*>(sc + sb_at + kk * 4 * Scales::RUN + c);
            s4[0] = v.x;
            s4[1] = v.y;
            s4[2] = v.z;
            s4[3] = v.w;
          }
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int e = 4 * q; e < 4 * q + 8; ++e) {
            if constexpr (scaled) {
              const float s = b.sa[i][(e >> 1) & 1] * s4[(e - 4 * q) / 4 * 2 + (e & 1)];
              acc[i][j][e] = fmaf(p[i][j][e], s, acc[i][j][e]);
            } else {
              acc[i][j][e] += p[i][j][e];
            }
          }
      }
  };

  // Slab s goes to stage s % ST. Every step commits one copy group (empty
  // past the end), so "all but ST - 2 groups done" means slab ks is in. The
  // last slab's chunks past K are zeros.
  const long slabs_k = (K * E + ROW - 1) / ROW;
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < slabs_k) copy.issue(stages + unsigned(s) * SLAB, long(s) * ROW);
    else asm volatile("cp.async.commit_group;");
  }
  // MX: slab 0's scales in place, slab 1's in registers.
  if constexpr (scaled) {
    scales.load(0);
    scales.store(scale_buf);
    if (slabs_k > 1) scales.load(1);
  }
  // Stages by counters, not ks % ST (a 64-bit division each trip). The
  // stage a trip fills, that of slab ks + ST - 1, is the one slab ks - 1
  // was read from.
  int read_stage = 0, fill_stage = ST - 1;
  for (long ks = 0; ks < slabs_k; ++ks) {
    asm volatile("cp.async.wait_group %0;" ::"n"(ST - 2));
    // cp.async wrote through the generic proxy; wgmma reads through the async one.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const unsigned base = stages + unsigned(read_stage) * SLAB;
    const long next = ks + ST - 1;
    if constexpr (!by_blocks) {
      asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
      for (int kk = 0; kk < ROW / 32; ++kk) wgmma_step<Kind, NI, true>(acc, base, wg * W::ROWS, base, BM, kk);
      asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
      // The previous slab's MMAs are done (this one's may still run), so its
      // stage, the next copy's, is free once every warp is past here (each
      // warp waits for its own share of a warpgroup's MMA).
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
      __syncthreads();
      if (next < slabs_k) copy.issue(stages + unsigned(fill_stage) * SLAB, next * ROW);
      else asm volatile("cp.async.commit_group;");
    } else {
      // Every warp waited for all of slab ks - 1's MMAs before the barrier
      // above: its stage and its scales' buffer are free at once.
      if (next < slabs_k) copy.issue(stages + unsigned(fill_stage) * SLAB, next * ROW);
      else asm volatile("cp.async.commit_group;");
      if constexpr (scaled) {
        if (ks + 1 < slabs_k) scales.store(scale_buf + ((ks + 1) & 1) * Scales::FLOATS);
        if (ks + 2 < slabs_k) scales.load(ks + 2);
      }
      const float* const slab_scales = scale_buf + (ks & 1) * Scales::FLOATS;
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {  // one scale block an instruction
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        wgmma_step<Kind, NI, false>(part[kk % 2], base, wg * W::ROWS, base, BM, kk);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        // The block before is done once all but this one's MMAs are (the
        // previous slab's were all waited for).
        if (kk > 0) {
          const block_scales b = scales_of(slab_scales, kk - 1);
          asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
          add_block(slab_scales, kk - 1, b);
        }
      }
      // The slab's last block too: reading its accumulators in the next
      // trip round the loop, while that trip's first MMAs run, is safe, but
      // ptxas cannot tell across the loop's back edge and would serialize
      // every wgmma. (The other warpgroup's MMAs run meanwhile.)
      const block_scales b = scales_of(slab_scales, 3);
      asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
      add_block(slab_scales, 3, b);
    }
    read_stage = read_stage == ST - 1 ? 0 : read_stage + 1;
    fill_stage = fill_stage == ST - 1 ? 0 : fill_stage + 1;
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");

  store_warpgroup_tile<accumulate, W::ROWS>(acc, int(tid), dest, [](long, long, float v) { return v; });
  return true;
}

#include "cuda_wgmma_decoded.h"
#include "cuda_wgmma_requant.h"
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

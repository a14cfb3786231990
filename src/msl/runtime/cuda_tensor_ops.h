// matmul2d on NVIDIA tensor cores (the CUDA target; metal_tensor.h calls it
// before its reference path). Included inside namespace mpp::tensor_ops.
//
// run(): every operand a tensor, the scope one or more SIMD groups, the
// descriptor's tile split into 16 x 8 fragments that the scope's warps can
// share evenly, and types with an mma.sync: half x half and bfloat x bfloat
// (m16n8k16), and on sm_89 and later e4m3 x e4m3 and e5m2 x e5m2
// (m16n8k32), all with float accumulation; on sm_80 and later 8-bit integers
// of one signedness (m16n8k32, int32 accumulation) and, on TF32 (m16n8k8),
// float x float and every mixed pair of half, bfloat, float, 8-bit
// integers and unscaled FP8 with a float-type side: operands read as float, a float one
// split into a TF32 head and tail (hi*hi + hi*lo + lo*hi, near float's
// precision; the heads alone where the descriptor allows relaxed
// precision). Half, bfloat and 8-bit integers are exact in TF32. Each warp owns a block of
// fragments. Operands reach the registers one of four ways:
//  - warpgroup_tile() (sm_90a, cuda_wgmma.h): the staged tiles below, read
//    by Hopper's warpgroup MMA straight from shared memory (MX operands
//    included), FP8 tiles first decoded to half where their scales allow
//    (warpgroup_tile_decoded(), cuda_wgmma_decoded.h), or with relaxed
//    precision their scales folded into the codes for the FP8 MMA
//    (warpgroup_tile_requant(), cuda_wgmma_requant.h);
//  - staged(): the whole threadgroup copies K-major tiles into shared memory
//    (cp.async, two stages) and each warp reads them with ldmatrix;
//  - straight from the tensors: 32-bit loads where K is contiguous and
//    aligned; for a 16-bit right operand whose N is contiguous, a row per
//    lane transposed by movmatrix;
//  - element loads with the tensors' bounds otherwise (outside reads as 0,
//    as load() does).
// MX operands (a scales plane): each 32-wide K block is its own MMA into a
// zeroed accumulator, scaled by the row's and the column's block scales in
// float and added, as OCP MX defines the product (Hopper has no block-scaled
// MMA).
// run_cooperative(): a cooperative destination in the accumulator layout
// (metal_cooperative_tensor.h), the left operand a half tensor or a half or
// float cooperative tile (a float one split into two half MMAs unless the
// descriptor allows relaxed precision), the right a half tensor. Half
// tensors in threadgroup memory with 16-byte aligned rows (attention's
// staged K and V blocks) are read with ldmatrix, transposing where the
// other dimension is contiguous.
// Anything else, or a launch where the scope is partial or a scaled slice
// starts inside a block, returns false and the reference path runs.
#pragma once

namespace detail::tc {

// Types the TF32 path reads as float: exactly (half, bfloat, 8-bit
// integers, unscaled FP8: at most 11 significant bits, exponents within
// float's) or split in two (float).
template <class T> constexpr bool tf32_exact() {
  return metal::is_same_v<T, half> || metal::is_same_v<T, bfloat> || is_int8_v<T> || is_fp8_v<T>;
}
template <class L, class R> constexpr bool on_tf32() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr bool l = tf32_exact<L>() || metal::is_same_v<L, float>, r = tf32_exact<R>() || metal::is_same_v<R, float>;
  return l && r && (is_float_v<L> || is_float_v<R>);  // two integers: int32 results, not here
#else
  return false;
#endif
}
template <class L, class R> struct mma_kind {
  static constexpr int value = on_tf32<L, R>() ? 7 : 0;  // TF32, or none
};
template <> struct mma_kind<half, half> {
  static constexpr int value = 1;
};
template <> struct mma_kind<bfloat, bfloat> {
  static constexpr int value = 2;
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// 8-bit integers (int32 accumulators): Metal's char is signed.
template <> struct mma_kind<char, char> {
  static constexpr int value = 5;
};
template <> struct mma_kind<signed char, signed char> {
  static constexpr int value = 5;
};
template <> struct mma_kind<char, signed char> {
  static constexpr int value = 5;
};
template <> struct mma_kind<signed char, char> {
  static constexpr int value = 5;
};
template <> struct mma_kind<unsigned char, unsigned char> {
  static constexpr int value = 6;
};
// Mixed signedness: 8 signed x unsigned, 9 unsigned x signed.
template <> struct mma_kind<char, unsigned char> {
  static constexpr int value = 8;
};
template <> struct mma_kind<signed char, unsigned char> {
  static constexpr int value = 8;
};
template <> struct mma_kind<unsigned char, char> {
  static constexpr int value = 9;
};
template <> struct mma_kind<unsigned char, signed char> {
  static constexpr int value = 9;
};
template <> struct mma_kind<float, float> {
  static constexpr int value = 7;  // TF32
};
#endif
// 8-bit integers accumulate in int32; only the FP8 formats carry MX scales.
constexpr bool integer_kind(int kind) { return kind == 5 || kind == 6 || kind == 8 || kind == 9; }
constexpr bool fp8_kind(int kind) { return kind == 3 || kind == 4; }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
template <> struct mma_kind<metal::metal_fp8_e4m3_format, metal::metal_fp8_e4m3_format> {
  static constexpr int value = 3;
};
template <> struct mma_kind<metal::metal_fp8_e5m2_format, metal::metal_fp8_e5m2_format> {
  static constexpr int value = 4;
};
#endif

// How the scope's NW warps split an M x N tile of 16 x 8 fragments: WM x WN
// warps, each FM x FN fragments, as square as the divisors allow.
template <int M, int N, int NW> struct warp_grid {
  static constexpr int pick() {
    if (M % 16 != 0 || N % 8 != 0) return 0;
    int best = 0, best_gap = 1 << 30;
    for (int wm = 1; wm <= NW; ++wm) {
      if (NW % wm != 0 || (M / 16) % wm != 0 || (N / 8) % (NW / wm) != 0) continue;
      const int rows = M / wm, cols = N / (NW / wm);
      const int gap = rows > cols ? rows - cols : cols - rows;
      if (gap < best_gap) {
        best = wm;
        best_gap = gap;
      }
    }
    return best;
  }
  static constexpr int wm = pick();
  static constexpr int wn = wm ? NW / wm : 1;
  static constexpr int fm = wm ? M / 16 / wm : 0;
  static constexpr int fn = wm ? N / 8 / wn : 0;
  // Accumulators in registers: at most 32 fragments (128 floats) a thread.
  static constexpr bool ok = wm > 0 && fm * fn <= 32;
};

template <class T> ALLOY_FUNC uint32_t raw_bits(const T& v) {
  if constexpr (sizeof(T) == 4) return __builtin_bit_cast(uint32_t, v);
  else if constexpr (sizeof(T) == 2) return __builtin_bit_cast(uint16_t, v);
  else return __builtin_bit_cast(uint8_t, v);
}

// Four 8 x 8 matrices of 16-bit elements from shared memory (each lane
// names one row), transposed or not: ldmatrix.x4.
template <bool Trans>
ALLOY_FUNC void ldmatrix_x4(unsigned at, uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3) {
  if constexpr (Trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at));
}

// One operand as the MMA reads it: element (o, k), o the row of A (or the
// column of B), k along K, with element strides and the extents in memory.
// M, the element type in the MMA's registers, is T, or float for a T the
// TF32 path converts (every load then reads one element and converts it).
// A Scaled operand (an MX tensor beside a half one, on the TF32 path) is
// K-major and each element it converts is multiplied by its block's scale,
// 2^(e - 127): exact in float, as the product of a code of at most 8
// significant bits and a power of two.
template <class T, class M = T, bool Scaled = false> struct operand_view {
  static constexpr bool converts = !metal::is_same_v<T, M>;
  static_assert(!Scaled || converts, "operand_view: only converted operands apply scales");
  static constexpr int per_word = 4 / int(sizeof(M));  // K elements in one 32-bit register
  const T* data;
  long s_o, s_k;
  long valid_o, valid_k;
  bool words;  // K contiguous and every word 4-byte aligned
  // Scaled: the block scales, element (o, k)'s at (origin + k) / 32 + o * stride.
  const metal::metal_fp8_ue8m0_format* scales = nullptr;
  long scale_origin = 0, scale_stride = 0;

  template <class Tensor> ALLOY_FUNC operand_view(const Tensor& t, bool k_first) {
    if constexpr (Scaled) {
      scales = t.scales_.scales;
      scale_origin = long(t.scales_.origin0);
      scale_stride = long(t.scales_.strides[1]);
    }
    data = reinterpret_cast<const T*>(t.data_);
    s_k = long(t.strides_[k_first ? 0 : 1]);
    s_o = long(t.strides_[k_first ? 1 : 0]);
    valid_k = long(t.valid_[k_first ? 0 : 1]);
    valid_o = long(t.valid_[k_first ? 1 : 0]);
    words = converts || (s_k == 1 && (s_o % per_word) == 0 && (reinterpret_cast<unsigned long>(data) % 4) == 0);
  }
  // For a 16-bit operand whose other dimension is contiguous (a row-major
  // K x N right operand, V of attention): the B fragment's register for K
  // rows k0..k0 + 7 and the 8 columns from o0, read as rows (one 32-bit load
  // a lane) and transposed by movmatrix. Every lane of the warp calls it.
  ALLOY_FUNC bool rows_contiguous() const {
    return !converts && sizeof(T) == 2 && s_o == 1 && s_k % 2 == 0 && (reinterpret_cast<unsigned long>(data) % 4) == 0;
  }
  ALLOY_FUNC bool block_inside(long o0, long k0, long ko) const { return o0 + 8 <= valid_o && k0 + ko <= valid_k; }
  ALLOY_FUNC uint32_t transposed_word(long o0, long k0, int g, int t) const {
    const uint32_t row = *reinterpret_cast<const uint32_t*>(data + (k0 + g) * s_k + o0 + 2 * t);
    uint32_t r;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(row));
    return r;
  }
  // A 16-bit operand in threadgroup memory, K or the other dimension
  // contiguous, its rows 16-byte aligned: ldmatrix reads its fragments.
  ALLOY_FUNC bool in_shared_rows() const {
    if (converts || sizeof(T) != 2 || !__isShared(data) || (reinterpret_cast<unsigned long>(data) % 16) != 0) return false;
    return (s_k == 1 && (s_o * 2) % 16 == 0) || (s_o == 1 && (s_k * 2) % 16 == 0);
  }
  // ldmatrix for such an operand: this lane's address of the 8 x 8 matrix
  // rows it names (row lane % 8 of matrix lane / 8) at o0 = k0 = 0, then the
  // B fragments (both registers) of the 8 columns from o0 and the 8 after,
  // for the 16 K rows from k0, by one ldmatrix.x4 (transposing when the
  // other dimension is contiguous). Every lane of the warp calls them.
  ALLOY_FUNC unsigned shared_lane_address(int lane) const {
    const long lo = (lane & 7) + ((lane >> 4) << 3), lk = ((lane >> 3) & 1) << 3;
    const T* p = s_k == 1 ? data + lo * s_o + lk : data + (lk + (lane & 7)) * s_k + ((lane >> 4) << 3);
    return unsigned(__cvta_generic_to_shared(p));
  }
  ALLOY_FUNC void shared_x4(unsigned lane_at, long o0, long k0, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                            uint32_t& r3) const {
    if (s_k == 1) ldmatrix_x4<false>(lane_at + unsigned((o0 * s_o + k0) * 2), r0, r1, r2, r3);
    else ldmatrix_x4<true>(lane_at + unsigned((k0 * s_k + o0) * 2), r0, r1, r2, r3);
  }
  // The same for a left operand: this lane's address, for shared_x4 to read
  // the A fragment (four registers) of the 16 rows from o0 and 16 K from k0.
  ALLOY_FUNC unsigned shared_lane_address_left(int lane) const {
    const T* p = s_k == 1 ? data + (lane & 15) * s_o + ((lane >> 4) << 3)
                          : data + ((lane & 7) + ((lane >> 4) << 3)) * s_k + (((lane >> 3) & 1) << 3);
    return unsigned(__cvta_generic_to_shared(p));
  }
  // per_word consecutive K elements from k (k a multiple of per_word).
  ALLOY_FUNC uint32_t word(long o, long k, bool fast) const {
    if constexpr (converts) {
      if (!fast && (o >= valid_o || k >= valid_k)) return 0u;
      float v = float(data[o * s_o + k * s_k]);
      if constexpr (Scaled) v *= float(scales[(scale_origin + k) / 32 + o * scale_stride]);
      return __float_as_uint(v);
    }
    if (fast) return *reinterpret_cast<const uint32_t*>(data + o * s_o + k);
    uint32_t r = 0;
    if (o < valid_o) {
#pragma unroll
      for (int j = 0; j < per_word; ++j)
        if (k + j < valid_k) r |= raw_bits(data[o * s_o + (k + j) * s_k]) << (8 * int(sizeof(T)) * j);
    }
    return r;
  }
};

// Float accumulators: Kind 1 half and 2 bfloat (m16n8k16), 3 e4m3 and 4
// e5m2 (m16n8k32), 7 TF32 (m16n8k8; see split_tf32 below).
#define ALLOY_MMA_F32(SHAPE, TYPES)                                                                     \
  asm volatile("mma.sync.aligned." SHAPE ".row.col.f32." TYPES ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
               "{%0,%1,%2,%3};"                                                                         \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
template <int Kind>
ALLOY_FUNC void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (Kind == 1) ALLOY_MMA_F32("m16n8k16", "f16.f16");
  else if constexpr (Kind == 2) ALLOY_MMA_F32("m16n8k16", "bf16.bf16");
  else if constexpr (Kind == 3) ALLOY_MMA_F32("m16n8k32", "e4m3.e4m3");
  else if constexpr (Kind == 4) ALLOY_MMA_F32("m16n8k32", "e5m2.e5m2");
  else if constexpr (Kind == 7) ALLOY_MMA_F32("m16n8k8", "tf32.tf32");
}
#undef ALLOY_MMA_F32

// Float as TF32 (rounded to nearest, ties away: cvt.rna), and the head and
// tail of a float as two TF32 values: x = hi + lo up to x's last 2-3 bits.
ALLOY_FUNC uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
ALLOY_FUNC void split_tf32(uint32_t bits, uint32_t& hi, uint32_t& lo) {
  const float x = __uint_as_float(bits);
  hi = to_tf32(x);
  lo = to_tf32(x - __uint_as_float(hi));
}

// 8-bit integers, exact in int32: Kind 5 signed, 6 unsigned, 8 signed x
// unsigned, 9 unsigned x signed.
#define ALLOY_MMA_S32(TYPES)                                                                               \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." TYPES ".s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
               "{%0,%1,%2,%3};"                                                                            \
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])                                            \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
template <int Kind>
ALLOY_FUNC void mma(int (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (Kind == 5) ALLOY_MMA_S32("s8.s8");
  else if constexpr (Kind == 6) ALLOY_MMA_S32("u8.u8");
  else if constexpr (Kind == 8) ALLOY_MMA_S32("s8.u8");
  else if constexpr (Kind == 9) ALLOY_MMA_S32("u8.s8");
}
#undef ALLOY_MMA_S32

// ---- the staged main loop: operand tiles through shared memory
// When the scope is the whole threadgroup, both operands are K-major (left
// not transposed, right transposed: K contiguous, rows 16-byte aligned) and
// the tile lies inside them with K a multiple of 64 bytes, the threadgroup
// copies 64-byte slabs of K of the M x K and N x K tiles into shared memory
// with cp.async (two stages, the next in flight while the tensor cores work
// on this one), and each warp reads its fragments with ldmatrix. Rows of a
// slab are 4 chunks of 16 bytes, the chunk index XOR-ed with (row / 2) % 4,
// so the 8 rows an ldmatrix reads fall in distinct banks: Hopper's 64-byte
// swizzle (cuda_wgmma.h lays its slabs out in the 128-byte one).
ALLOY_FUNC unsigned shared_address(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }
// Where chunk `chunk` of row `row` goes in a slab of ROW-byte rows: Hopper's
// ROW-byte swizzle, the chunk index XOR-ed with address bits 7 and up (64:
// (row / 2) % 4; 128: row % 8).
template <int ROW = 64> ALLOY_FUNC unsigned slab_offset(int row, int chunk) {
  return unsigned(row * ROW + ((chunk ^ ((row * ROW >> 7) & (ROW / 16 - 1))) << 4));
}

// Stage memory of BYTES: one array per size, 1024-aligned as the swizzle needs.
template <int BYTES> ALLOY_FUNC unsigned char* stage_memory() {
  __shared__ alignas(1024) unsigned char stages[BYTES];
  return stages;
}

// Whether this launch's operands can be staged (see above), with K a
// multiple of K_ALIGN bytes.
template <int BM, int BN, int S, int K_ALIGN = 64, class AV, class BV>
ALLOY_FUNC bool staged_fits(const AV& A, const BV& B, long K, unsigned count) {
  constexpr int E = int(sizeof(*A.data));
  return count == unsigned(S) && A.s_k == 1 && B.s_k == 1 && (A.s_o * E) % 16 == 0 && (B.s_o * E) % 16 == 0 &&
         (reinterpret_cast<unsigned long>(A.data) % 16) == 0 && (reinterpret_cast<unsigned long>(B.data) % 16) == 0 &&
         A.valid_o >= BM && B.valid_o >= BN && (K * E) % K_ALIGN == 0 && A.valid_k >= K && B.valid_k >= K;
}

// One thread's share of copying a slab of BM + BN rows of ROW bytes (C
// chunks of 16): chunk tid + j * S for each j, i.e. row tid / C + j * S / C
// and chunk tid % C. Its source and its place in the slab are worked out
// once; a slab then costs one cp.async per chunk. (When S / C is a multiple
// of 8, the XOR of the swizzle is the same for all j.) Chunks at or past
// k_bytes are filled with zeros, not read.
template <int BM, int BN, int S, int ROW = 64> struct slab_copy {
  static constexpr int C = ROW / 16, CHUNKS = (BM + BN) * C, RJ = S / C;
  static constexpr bool even = (BM * C) % S == 0 && (BN * C) % S == 0 && RJ % 8 == 0;
  const unsigned char* a;
  const unsigned char* b;
  long a_ld, b_ld, k_bytes;
  unsigned tid, dst0;
  ALLOY_FUNC slab_copy(const void* a_data, long a_row_bytes, const void* b_data, long b_row_bytes, long k_total,
                       unsigned t)
      : a_ld(a_row_bytes), b_ld(b_row_bytes), k_bytes(k_total), tid(t) {
    a = reinterpret_cast<const unsigned char*>(a_data) + long(t / C) * a_row_bytes + (t % C) * 16;
    b = reinterpret_cast<const unsigned char*>(b_data) + long(t / C) * b_row_bytes + (t % C) * 16;
    dst0 = slab_offset<ROW>(int(t / C), int(t % C));
  }
  // 16 bytes, or zeros when `bytes` is 0 (src is then not read).
  ALLOY_FUNC static void copy16(unsigned dst, const unsigned char* src, unsigned bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes));
  }
  // Starts the copy of the slab at byte kbyte of K into the stage at `base`,
  // and commits the copy group unless told not to (copies of several slabs
  // in one group).
  ALLOY_FUNC void issue(unsigned base, long kbyte, bool commit = true) const {
    if constexpr (even) {
      const long k = kbyte + (tid % C) * 16;
      const unsigned bytes = k < k_bytes ? 16u : 0u;
      const long at = bytes ? kbyte : 0;
#pragma unroll
      for (int j = 0; j < BM * C / S; ++j) copy16(base + dst0 + j * RJ * ROW, a + j * RJ * a_ld + at, bytes);
#pragma unroll
      for (int j = 0; j < BN * C / S; ++j) copy16(base + dst0 + (BM + j * RJ) * ROW, b + j * RJ * b_ld + at, bytes);
    } else {
      const unsigned char* a0 = a - long(tid / C) * a_ld - (tid % C) * 16;
      const unsigned char* b0 = b - long(tid / C) * b_ld - (tid % C) * 16;
      for (int c = int(tid); c < CHUNKS; c += S) {
        const int row = c / C, chunk = c % C;
        const long k = kbyte + chunk * 16;
        const unsigned bytes = k < k_bytes ? 16u : 0u;
        const long at = bytes ? k : 0;
        const unsigned char* src = row < BM ? a0 + row * a_ld + at : b0 + (row - BM) * b_ld + at;
        copy16(base + slab_offset<ROW>(row, chunk), src, bytes);
      }
    }
    if (commit) asm volatile("cp.async.commit_group;");
  }
};

template <matmul2d_descriptor Desc, int NW, class Grid, int KSTEP, class AV, class BV, class Step>
ALLOY_FUNC bool staged(const AV& A, const BV& B, long K, unsigned tid, unsigned count, int lane, int m0, int n0,
                       Step& step) {
  constexpr int BM = Desc.m, BN = Desc.n, E = int(sizeof(*A.data)), S = 32 * NW;
  constexpr int SLAB = (BM + BN) * 64;  // bytes of one stage
  if constexpr (Desc.transpose_left || !Desc.transpose_right || Grid::fn % 2 != 0 || 2 * SLAB > 32768) {
    return false;
  } else {
    if (!staged_fits<BM, BN, S>(A, B, K, count)) return false;
    const slab_copy<BM, BN, S> copy(A.data, A.s_o * E, B.data, B.s_o * E, K * E, tid);
    const unsigned stages = shared_address(stage_memory<2 * SLAB>());
    // This lane's ldmatrix addresses in a stage, for each half of a slab:
    // row m0 + (lane % 16) (+ 16 i) of A, and row n0 + (lane % 8) + 8 (lane
    // / 16) (+ 8 j) of B; a fragment 16 rows on is 1024 bytes on, with the
    // same swizzle.
    unsigned a_at[2], b_at[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      a_at[h] = slab_offset(m0 + (lane & 15), h * 2 + (lane >> 4));
      b_at[h] = slab_offset(BM + n0 + (lane & 7) + ((lane >> 4) << 3), h * 2 + ((lane >> 3) & 1));
    }
    const long slabs_k = K * E / 64;
    copy.issue(stages, 0);
    for (long ks = 0; ks < slabs_k; ++ks) {
      if (ks + 1 < slabs_k) {
        copy.issue(stages + unsigned((ks + 1) & 1) * SLAB, (ks + 1) * 64);
        asm volatile("cp.async.wait_group 1;");
      } else {
        asm volatile("cp.async.wait_group 0;");
      }
      __syncthreads();
      const unsigned base = stages + unsigned(ks & 1) * SLAB;
#pragma unroll
      for (int half_slab = 0; half_slab < 2; ++half_slab) {  // one MMA K step: 32 bytes, 2 chunks
        uint32_t a[Grid::fm][4], b[Grid::fn][2];
#pragma unroll
        for (int i = 0; i < Grid::fm; ++i) {
          ldmatrix_x4<false>(base + a_at[half_slab] + i * 1024, a[i][0], a[i][1], a[i][2], a[i][3]);
        }
#pragma unroll
        for (int j = 0; j < Grid::fn; j += 2) {
          ldmatrix_x4<false>(base + b_at[half_slab] + j * 512, b[j][0], b[j][1], b[j + 1][0], b[j + 1][1]);
        }
        step((ks * 64 + half_slab * 32) / E, a, b);
      }
      __syncthreads();  // before the next load overwrites this stage
    }
    return true;
  }
}

// One accumulator into the destination tensor at (row m, column n), added
// to what is there for multiply_accumulate; outside the tensor, nothing.
template <bool Accumulate, class DT, class V> ALLOY_FUNC void store_result(DT& dest, long m, long n, V v) {
  if (m >= long(dest.valid_[1]) || n >= long(dest.valid_[0])) return;
  if constexpr (Accumulate) v += V(dest(n, m));
  dest(n, m) = typename DT::value_type(v);
}

#include "cuda_wgmma.h"

// destination (+)= left * right for the descriptor's tile; false when this
// launch cannot take the tensor cores (the caller then runs the reference).
template <matmul2d_descriptor Desc, int NW, class LT, class RT, class DT>
ALLOY_FUNC bool run(const LT& left, const RT& right, DT& dest) {
  typedef typename LT::value_type L;
  constexpr int kind = mma_kind<L, typename RT::value_type>::value;
  typedef warp_grid<Desc.m, Desc.n, NW> grid;
  // Scales planes: the FP8 MMAs apply them per block, the TF32 path (an MX
  // tensor beside a half one) as it converts each element; 8-bit integers
  // with one take the reference path.
  if constexpr (kind == 0 || !grid::ok || (!fp8_kind(kind) && kind != 7 && (LT::scaled_ || RT::scaled_))) {
    return false;
  } else {
    constexpr int KSTEP = kind <= 2 ? 16 : kind == 7 ? 8 : 32;
    typedef metal::conditional_t<integer_kind(kind), int, float> Acc;  // int32 for 8-bit integers
    constexpr int W = kind == 7 ? 1 : 4 / int(sizeof(L));  // K elements a register holds
    constexpr bool scaled = LT::scaled_ || RT::scaled_;
    constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
    // FP8 MMAs: scale blocks must line up with the K steps.
    if constexpr (LT::scaled_ && kind != 7)
      if (left.scales_.origin0 % 32 != 0) return false;
    if constexpr (RT::scaled_ && kind != 7)
      if (right.scales_.origin0 % 32 != 0) return false;
    unsigned index = 0, count = 1;
    ::alloy_msl::thread_in_threadgroup(index, count);
    const unsigned S = 32u * NW, first = index - index % S;
    if (count - first < S) return false;  // a partial scope
    const int warp = int(index % S) / 32, lane = int(index % 32);
    const int g = lane >> 2, t = lane & 3;
    const int m0 = (warp / grid::wn) * grid::fm * 16, n0 = (warp % grid::wn) * grid::fn * 8;

    // Left: (K, M), or (M, K) transposed; right: (N, K), or (K, N) transposed.
    // On TF32 each is read as float.
    typedef typename RT::value_type R;
    const operand_view<L, metal::conditional_t<kind == 7, float, L>, kind == 7 && LT::scaled_> A(left, !Desc.transpose_left);
    const operand_view<R, metal::conditional_t<kind == 7, float, R>, kind == 7 && RT::scaled_> B(right, Desc.transpose_right);
    constexpr bool converted = decltype(A)::converts || decltype(B)::converts;
    long K = Desc.k;
    if constexpr (Desc.k_from_operands())
      K = long(left.get_extent(Desc.transpose_left ? 1 : 0));
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // Tiles the warpgroups take never reach staged() (whose condition is
    // theirs), so its static stages are not allocated beside theirs.
    // FP8 tiles whose stages fit are decoded to half when their scales
    // allow; the others (and those whose scales spread too far, and half,
    // bfloat) take the per-block warpgroup tile. Both share one static
    // stage array.
    // FP8 beside half: the FP8 side decoded to half, when its scales allow
    // (otherwise the TF32 path below).
    constexpr bool decoded = decoded_shape<Desc, NW, kind>::ok;
    constexpr bool per_block = warpgroup_shape<Desc, NW, kind>::ok;
    constexpr bool mixed = mixed_decoded_shape<Desc, NW, L, R>::ok;
    // MX FP8 with relaxed precision: scales folded into the codes, the FP8
    // MMA at its own rate, when the rows' scales allow.
    constexpr bool requant = requant_shape<Desc, NW, kind, LT::scaled_ || RT::scaled_>::ok;
    constexpr bool on_warpgroups = decoded || per_block || mixed;
    if constexpr (requant)
      if (warpgroup_tile_requant<Desc, NW, kind>(left, right, A, B, K, index % S, count, dest)) return true;
    if constexpr (mixed)
      if (warpgroup_tile_mixed<Desc, NW>(left, right, A, B, K, index % S, count, dest)) return true;
    if constexpr (decoded)
      if (warpgroup_tile_decoded<Desc, NW, kind>(left, right, A, B, K, index % S, count, dest)) return true;
    if constexpr (per_block)
      if (warpgroup_tile<Desc, NW, kind>(left, right, A, B, K, index % S, count, dest)) return true;
#else
    constexpr bool on_warpgroups = false;
#endif
    const bool rows_in = A.words && m0 + grid::fm * 16 <= A.valid_o;
    const bool cols_in = B.words && n0 + grid::fn * 8 <= B.valid_o;

    Acc acc[grid::fm][grid::fn][4];
#pragma unroll
    for (int i = 0; i < grid::fm; ++i)
#pragma unroll
      for (int j = 0; j < grid::fn; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = Acc(0);

    // One K step (KSTEP wide from k0) of the warp's fragments.
    auto step = [&](long k0, const uint32_t (&a)[grid::fm][4], const uint32_t (&b)[grid::fn][2]) {
      if constexpr (kind == 7) {
        // Float words. A float operand's are split once into TF32 head and
        // tail (unless relaxed); the others' are exact TF32 already. The
        // small products first.
        constexpr bool a_tail = metal::is_same_v<L, float> && !Desc.relaxed_precision;
        constexpr bool b_tail = metal::is_same_v<R, float> && !Desc.relaxed_precision;
        uint32_t ah[grid::fm][4], al[grid::fm][4], bh[grid::fn][2], bl[grid::fn][2];
#pragma unroll
        for (int i = 0; i < grid::fm; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            if constexpr (metal::is_same_v<L, float>) split_tf32(a[i][e], ah[i][e], al[i][e]);
            else ah[i][e] = a[i][e];
          }
#pragma unroll
        for (int j = 0; j < grid::fn; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            if constexpr (metal::is_same_v<R, float>) split_tf32(b[j][e], bh[j][e], bl[j][e]);
            else bh[j][e] = b[j][e];
          }
#pragma unroll
        for (int i = 0; i < grid::fm; ++i)
#pragma unroll
          for (int j = 0; j < grid::fn; ++j) {
            if constexpr (a_tail) mma<7>(acc[i][j], al[i], bh[j]);
            if constexpr (b_tail) mma<7>(acc[i][j], ah[i], bl[j]);
            mma<7>(acc[i][j], ah[i], bh[j]);
          }
      } else if constexpr (!scaled) {
#pragma unroll
        for (int i = 0; i < grid::fm; ++i)
#pragma unroll
          for (int j = 0; j < grid::fn; ++j) mma<kind>(acc[i][j], a[i], b[j]);
      } else {
        // This block's scales: rows g and g + 8 of each A fragment, columns
        // 2t and 2t + 1 of each B fragment (1 for an unscaled operand or
        // outside the tensor, where the elements read as 0).
        float sa[grid::fm][2], sb[grid::fn][2];
#pragma unroll
        for (int i = 0; i < grid::fm; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const long r = m0 + i * 16 + g + 8 * h;
            sa[i][h] = 1.0f;
            if constexpr (LT::scaled_)
              if (r < A.valid_o && k0 < A.valid_k) sa[i][h] = left.scale_at(k0, r);
          }
#pragma unroll
        for (int j = 0; j < grid::fn; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const long c = n0 + j * 8 + 2 * t + h;
            sb[j][h] = 1.0f;
            if constexpr (RT::scaled_)
              if (c < B.valid_o && k0 < B.valid_k) sb[j][h] = right.scale_at(k0, c);
          }
#pragma unroll
        for (int i = 0; i < grid::fm; ++i)
#pragma unroll
          for (int j = 0; j < grid::fn; ++j) {
            float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            mma<kind>(part, a[i], b[j]);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] += part[e] * (sa[i][e >> 1] * sb[j][e & 1]);
          }
      }
    };

    const bool b_by_rows = !B.words && B.rows_contiguous();
    bool done = false;
    // Operands converted on load do not go through shared memory as bytes.
    if constexpr (!on_warpgroups && !converted) done = staged<Desc, NW, grid, KSTEP>(A, B, K, index % S, count, lane, m0, n0, step);
    if (!done) {
      for (long k0 = 0; k0 < K; k0 += KSTEP) {
        const bool k_in = k0 + KSTEP <= A.valid_k && k0 + KSTEP <= B.valid_k;
        const bool fast_a = rows_in && k_in, fast_b = cols_in && k_in;
        uint32_t a[grid::fm][4], b[grid::fn][2];
#pragma unroll
        for (int i = 0; i < grid::fm; ++i) {
          const long r = m0 + i * 16 + g;
          const long k = k0 + t * W;
          a[i][0] = A.word(r, k, fast_a);
          a[i][1] = A.word(r + 8, k, fast_a);
          a[i][2] = A.word(r, k + KSTEP / 2, fast_a);
          a[i][3] = A.word(r + 8, k + KSTEP / 2, fast_a);
        }
#pragma unroll
        for (int j = 0; j < grid::fn; ++j) {
          if (b_by_rows && B.block_inside(n0 + j * 8, k0, KSTEP)) {
            b[j][0] = B.transposed_word(n0 + j * 8, k0, g, t);
            b[j][1] = B.transposed_word(n0 + j * 8, k0 + 8, g, t);
            continue;
          }
          const long c = n0 + j * 8 + g;
          const long k = k0 + t * W;
          b[j][0] = B.word(c, k, fast_b);
          b[j][1] = B.word(c, k + KSTEP / 2, fast_b);
        }
        step(k0, a, b);
      }
    }

    // Element e of a fragment: row g (+ 8 for e >= 2), column 2t + (e & 1).
#pragma unroll
    for (int i = 0; i < grid::fm; ++i)
#pragma unroll
      for (int j = 0; j < grid::fn; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const long m = m0 + i * 16 + g + 8 * (e >> 1), n = n0 + j * 8 + 2 * t + (e & 1);
          store_result<accumulate>(dest, m, n, acc[i][j][e]);
        }
    return true;
  }
}

// A cooperative destination in the accumulator layout (one SIMD group),
// right operand a half tensor, left operand a half tensor or a cooperative
// tile of half or float: the warp's MMAs accumulate straight into the
// destination's registers. A float left operand is split into two halves,
// hi + lo (each exact to half's precision of what is left), and multiplied
// twice, so the product keeps float's precision (P of the WWDC softmax).
ALLOY_FUNC uint32_t pack_halves(float x, float y) {
  return raw_bits(half(x)) | (raw_bits(half(y)) << 16);
}
ALLOY_FUNC void split_halves(float x, float y, uint32_t& hi, uint32_t& lo) {
  const half hx(x), hy(y);
  hi = raw_bits(hx) | (raw_bits(hy) << 16);
  lo = pack_halves(x - float(hx), y - float(hy));
}

template <matmul2d_descriptor Desc, int StaticK, class LT, class RT, class DT>
ALLOY_FUNC bool run_cooperative(const LT& left, const RT& right, DT& dest) {
  constexpr bool coop_left = is_cooperative_v<LT>;
  typedef typename LT::value_type L;
  typedef typename RT::value_type R;
  constexpr bool left_ok = metal::is_same_v<L, half> || (coop_left && metal::is_same_v<L, float>);
  if constexpr (!metal::is_same_v<R, half> || !left_ok || Desc.transpose_left || !DT::frag_ ||
                !metal::is_same_v<typename DT::value_type, float> ||
                DT::cols_ != Desc.n || DT::rows_ != Desc.m) {
    return false;
  } else {
    constexpr int FM = Desc.m / 16, FN = Desc.n / 8;
    // relaxed_precision lets a float left tile go through one half MMA.
    constexpr bool split = metal::is_same_v<L, float> && !Desc.relaxed_precision;
    constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
    const int lane = int(dest.lane_), g = lane >> 2, t = lane & 3;
    if (!accumulate)
      for (int i = 0; i < DT::capacity_; ++i) dest.v_[i] = 0.0f;
    const operand_view<half> B(right, Desc.transpose_right);
    long K;
    if constexpr (coop_left) K = LT::cols_;
    else K = (Desc.k_from_operands()) ? long(left.get_extent(0)) : long(Desc.k);
    const bool cols_in = B.words && FN * 8 <= B.valid_o;
    const bool b_by_rows = !B.words && B.rows_contiguous();
    // A left tensor, as the MMA reads it (unused for a cooperative left tile).
    const auto A = [&] {
      if constexpr (!coop_left) return operand_view<half>(left, true);
      else return 0;
    }();

    // The left operand's registers for m-fragment i and the K chunk at k0.
    auto left_regs = [&](int i, long k0, uint32_t (&hi)[4], uint32_t (&lo)[4], unsigned a_at) {
      if constexpr (!coop_left) {
        if (a_at != ~0u) {  // in threadgroup memory (see k_loop)
          A.shared_x4(a_at, i * 16, k0, hi[0], hi[1], hi[2], hi[3]);
          return;
        }
        const bool fast = A.words && FM * 16 <= A.valid_o && k0 + 16 <= A.valid_k;
        const long r = i * 16 + g, k = k0 + 2 * t;
        hi[0] = A.word(r, k, fast);
        hi[1] = A.word(r + 8, k, fast);
        hi[2] = A.word(r, k + 8, fast);
        hi[3] = A.word(r + 8, k + 8, fast);
      } else if constexpr (LT::frag_) {
        // Fragments (i, 2 * k0 / 16) and the next hold this chunk's columns.
        constexpr int LFN = LT::cols_ / 8;
        const int f0 = int(k0 / 8);
        auto at = [&](int f, int e) -> float {
          return f < LFN ? float(left.v_[(i * LFN + f) * 4 + e]) : 0.0f;
        };
        if constexpr (metal::is_same_v<L, half>) {
          auto bits = [&](int f, int e) -> uint32_t { return f < LFN ? raw_bits(left.v_[(i * LFN + f) * 4 + e]) : 0u; };
          hi[0] = bits(f0, 0) | (bits(f0, 1) << 16);
          hi[1] = bits(f0, 2) | (bits(f0, 3) << 16);
          hi[2] = bits(f0 + 1, 0) | (bits(f0 + 1, 1) << 16);
          hi[3] = bits(f0 + 1, 2) | (bits(f0 + 1, 3) << 16);
        } else if constexpr (split) {
          split_halves(at(f0, 0), at(f0, 1), hi[0], lo[0]);
          split_halves(at(f0, 2), at(f0, 3), hi[1], lo[1]);
          split_halves(at(f0 + 1, 0), at(f0 + 1, 1), hi[2], lo[2]);
          split_halves(at(f0 + 1, 2), at(f0 + 1, 3), hi[3], lo[3]);
        } else {
          hi[0] = pack_halves(at(f0, 0), at(f0, 1));
          hi[1] = pack_halves(at(f0, 2), at(f0, 3));
          hi[2] = pack_halves(at(f0 + 1, 0), at(f0 + 1, 1));
          hi[3] = pack_halves(at(f0 + 1, 2), at(f0 + 1, 3));
        }
      } else {
        // A replicated tile (cols K, rows M): this lane's elements of it.
        auto at = [&](int r, long k) -> float { return k < K ? float(left.v_[r * LT::cols_ + k]) : 0.0f; };
        const int r = i * 16 + g;
        const long k = k0 + 2 * t;
        if constexpr (split) {
          split_halves(at(r, k), at(r, k + 1), hi[0], lo[0]);
          split_halves(at(r + 8, k), at(r + 8, k + 1), hi[1], lo[1]);
          split_halves(at(r, k + 8), at(r, k + 9), hi[2], lo[2]);
          split_halves(at(r + 8, k + 8), at(r + 8, k + 9), hi[3], lo[3]);
        } else {
          hi[0] = pack_halves(at(r, k), at(r, k + 1));
          hi[1] = pack_halves(at(r + 8, k), at(r + 8, k + 1));
          hi[2] = pack_halves(at(r, k + 8), at(r, k + 9));
          hi[3] = pack_halves(at(r + 8, k + 8), at(r + 8, k + 9));
        }
      }
    };

    // The K loop, its B fragments read by ldmatrix from threadgroup memory
    // (Shared) or from the tensor; one branch for the whole loop, so the
    // loads and MMAs of successive K steps interleave.
    auto k_loop = [&](auto shared_tag, auto shared_left_tag) {
      constexpr bool Shared = decltype(shared_tag)::value, SharedLeft = decltype(shared_left_tag)::value;
      unsigned lane_at = 0, a_at = ~0u;
      if constexpr (Shared) lane_at = B.shared_lane_address(lane);
      if constexpr (!coop_left) {
        if constexpr (SharedLeft) a_at = A.shared_lane_address_left(lane);
      }
#pragma unroll
      for (long k0 = 0; k0 < K; k0 += 16) {
        uint32_t b[FN][2];
        if constexpr (Shared) {
#pragma unroll
          for (int j = 0; j < FN; j += 2) B.shared_x4(lane_at, j * 8, k0, b[j][0], b[j][1], b[j + 1][0], b[j + 1][1]);
        } else {
          const bool fast_b = cols_in && k0 + 16 <= B.valid_k;
#pragma unroll
          for (int j = 0; j < FN; ++j) {
            if (b_by_rows && B.block_inside(j * 8, k0, 16)) {
              b[j][0] = B.transposed_word(j * 8, k0, g, t);
              b[j][1] = B.transposed_word(j * 8, k0 + 8, g, t);
              continue;
            }
            const long c = j * 8 + g, k = k0 + 2 * t;
            b[j][0] = B.word(c, k, fast_b);
            b[j][1] = B.word(c, k + 8, fast_b);
          }
        }
#pragma unroll
        for (int i = 0; i < FM; ++i) {
          uint32_t hi[4], lo[4];
          left_regs(i, k0, hi, lo, a_at);
#pragma unroll
          for (int j = 0; j < FN; ++j) {
            float (&acc)[4] = *reinterpret_cast<float(*)[4]>(&dest.v_[(i * FN + j) * 4]);
            mma<1>(acc, hi, b[j]);
            if constexpr (split) mma<1>(acc, lo, b[j]);
          }
        }
      }
    };
    const long k_steps = (K + 15) / 16 * 16;
    if (FN % 2 == 0 && B.in_shared_rows() && B.block_inside(FN * 8 - 8, 0, k_steps)) {
      if constexpr (!coop_left) {
        if (A.in_shared_rows() && FM * 16 <= A.valid_o && k_steps <= A.valid_k) {
          k_loop(metal::true_type(), metal::true_type());
          return true;
        }
      }
      k_loop(metal::true_type(), metal::false_type());
    } else {
      k_loop(metal::false_type(), metal::false_type());
    }
    return true;
  }
}

}  // namespace detail::tc

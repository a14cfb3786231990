// matmul2d on NVIDIA tensor cores (the CUDA target; metal_tensor.h calls it
// before its reference path). Included inside namespace mpp::tensor_ops.
//
// Taken when every operand is a tensor (not a cooperative tensor), the scope
// is one or more SIMD groups, the descriptor's tile splits into 16 x 8
// fragments that the scope's warps can share evenly, and the types have an
// mma.sync: half x half and bfloat x bfloat (m16n8k16), and on sm_89 and
// later e4m3 x e4m3 and e5m2 x e5m2 (m16n8k32), all with float
// accumulation. Each warp owns a block of fragments and loads its operands
// straight from their tensors (32-bit loads where the K dimension is
// contiguous and aligned, element loads with the tensors' bounds otherwise:
// outside reads as 0, as load() does). MX operands (a scales plane): each
// 32-wide K block is its own MMA into a zeroed accumulator, scaled by the
// row's and the column's block scales in float and added, as OCP MX defines
// the product (Hopper has no block-scaled MMA). Anything else, or a launch
// where the scope is partial or a scaled slice starts inside a block, returns
// false and the reference path runs.
#pragma once

namespace detail::tc {

template <class L, class R> struct mma_kind {
  static constexpr int value = 0;  // none
};
template <> struct mma_kind<half, half> {
  static constexpr int value = 1;
};
template <> struct mma_kind<bfloat, bfloat> {
  static constexpr int value = 2;
};
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
  if constexpr (sizeof(T) == 2) return __builtin_bit_cast(uint16_t, v);
  else return __builtin_bit_cast(uint8_t, v);
}

// One operand as the MMA reads it: element (o, k), o the row of A (or the
// column of B), k along K, with element strides and the extents in memory.
template <class T> struct operand_view {
  static constexpr int per_word = 4 / int(sizeof(T));  // K elements in one 32-bit register
  const T* data;
  long s_o, s_k;
  long valid_o, valid_k;
  bool words;  // K contiguous and every word 4-byte aligned

  template <class Tensor> ALLOY_FUNC operand_view(const Tensor& t, bool k_first) {
    data = reinterpret_cast<const T*>(t.data_);
    s_k = long(t.strides_[k_first ? 0 : 1]);
    s_o = long(t.strides_[k_first ? 1 : 0]);
    valid_k = long(t.valid_[k_first ? 0 : 1]);
    valid_o = long(t.valid_[k_first ? 1 : 0]);
    words = s_k == 1 && (s_o % per_word) == 0 && (reinterpret_cast<unsigned long>(data) % 4) == 0;
  }
  // per_word consecutive K elements from k (k a multiple of per_word).
  ALLOY_FUNC uint32_t word(long o, long k, bool fast) const {
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

template <int Kind>
ALLOY_FUNC void mma(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (Kind == 1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (Kind == 2) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (Kind == 3) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else if constexpr (Kind == 4) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

// destination (+)= left * right for the descriptor's tile; false when this
// launch cannot take the tensor cores (the caller then runs the reference).
template <matmul2d_descriptor Desc, int NW, class LT, class RT, class DT>
ALLOY_FUNC bool run(const LT& left, const RT& right, DT& dest) {
  typedef typename LT::value_type L;
  typedef typename DT::value_type D;
  constexpr int kind = mma_kind<L, typename RT::value_type>::value;
  typedef warp_grid<Desc.m, Desc.n, NW> grid;
  if constexpr (kind == 0 || !grid::ok) {
    return false;
  } else {
    constexpr int KSTEP = kind <= 2 ? 16 : 32;
    constexpr int W = 4 / int(sizeof(L));  // K elements a register holds
    constexpr bool scaled = LT::scaled_ || RT::scaled_;
    constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
    // Scale blocks must line up with the K steps.
    if constexpr (LT::scaled_)
      if (left.scales_.origin0 % 32 != 0) return false;
    if constexpr (RT::scaled_)
      if (right.scales_.origin0 % 32 != 0) return false;
    unsigned index = 0, count = 1;
    ::alloy_msl::thread_in_threadgroup(index, count);
    const unsigned S = 32u * NW, first = index - index % S;
    if (count - first < S) return false;  // a partial scope
    const int warp = int(index % S) / 32, lane = int(index % 32);
    const int g = lane >> 2, t = lane & 3;
    const int m0 = (warp / grid::wn) * grid::fm * 16, n0 = (warp % grid::wn) * grid::fn * 8;

    // Left: (K, M), or (M, K) transposed; right: (N, K), or (K, N) transposed.
    const operand_view<L> A(left, !Desc.transpose_left);
    const operand_view<typename RT::value_type> B(right, Desc.transpose_right);
    long K = Desc.k;
    if constexpr (Desc.k == 0 || Desc.k == dynamic_length_v<int>)
      K = long(left.get_extent(Desc.transpose_left ? 1 : 0));
    const bool rows_in = A.words && m0 + grid::fm * 16 <= A.valid_o;
    const bool cols_in = B.words && n0 + grid::fn * 8 <= B.valid_o;

    float acc[grid::fm][grid::fn][4];
#pragma unroll
    for (int i = 0; i < grid::fm; ++i)
#pragma unroll
      for (int j = 0; j < grid::fn; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

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
        const long c = n0 + j * 8 + g;
        const long k = k0 + t * W;
        b[j][0] = B.word(c, k, fast_b);
        b[j][1] = B.word(c, k + KSTEP / 2, fast_b);
      }
      if constexpr (!scaled) {
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
    }

    // Element e of a fragment: row g (+ 8 for e >= 2), column 2t + (e & 1).
#pragma unroll
    for (int i = 0; i < grid::fm; ++i)
#pragma unroll
      for (int j = 0; j < grid::fn; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const long m = m0 + i * 16 + g + 8 * (e >> 1), n = n0 + j * 8 + 2 * t + (e & 1);
          if (m >= long(dest.valid_[1]) || n >= long(dest.valid_[0])) continue;
          float v = acc[i][j][e];
          if constexpr (accumulate) v += float(dest(n, m));
          dest(n, m) = D(v);
        }
    return true;
  }
}

}  // namespace detail::tc

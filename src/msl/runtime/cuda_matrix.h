// CUDA target: simdgroup_matrix<T, 8, 8> (half, bfloat, float).
//
// Storage follows the element-to-lane layout MLX's GEMMs rely on through
// thread_elements(): lane L holds row (L/4 & 4) + (L/2 % 4), columns
// (L/4 & 2) * 2 + (L % 2) * 2 and the next one. When no code names a lane's
// elements (ALLOY_MSL_MATRIX_MMA_LAYOUT, set by the translator), the layout
// is unobservable and the tensor cores' own is used instead: lane L holds row
// L/4, columns (L % 4) * 2 and the next one, which is mma.sync's accumulator
// and A-operand fragment, so a multiply needs no shuffles. Multiplication:
//  - half x half, bfloat x bfloat: mma.sync m16n8k8 on the tensor cores
//    (fp32 accumulation, rows 8-15 of A are zero); in Apple's layout the
//    operands move to the mma fragments with one shuffle each; B is
//    transposed by movmatrix in either layout;
//  - anything with float: exact fp32 FMAs over shuffled rows and columns
//    (the tensor cores' tf32 would round the inputs).
// As in Metal, every lane of the SIMD group must take part (a full warp).
#pragma once

namespace metal {

template <class T, int Rows, int Cols> struct simdgroup_matrix;

template <class T> struct simdgroup_matrix<T, 8, 8> {
  vec<T, 2> elements_;

  simdgroup_matrix() = default;
  // A diagonal matrix with `diag` on the diagonal.
  ALLOY_FUNC simdgroup_matrix(T diag);
  ALLOY_FUNC vec<T, 2>& thread_elements() { return elements_; }
  ALLOY_FUNC const vec<T, 2>& thread_elements() const { return elements_; }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

}  // namespace metal

namespace alloy_msl {
namespace cuda {
namespace matrix_detail {

#if ALLOY_MSL_MATRIX_MMA_LAYOUT
constexpr bool kMmaLayout = true;
// Row and first column of the two elements lane `l` holds.
ALLOY_FUNC unsigned row_of(unsigned l) { return l >> 2; }
ALLOY_FUNC unsigned col_of(unsigned l) { return (l & 3u) << 1; }
// The lane holding row `r`, columns 2p and 2p+1.
ALLOY_FUNC unsigned lane_of(unsigned r, unsigned p) { return (r << 2) | p; }
#else
constexpr bool kMmaLayout = false;
ALLOY_FUNC unsigned row_of(unsigned l) { return ((l >> 2) & 4u) + ((l >> 1) & 3u); }
ALLOY_FUNC unsigned col_of(unsigned l) { return (((l >> 2) & 2u) << 1) + ((l & 1u) << 1); }
ALLOY_FUNC unsigned lane_of(unsigned r, unsigned p) {
  return ((r & 4u) << 2) | ((p & 2u) << 2) | ((r & 3u) << 1) | (p & 1u);
}
#endif

template <class T> ALLOY_FUNC unsigned pack2(const metal::vec<T, 2>& e) { return __builtin_bit_cast(unsigned, e); }
template <class T> ALLOY_FUNC metal::vec<T, 2> unpack2(unsigned w) { return __builtin_bit_cast(metal::vec<T, 2>, w); }

// A lane's two elements sit side by side in a row; when the element types
// match and the pair is aligned, one load (store) of both halves the memory
// requests (2 x 16 bits -> 32 bits, 2 x 32 -> 64). The storage word of the
// pair is unsigned for 16-bit types, unsigned long long for 32-bit ones.
template <class T> struct pair_word {};
template <> struct pair_word<metal::half> { using type = unsigned; };
template <> struct pair_word<metal::bfloat> { using type = unsigned; };
template <> struct pair_word<float> { using type = unsigned long long; };
template <class T, class U> constexpr bool kPairMoves = metal::is_same_v<T, U> && (sizeof(T) == 2 || sizeof(T) == 4);
// Whether every lane's pair at src + (origin.y + r) * elements_per_row +
// origin.x + c (c even) is aligned for one wide move: a sufficient test on
// the matrix's terms, not on each lane's address, so it is the same for the
// whole SIMD group and, inside a loop over K tiles, the compiler can keep it
// out of the loop (an origin that steps by 8 stays even) and unroll.
template <class T> ALLOY_FUNC bool pairs_aligned(const T* src, metal::ulong elements_per_row, metal::ulong origin_x) {
  return ((reinterpret_cast<unsigned long long>(src) & (2 * sizeof(T) - 1)) | ((elements_per_row | origin_x) & 1u)) == 0;
}

// D = A * B + C on the tensor cores; A and B are 16-bit (half or bfloat).
template <class AB, class TD, class TC>
ALLOY_FUNC void mma16(metal::simdgroup_matrix<TD, 8, 8>& d, const metal::simdgroup_matrix<AB, 8, 8>& a,
                      const metal::simdgroup_matrix<AB, 8, 8>& b, const metal::simdgroup_matrix<TC, 8, 8>* c) {
  const unsigned full = 0xffffffffu, lane = lane_id();
  const unsigned src = lane_of(lane >> 2, lane & 3u);  // holder of mma fragment (row g, pair t)
  unsigned a0 = pack2(a.elements_), b_rows = pack2(b.elements_), b0;
  float c0 = 0.f, c1 = 0.f;
  if (c) c0 = float(c->elements_.x), c1 = float(c->elements_.y);
  if constexpr (!kMmaLayout) {
    a0 = __shfl_sync(full, a0, src);
    b_rows = __shfl_sync(full, b_rows, src);
    c0 = __shfl_sync(full, c0, src);
    c1 = __shfl_sync(full, c1, src);
  }
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(b0) : "r"(b_rows));
  float d0, d1, d2, d3;
  if constexpr (metal::is_same_v<AB, metal::half>) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a0), "r"(0u), "r"(b0), "f"(c0), "f"(c1), "f"(0.f), "f"(0.f));
  } else {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a0), "r"(0u), "r"(b0), "f"(c0), "f"(c1), "f"(0.f), "f"(0.f));
  }
  (void)d2;
  (void)d3;
  if constexpr (!kMmaLayout) {
    // Back to the storage layout: my elements sit in mma lane (row, pair).
    const unsigned back = row_of(lane) * 4u + (col_of(lane) >> 1);
    d0 = __shfl_sync(full, d0, back);
    d1 = __shfl_sync(full, d1, back);
  }
  d.elements_.x = TD(d0);
  d.elements_.y = TD(d1);
}

// D = A * B + C in exact fp32 FMAs.
template <class TA, class TB, class TD, class TC>
ALLOY_FUNC void fma_path(metal::simdgroup_matrix<TD, 8, 8>& d, const metal::simdgroup_matrix<TA, 8, 8>& a,
                         const metal::simdgroup_matrix<TB, 8, 8>& b, const metal::simdgroup_matrix<TC, 8, 8>* c) {
  const unsigned full = 0xffffffffu, lane = lane_id();
  const unsigned r = row_of(lane), col = col_of(lane);
  float acc0 = c ? float(c->elements_.x) : 0.f;
  float acc1 = c ? float(c->elements_.y) : 0.f;
  const float ax = float(a.elements_.x), ay = float(a.elements_.y);
  const float bx = float(b.elements_.x), by = float(b.elements_.y);
#pragma unroll
  for (unsigned p = 0; p < 4u; ++p) {
    const unsigned a_src = lane_of(r, p);
    const float a_k0 = __shfl_sync(full, ax, a_src), a_k1 = __shfl_sync(full, ay, a_src);
    const unsigned b_src0 = lane_of(2u * p, col >> 1), b_src1 = lane_of(2u * p + 1u, col >> 1);
    const float b00 = __shfl_sync(full, bx, b_src0), b01 = __shfl_sync(full, by, b_src0);
    const float b10 = __shfl_sync(full, bx, b_src1), b11 = __shfl_sync(full, by, b_src1);
    acc0 = __fmaf_rn(a_k0, b00, acc0);
    acc1 = __fmaf_rn(a_k0, b01, acc1);
    acc0 = __fmaf_rn(a_k1, b10, acc0);
    acc1 = __fmaf_rn(a_k1, b11, acc1);
  }
  d.elements_.x = TD(acc0);
  d.elements_.y = TD(acc1);
}

template <class TA, class TB, class TD, class TC>
ALLOY_FUNC void multiply(metal::simdgroup_matrix<TD, 8, 8>& d, const metal::simdgroup_matrix<TA, 8, 8>& a,
                         const metal::simdgroup_matrix<TB, 8, 8>& b, const metal::simdgroup_matrix<TC, 8, 8>* c) {
  constexpr bool tensor = metal::is_same_v<TA, TB> &&
                          (metal::is_same_v<TA, metal::half> || metal::is_same_v<TA, metal::bfloat>);
  if constexpr (tensor) {
    mma16(d, a, b, c);
  } else {
    fma_path(d, a, b, c);
  }
}

}  // namespace matrix_detail
}  // namespace cuda
}  // namespace alloy_msl

namespace metal {

template <class T>
ALLOY_FUNC simdgroup_matrix<T, 8, 8>::simdgroup_matrix(T diag) {
  const unsigned l = ::alloy_msl::cuda::lane_id();
  const unsigned r = ::alloy_msl::cuda::matrix_detail::row_of(l), c = ::alloy_msl::cuda::matrix_detail::col_of(l);
  elements_.x = r == c ? diag : T(0);
  elements_.y = r == c + 1u ? diag : T(0);
}

template <class T, int R = 8, int C = 8> ALLOY_FUNC simdgroup_matrix<T, R, C> make_filled_simdgroup_matrix(T value) {
  simdgroup_matrix<T, R, C> m;
  m.elements_ = vec<T, 2>(value);
  return m;
}


template <class T, class U>
ALLOY_FUNC void simdgroup_load(simdgroup_matrix<T, 8, 8>& d, const U* src, ulong elements_per_row = 8,
                               vec<ulong, 2> matrix_origin = vec<ulong, 2>(0), bool transpose_matrix = false) {
  namespace md = ::alloy_msl::cuda::matrix_detail;
  const unsigned l = ::alloy_msl::cuda::lane_id();
  const ulong r = md::row_of(l), c = md::col_of(l);
  const U* base = src + matrix_origin.y * elements_per_row + matrix_origin.x;
  if constexpr (md::kPairMoves<T, U>) {
    const U* p = base + r * elements_per_row + c;
    if (!transpose_matrix && md::pairs_aligned(src, elements_per_row, matrix_origin.x)) {
      using W = typename md::pair_word<T>::type;
      d.elements_ = __builtin_bit_cast(vec<T, 2>, *reinterpret_cast<const W*>(p));
      return;
    }
  }
  if (!transpose_matrix) {
    d.elements_.x = T(base[r * elements_per_row + c]);
    d.elements_.y = T(base[r * elements_per_row + c + 1]);
  } else {
    d.elements_.x = T(base[c * elements_per_row + r]);
    d.elements_.y = T(base[(c + 1) * elements_per_row + r]);
  }
}

template <class T, class U>
ALLOY_FUNC void simdgroup_store(const simdgroup_matrix<T, 8, 8>& a, U* dst, ulong elements_per_row = 8,
                                vec<ulong, 2> matrix_origin = vec<ulong, 2>(0), bool transpose_matrix = false) {
  namespace md = ::alloy_msl::cuda::matrix_detail;
  const unsigned l = ::alloy_msl::cuda::lane_id();
  const ulong r = md::row_of(l), c = md::col_of(l);
  U* base = dst + matrix_origin.y * elements_per_row + matrix_origin.x;
  if constexpr (md::kPairMoves<T, U>) {
    U* p = base + r * elements_per_row + c;
    if (!transpose_matrix && md::pairs_aligned(dst, elements_per_row, matrix_origin.x)) {
      using W = typename md::pair_word<T>::type;
      *reinterpret_cast<W*>(p) = __builtin_bit_cast(W, a.elements_);
      return;
    }
  }
  if (!transpose_matrix) {
    base[r * elements_per_row + c] = U(a.elements_.x);
    base[r * elements_per_row + c + 1] = U(a.elements_.y);
  } else {
    base[c * elements_per_row + r] = U(a.elements_.x);
    base[(c + 1) * elements_per_row + r] = U(a.elements_.y);
  }
}

template <class TD, class TA, class TB, class TC>
ALLOY_FUNC void simdgroup_multiply_accumulate(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                              const simdgroup_matrix<TB, 8, 8>& b,
                                              const simdgroup_matrix<TC, 8, 8>& c) {
  ::alloy_msl::cuda::matrix_detail::multiply(d, a, b, &c);
}
template <class TD, class TA, class TB>
ALLOY_FUNC void simdgroup_multiply(simdgroup_matrix<TD, 8, 8>& d, const simdgroup_matrix<TA, 8, 8>& a,
                                   const simdgroup_matrix<TB, 8, 8>& b) {
  ::alloy_msl::cuda::matrix_detail::multiply(d, a, b, static_cast<const simdgroup_matrix<TD, 8, 8>*>(nullptr));
}

}  // namespace metal

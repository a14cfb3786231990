// Metal 4 cooperative tensors (<metal_cooperative_tensor>) for matmul2d:
// a tile whose elements are spread over the threads of the op's execution
// scope, as Apple's destination tensors are; the layout is implementation
// defined there, and here it is:
//  - a destination tile (get_destination_cooperative_tensor): the thread of
//    scope lane l holds the elements at flat positions l, l + S, l + 2S...
//    of the tile, dimension 0 (the column) fastest; S threads in the scope;
//    On the CPU, a tile of one SIMD group whose shape splits into 16 x 16
//    fragments (destinations, and the left and right inputs) follows Apple's
//    layout (`apple_`), which MLX's NAX code (steel/gemm/nax.h get_coord)
//    and the kernels built on it (mtplx's NAX attention) fill by hand:
//    element i of lane l is element i % 8 of fragment i / 8 (fragments
//    row-major), at row fm + 8 ((i % 8) / 4) and column fn + i % 4 of the
//    fragment, where q = l / 4, fm = (q & 4) | ((l / 2) & 3) and
//    fn = 4 ((q & 2) | (l & 1));
//    On CUDA, a tile spread over one SIMD group whose shape splits into
//    16 x 8 fragments is laid out as mma.sync's accumulators instead
//    (`frag_`): element i of lane l is element i % 4 of fragment i / 4
//    (fragments row-major), at row 8 * ((i % 4) / 2) + l / 4 and column
//    2 * (l % 4) + i % 2 of the fragment, so the tensor cores write it and a
//    following matmul reads it as its left operand without moving it;
//    A row reduction of such a tile (`quad_rows`) keeps, in each lane, only
//    the rows its fragments hold: element i is row 16 (i / 2) + l / 4 +
//    8 (i % 2), so map_iterator from the tile is a register, not a lookup;
//  - a reduction destination (rows or columns) and an input tile (left or
//    right operand): every thread holds every element (replicated), so a
//    thread can read whatever its share of a matmul needs, and map_iterator
//    is a lookup.
// Reductions across the scope's threads use the SIMD-group functions, so a
// scope of one SIMD group (execution_simdgroup) or one thread is required,
// as in Metal. Included by metal_tensor.h inside namespace mpp::tensor_ops.
#pragma once

namespace detail {

// This thread's lane within its scope of S threads (threads are dealt to
// scopes by their index in the threadgroup, as matmul2d's rows are).
ALLOY_FUNC unsigned scope_lane(unsigned S) {
  if (S <= 1) return 0;
  unsigned index = 0, count = 1;
  ::alloy_msl::thread_in_threadgroup(index, count);
  return index % S;
}

enum class tile_kind { spread, replicated_rows, replicated_columns, replicated, quad_rows };

}  // namespace detail

enum class reduction_operation { sum, max, min };

template <class E, int Cols, int Rows, int S, detail::tile_kind Kind> struct cooperative_tensor;

namespace detail {
template <class T> inline constexpr bool is_cooperative_v = false;
template <class E, int C, int R, int S, tile_kind K>
inline constexpr bool is_cooperative_v<cooperative_tensor<E, C, R, S, K>> = true;
// A tile spread over its scope's threads (a destination), not a tensor.
template <class T> inline constexpr bool is_spread_v = false;
template <class E, int C, int R, int S, tile_kind K>
inline constexpr bool is_spread_v<cooperative_tensor<E, C, R, S, K>> = K == tile_kind::spread;
}  // namespace detail

template <class E, int Cols, int Rows, int S, detail::tile_kind Kind> struct cooperative_tensor {
  typedef E element_type;
  typedef E value_type;
  static constexpr int cols_ = Cols, rows_ = Rows, scope_ = S;
  static constexpr int size_ = Cols * Rows;
  static constexpr bool spread_ = Kind == detail::tile_kind::spread;
  static constexpr int stride_ = spread_ ? S : 1;  // flat distance between a thread's elements
  static constexpr bool quad_rows_ = Kind == detail::tile_kind::quad_rows;
  static_assert(!quad_rows_ || (S == 32 && Cols == 1 && Rows % 16 == 0), "cooperative_tensor: quad rows tile shape");
  static constexpr int capacity_ = quad_rows_ ? Rows / 8 : (size_ + stride_ - 1) / stride_;
#if defined(__CUDACC__)
  static constexpr bool frag_ = spread_ && S == 32 && Rows % 16 == 0 && Cols % 8 == 0;
  static constexpr bool apple_ = false;
#else
  static constexpr bool frag_ = false;
  static constexpr bool apple_ = spread_ && S == 32 && Rows % 16 == 0 && Cols % 16 == 0;
#endif
  // Each lane's elements at positions a function of (lane, index) gives.
  static constexpr bool lane_mapped_ = frag_ || apple_;

  E v_[capacity_];
  unsigned lane_ = 0;

  ALLOY_FUNC cooperative_tensor() : lane_(spread_ || quad_rows_ ? detail::scope_lane(S) : 0u) {
    ALLOY_LOOP_UNROLL
    for (int i = 0; i < capacity_; ++i) v_[i] = E(0);
  }

  // ---- elements this thread holds
  ALLOY_FUNC static constexpr int get_capacity() { return capacity_; }
  ALLOY_FUNC int flat(int i) const {
    if constexpr (quad_rows_) return quad_row(i);
    if constexpr (lane_mapped_) {
      const metal::array<int, 2> idx = index_of(i, lane_);
      return idx[1] * Cols + idx[0];
    }
    return int(lane_) + i * stride_;
  }
  ALLOY_FUNC bool is_valid_element(int i) const { return i >= 0 && i < capacity_ && flat(i) < size_; }
  ALLOY_FUNC bool get_mask(int i) const { return is_valid_element(i); }
  ALLOY_FUNC E& operator[](int i) { return v_[i]; }
  ALLOY_FUNC const E& operator[](int i) const { return v_[i]; }
  ALLOY_FUNC E get(int i) const { return v_[i]; }
  ALLOY_FUNC void set(int i, E v) { v_[i] = v; }
  // The element's index in dimension order: [0] the column, [1] the row.
  ALLOY_FUNC metal::array<int, 2> get_multidimensional_index(int i) const {
    if constexpr (lane_mapped_) return index_of(i, lane_);
    if constexpr (quad_rows_) {
      metal::array<int, 2> idx;
      idx[0] = 0;
      idx[1] = quad_row(i);
      return idx;
    }
    metal::array<int, 2> idx;
    idx[0] = flat(i) % Cols;
    idx[1] = flat(i) / Cols;
    return idx;
  }
  // (column, row) of element i of `lane` in the accumulator layout (frag_)
  // or Apple's (apple_).
  ALLOY_FUNC static metal::array<int, 2> index_of(int i, unsigned lane) {
    metal::array<int, 2> idx;
    if constexpr (apple_) {
      const int f = i >> 3, e = i & 7, q = int(lane >> 2);
      idx[0] = (f % (Cols / 16)) * 16 + ((q & 2) | int(lane & 1u)) * 4 + (e & 3);
      idx[1] = (f / (Cols / 16)) * 16 + ((q & 4) | int((lane >> 1) & 3u)) + 8 * (e >> 2);
    } else {
      const int f = i >> 2, e = i & 3;
      idx[0] = (f % (Cols / 8)) * 8 + 2 * int(lane & 3u) + (e & 1);
      idx[1] = (f / (Cols / 8)) * 16 + int(lane >> 2) + 8 * (e >> 1);
    }
    return idx;
  }
  // The row of element i of a quad_rows tile.
  ALLOY_FUNC int quad_row(int i) const { return (i >> 1) * 16 + int(lane_ >> 2) + 8 * (i & 1); }
  // How many valid elements this thread holds (they come first).
  ALLOY_FUNC int valid_count() const {
    if constexpr (lane_mapped_ || quad_rows_) return capacity_;
    return int(lane_) < size_ ? (size_ - int(lane_) + stride_ - 1) / stride_ : 0;
  }
  // The element at (column, row) of a tile every thread holds whole.
  ALLOY_FUNC E at(long col, long row) const {
    static_assert(!spread_ && !quad_rows_, "cooperative_tensor: only a replicated tile reads any element");
    return v_[row * Cols + col];
  }

  // ---- iteration over the valid elements
  struct iterator {
    static constexpr bool frag = frag_;
    static constexpr int cols = Cols;
    cooperative_tensor* t;
    int i;
    ALLOY_FUNC E& operator*() const { return t->v_[i]; }
    ALLOY_FUNC iterator& operator++() {
      ++i;
      return *this;
    }
    ALLOY_FUNC iterator operator++(int) {
      iterator before = *this;
      ++i;
      return before;
    }
    ALLOY_FUNC bool operator==(const iterator& o) const { return i == o.i; }
    ALLOY_FUNC bool operator!=(const iterator& o) const { return i != o.i; }
    ALLOY_FUNC int get_index() const { return i; }
    ALLOY_FUNC metal::array<int, 2> get_multidimensional_index() const { return t->get_multidimensional_index(i); }
  };
  ALLOY_FUNC iterator begin() { return iterator{this, 0}; }
  ALLOY_FUNC iterator end() { return iterator{this, valid_count()}; }
  ALLOY_FUNC iterator get_iterator(int i) { return iterator{this, i}; }
  // For a reduction destination: the element holding the reduced value of
  // the row (or column) of `it`'s element.
  template <class It> ALLOY_FUNC iterator map_iterator(const It& it) {
    static_assert(Kind == detail::tile_kind::replicated_rows || Kind == detail::tile_kind::replicated_columns ||
                      quad_rows_,
                  "cooperative_tensor::map_iterator: only a row or column reduction destination maps iterators");
    if constexpr (quad_rows_) {
      static_assert(It::frag, "cooperative_tensor::map_iterator: this row reduction maps iterators of its own op's "
                              "destination tile only");
      // Fragment f = i / 4 is in band f / (cols / 8); element i % 4 in its upper (8..15) rows when >= 2.
      return iterator{this, ((it.i >> 2) / (It::cols / 8)) * 2 + ((it.i & 3) >> 1)};
    }
    const metal::array<int, 2> idx = it.get_multidimensional_index();
    return iterator{this, Kind == detail::tile_kind::replicated_rows ? idx[1] : idx[0]};
  }

  // ---- every thread of the scope loads or stores its own elements; an
  // extent of 1 in the tensor broadcasts along that dimension, and elements
  // outside it read as 0 and are not written.
  template <class T> ALLOY_FUNC void load(const T& t) {
    ALLOY_LOOP_UNROLL
    for (int i = 0; i < valid_count(); ++i) {
      const metal::array<int, 2> idx = get_multidimensional_index(i);
      v_[i] = E(t.load(t.get_extent(0) == 1 ? 0 : idx[0], t.get_extent(1) == 1 ? 0 : idx[1]));
    }
  }
  template <class T> ALLOY_FUNC void store(const T& t) const {
    ALLOY_LOOP_UNROLL
    for (int i = 0; i < valid_count(); ++i) {
      const metal::array<int, 2> idx = get_multidimensional_index(i);
      t.store(v_[i], idx[0], idx[1]);
    }
  }
};

namespace detail {

template <class E> ALLOY_FUNC E combine(reduction_operation op, E a, E b) {
  if (op == reduction_operation::sum) return E(a + b);
  if constexpr (metal::is_same_v<E, float>)  // one instruction (FMNMX), not a compare and a select
    return op == reduction_operation::max ? metal::fmax(a, b) : metal::fmin(a, b);
  if (op == reduction_operation::max) return b > a ? b : a;
  return b < a ? b : a;
}
// The value every lane starts from, so that the lanes' combination counts
// each element once.
template <class E> ALLOY_FUNC E neutral(reduction_operation op) {
  if (op == reduction_operation::sum) return E(0);
  if constexpr (metal::numeric_limits<E>::has_infinity) {
    return op == reduction_operation::max ? -metal::numeric_limits<E>::infinity()
                                          : metal::numeric_limits<E>::infinity();
  } else {
    return op == reduction_operation::max ? metal::numeric_limits<E>::lowest() : metal::numeric_limits<E>::max();
  }
}
template <class E> ALLOY_FUNC E across_scope(reduction_operation op, E v, int S) {
  if (S == 1) return v;
  if (op == reduction_operation::sum) return metal::simd_sum(v);
  if (op == reduction_operation::max) return metal::simd_max(v);
  return metal::simd_min(v);
}

// The values of `src` along its rows (by_rows) or columns, each combined
// once with `identity` (Metal's default is the sum's identity, 0, for every
// operation), into `dst`.
template <bool by_rows, class Src, class Dst>
ALLOY_FUNC void reduce_tile(const Src& src, Dst& dst, reduction_operation op, typename Dst::value_type identity) {
  typedef typename Dst::value_type D;
  static_assert(Src::scope_ == 1 || Src::scope_ == 32,
                "reduce_rows/reduce_columns: reductions run at execution_thread or execution_simdgroup scope");
  constexpr int lines = by_rows ? Src::rows_ : Src::cols_;
  static_assert(Dst::size_ == lines, "reduce_rows/reduce_columns: the destination must have one element per line");
  static_assert(!Dst::quad_rows_ || (by_rows && Src::frag_),
                "reduce_rows: this row reduction destination takes its own op's destination tile only");
  if constexpr (by_rows && Src::frag_) {
    // The accumulator layout: a lane holds 2 x (columns / 8) elements of
    // rows g and g + 8 of each 16-row band; fold them, then the 4 lanes of
    // the quad that share those rows. A quad_rows destination keeps them
    // there; a replicated one gets each row's value from its quad.
    constexpr int FM = Src::rows_ / 16, FN = Src::cols_ / 8;
    D part[FM][2];
    ALLOY_LOOP_UNROLL
    for (int fi = 0; fi < FM; ++fi)
      ALLOY_LOOP_UNROLL
      for (int h = 0; h < 2; ++h) {
        // Pairwise, so the combines of a row form a tree of depth log2(2 FN)
        // rather than a chain of 2 FN.
        D vals[2 * FN];
        ALLOY_LOOP_UNROLL
        for (int fj = 0; fj < FN; ++fj)
          ALLOY_LOOP_UNROLL
          for (int c = 0; c < 2; ++c) vals[2 * fj + c] = D(src.v_[(fi * FN + fj) * 4 + 2 * h + c]);
        ALLOY_LOOP_UNROLL
        for (int width = 1; width < 2 * FN; width *= 2)
          ALLOY_LOOP_UNROLL
          for (int i = 0; i + width < 2 * FN; i += 2 * width) vals[i] = combine(op, vals[i], vals[i + width]);
        D acc = vals[0];
        acc = combine(op, acc, metal::simd_shuffle_xor(acc, (unsigned short)1));
        part[fi][h] = combine(op, acc, metal::simd_shuffle_xor(acc, (unsigned short)2));
      }
    if constexpr (Dst::quad_rows_) {
      ALLOY_LOOP_UNROLL
      for (int fi = 0; fi < FM; ++fi)
        ALLOY_LOOP_UNROLL
        for (int h = 0; h < 2; ++h) dst.v_[fi * 2 + h] = combine(op, identity, part[fi][h]);
    } else {
      ALLOY_LOOP_UNROLL
      for (int row = 0; row < lines; ++row)
        dst.v_[row] = combine(op, identity,
                              metal::simd_shuffle(part[row / 16][(row % 16) / 8], (unsigned short)((row % 8) * 4)));
    }
    return;
  }
  for (int line = 0; line < lines; ++line) {
    D acc = neutral<D>(op);
    for (int i = 0; i < src.valid_count(); ++i) {
      const metal::array<int, 2> idx = src.get_multidimensional_index(i);
      if ((by_rows ? idx[1] : idx[0]) == line) acc = combine(op, acc, D(src.v_[i]));
    }
    dst.v_[line] = combine(op, identity, across_scope(op, acc, Src::scope_));
  }
}

}  // namespace detail

template <class Src, class Dst>
ALLOY_FUNC void reduce_rows(const Src& src, Dst& dst, reduction_operation op = reduction_operation::sum,
                            typename Dst::value_type identity = typename Dst::value_type(0)) {
  detail::reduce_tile<true>(src, dst, op, identity);
}
template <class Src, class Dst>
ALLOY_FUNC void reduce_columns(const Src& src, Dst& dst, reduction_operation op = reduction_operation::sum,
                               typename Dst::value_type identity = typename Dst::value_type(0)) {
  detail::reduce_tile<false>(src, dst, op, identity);
}

// Shared by both targets: MSL's matrix types, `matrix<T, Cols, Rows>` and the
// `floatCxR` / `halfCxR` / `bfloatCxR` names (C columns of R rows, 2..4
// each), stored as C column vectors as in Metal: `m[i]` is column i.
// Constructors take a scalar for the diagonal, C columns, or C * R scalars
// in column order; `*` is the linear-algebra product (matrix-vector,
// vector-matrix, matrix-matrix), `+` and `-` are per element, a scalar
// scales; transpose() and determinant() (square matrices) are the functions.
#pragma once

#include "metal_vector.h"

namespace metal {

template <class T, int C, int R> struct matrix {
  static_assert(C >= 2 && C <= 4 && R >= 2 && R <= 4, "matrix: 2 to 4 columns of 2 to 4 rows");
  typedef vec<T, R> column_type;
  column_type columns[C];

  matrix() = default;
  // The scalar on the diagonal, zero elsewhere.
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0> ALLOY_FUNC constexpr explicit matrix(U s) {
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) columns[c].at(r) = c == r ? T(s) : T(0);
  }
  // C columns.
  template <class... V, enable_if_t<sizeof...(V) == C && (is_same_v<V, column_type> && ...), int> = 0>
  ALLOY_FUNC constexpr matrix(const V&... cols) : columns{cols...} {}
  // C * R scalars, column after column.
  template <class... S, enable_if_t<sizeof...(S) == C * R && C * R != 1 && (is_arithmetic_v<S> && ...), int> = 0>
  ALLOY_FUNC constexpr matrix(S... s) {
    const T e[] = {T(s)...};
    for (int c = 0; c < C; ++c)
      for (int r = 0; r < R; ++r) columns[c].at(r) = e[c * R + r];
  }
  template <class U, enable_if_t<!is_same_v<U, T>, int> = 0>
  ALLOY_FUNC constexpr explicit matrix(const matrix<U, C, R>& o) {
    for (int c = 0; c < C; ++c) columns[c] = column_type(o.columns[c]);
  }

  ALLOY_FUNC constexpr column_type& operator[](int c) { return columns[c]; }
  ALLOY_FUNC constexpr const column_type& operator[](int c) const { return columns[c]; }

  friend ALLOY_FUNC constexpr matrix operator+(matrix a, const matrix& b) {
    for (int c = 0; c < C; ++c) a.columns[c] += b.columns[c];
    return a;
  }
  friend ALLOY_FUNC constexpr matrix operator-(matrix a, const matrix& b) {
    for (int c = 0; c < C; ++c) a.columns[c] -= b.columns[c];
    return a;
  }
  friend ALLOY_FUNC constexpr matrix operator-(matrix a) {
    for (int c = 0; c < C; ++c) a.columns[c] = -a.columns[c];
    return a;
  }
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>
  friend ALLOY_FUNC constexpr matrix operator*(matrix a, U s) {
    for (int c = 0; c < C; ++c) a.columns[c] *= column_type(T(s));
    return a;
  }
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0>
  friend ALLOY_FUNC constexpr matrix operator*(U s, const matrix& a) {
    return a * s;
  }
  // m * v: the columns weighted by v's components.
  friend ALLOY_FUNC constexpr column_type operator*(const matrix& m, const vec<T, C>& v) {
    column_type r = m.columns[0] * column_type(v.at(0));
    for (int c = 1; c < C; ++c) r += m.columns[c] * column_type(v.at(c));
    return r;
  }
  // v * m: v dotted with each column.
  friend ALLOY_FUNC constexpr vec<T, C> operator*(const column_type& v, const matrix& m) {
    vec<T, C> r;
    for (int c = 0; c < C; ++c) {
      T s = v.at(0) * m.columns[c].at(0);
      for (int k = 1; k < R; ++k) s += v.at(k) * m.columns[c].at(k);
      r.at(c) = s;
    }
    return r;
  }
  // (C x R) * (K x C) -> K x R: each column of b mapped through a.
  template <int K> friend ALLOY_FUNC constexpr matrix<T, K, R> operator*(const matrix& a, const matrix<T, K, C>& b) {
    matrix<T, K, R> r;
    for (int k = 0; k < K; ++k) r.columns[k] = a * b.columns[k];
    return r;
  }
  ALLOY_FUNC constexpr matrix& operator+=(const matrix& b) { return *this = *this + b; }
  ALLOY_FUNC constexpr matrix& operator-=(const matrix& b) { return *this = *this - b; }
  template <class U, enable_if_t<is_arithmetic_v<U>, int> = 0> ALLOY_FUNC constexpr matrix& operator*=(U s) {
    return *this = *this * s;
  }
  ALLOY_FUNC constexpr matrix& operator*=(const matrix<T, C, C>& b) { return *this = *this * b; }
};

template <class T, int C, int R> ALLOY_FUNC constexpr matrix<T, R, C> transpose(const matrix<T, C, R>& m) {
  matrix<T, R, C> t;
  for (int c = 0; c < C; ++c)
    for (int r = 0; r < R; ++r) t.columns[r].at(c) = m.columns[c].at(r);
  return t;
}

template <class T> ALLOY_FUNC constexpr T determinant(const matrix<T, 2, 2>& m) {
  return m[0][0] * m[1][1] - m[1][0] * m[0][1];
}
template <class T> ALLOY_FUNC constexpr T determinant(const matrix<T, 3, 3>& m) {
  return m[0][0] * (m[1][1] * m[2][2] - m[2][1] * m[1][2]) - m[1][0] * (m[0][1] * m[2][2] - m[2][1] * m[0][2]) +
         m[2][0] * (m[0][1] * m[1][2] - m[1][1] * m[0][2]);
}
// Laplace expansion along the first column, over its 3 x 3 minors.
template <class T> ALLOY_FUNC constexpr T determinant(const matrix<T, 4, 4>& m) {
  T d = T(0);
  for (int r = 0; r < 4; ++r) {
    matrix<T, 3, 3> minor;
    for (int c = 1; c < 4; ++c)
      for (int k = 0, rr = 0; k < 4; ++k)
        if (k != r) minor.columns[c - 1].at(rr++) = m.columns[c].at(k);
    const T term = m.columns[0].at(r) * determinant(minor);
    d = (r % 2 == 0) ? T(d + term) : T(d - term);
  }
  return d;
}

#define ALLOY_MATRIX_NAMES(T)                                                                      \
  typedef matrix<T, 2, 2> T##2x2;                                                                  \
  typedef matrix<T, 2, 3> T##2x3;                                                                  \
  typedef matrix<T, 2, 4> T##2x4;                                                                  \
  typedef matrix<T, 3, 2> T##3x2;                                                                  \
  typedef matrix<T, 3, 3> T##3x3;                                                                  \
  typedef matrix<T, 3, 4> T##3x4;                                                                  \
  typedef matrix<T, 4, 2> T##4x2;                                                                  \
  typedef matrix<T, 4, 3> T##4x3;                                                                  \
  typedef matrix<T, 4, 4> T##4x4;
ALLOY_MATRIX_NAMES(float)
ALLOY_MATRIX_NAMES(half)
ALLOY_MATRIX_NAMES(bfloat)
#undef ALLOY_MATRIX_NAMES

}  // namespace metal

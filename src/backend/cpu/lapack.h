// Typed wrappers over the Fortran LAPACK routines that OpenBLAS exports
// (sgetrf_ etc.; Debian's libopenblas carries LAPACK but not LAPACKE), and
// helpers that move batches of matrices between Alloy's row-major arrays
// and LAPACK's column-major buffers.
#pragma once

#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "alloy/array.h"

namespace alloy::lapack {

template <typename U>
struct real_of {
  using type = U;
};
template <typename R>
struct real_of<std::complex<R>> {
  using type = R;
};
template <typename U>
using real_t = typename real_of<U>::type;
template <typename U>
constexpr bool is_complex_v = !std::is_same_v<U, real_t<U>>;

// Each returns LAPACK's info (0: success; < 0: a bad argument; > 0: routine-specific).
template <typename U>
int potrf(char uplo, int n, U* a, int lda);
template <typename U>
int getrf(int m, int n, U* a, int lda, int* ipiv);
template <typename U>
int getri(int n, U* a, int lda, const int* ipiv);
template <typename U>
int trtri(char uplo, int n, U* a, int lda);
// Householder QR of a (m x n), then Q's first k columns formed in place of a.
template <typename U>
int geqrf(int m, int n, U* a, int lda, U* tau);
template <typename U>
int orgqr(int m, int n, int k, U* a, int lda, const U* tau);
// jobz 'A' (all of U and Vt) or 'N' (values only); a is overwritten.
template <typename U>
int gesdd(char jobz, int m, int n, U* a, int lda, real_t<U>* s, U* u, int ldu, U* vt, int ldvt);
// Complex types only: eigenvalues w, right vectors vr when jobvr == 'V'.
template <typename U>
int geev(char jobvr, int n, U* a, int lda, U* w, U* vr, int ldvr);
// Real types: eigenvalues as real and imaginary parts; vr packs a complex
// pair's vectors in two columns (re, im), the first of the pair having +im.
template <typename R>
int geev_real(char jobvr, int n, R* a, int lda, R* wr, R* wi, R* vr, int ldvr);
// syevd for real types, heevd for complex ones.
template <typename U>
int syevd(char jobz, char uplo, int n, U* a, int lda, real_t<U>* w);

// A batch of matrices (the last two axes of an array) as column-major buffers
// in type U: matrix i starts at data[i * rows * cols], leading dimension rows.
template <typename U>
struct ColMajorBatch {
  std::vector<U> data;
  int rows = 0, cols = 0;
  size_t count = 0;
  U* matrix(size_t i) { return data.data() + i * static_cast<size_t>(rows) * cols; }
};

// Reads `in` (any strides, any dtype castable to U).
template <typename U>
ColMajorBatch<U> load(const array& in);

// Row-major output staging in type U, cast into the output's dtype at the end.
template <typename U>
struct RowMajorOut {
  std::vector<U> data;
  int rows = 0, cols = 0;
  RowMajorOut(size_t count, int r, int c) : data(count * static_cast<size_t>(r) * c), rows(r), cols(c) {}
  // Copies the rows x cols block of a column-major matrix with leading dimension ld.
  void put(size_t i, const U* col_major, int ld) {
    U* dst = data.data() + i * static_cast<size_t>(rows) * cols;
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c)
        dst[static_cast<size_t>(r) * cols + c] = col_major[r + static_cast<size_t>(c) * ld];
  }
  U* matrix(size_t i) { return data.data() + i * static_cast<size_t>(rows) * cols; }
};

// Allocates `out` on the host and casts `values` (out.size() of them) into it.
template <typename U>
void store(const std::vector<U>& values, array& out);

// Throws std::runtime_error "[op] routine failed with info N" for info < 0
// (a bug here, never the user's input).
void check_info(int info, const char* op, const char* routine);

}  // namespace alloy::lapack

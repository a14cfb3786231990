// CPU evals of the factorization primitives: each matrix of the batch is
// copied to a column-major buffer, factored by LAPACK, and written back
// row-major (lapack.h). Shapes and dtypes were checked by the ops.
#include "primitives/linalg_decomp.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "backend/cpu/lapack.h"

namespace alloy {

namespace {

using lapack::real_t;

// Calls f(U{}) with the LAPACK type for `d`: float32/float64 always,
// complex64 when `AllowComplex`; anything else is a bug in the op's checks.
// A template parameter, so ops without a complex path never instantiate one
// (lapack.cpp has no complex potrf/getrf/...; only -O3 drops such dead calls).
template <bool AllowComplex, typename F>
void dispatch_lapack(Dtype d, const char* op, F&& f) {
  dispatch_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      f(T{});
    } else if constexpr (std::is_same_v<T, complex64_t>) {
      if constexpr (AllowComplex) {
        f(T{});
      } else {
        throw std::invalid_argument(std::string("[") + op + "] complex inputs are not supported.");
      }
    } else {
      throw std::invalid_argument(std::string("[") + op + "] unsupported dtype reached the CPU kernel.");
    }
  });
}

// Zeroes the strict upper (keep_lower) or strict lower triangle of an n x n column-major matrix.
template <typename U>
void zero_triangle(U* a, int n, bool keep_lower) {
  for (int c = 0; c < n; ++c)
    for (int r = 0; r < n; ++r)
      if (keep_lower ? r < c : r > c) a[r + static_cast<size_t>(c) * n] = U(0);
}

template <typename U>
void set_identity(U* a, int n) {
  std::fill(a, a + static_cast<size_t>(n) * n, U(0));
  for (int i = 0; i < n; ++i) a[i + static_cast<size_t>(i) * n] = U(1);
}

// The iterative routines (gesdd, geev, syevd) reject NaN and infinity as an
// "illegal argument" and print LAPACK's complaint to stderr; this says it plainly first.
template <typename U>
void require_finite(const lapack::ColMajorBatch<U>& b, const char* op) {
  for (const U& v : b.data) {
    if (!std::isfinite(std::real(v)) || !std::isfinite(std::imag(v))) {
      throw std::runtime_error(std::string("[") + op + "] The input contains NaN or infinity.");
    }
  }
}

}  // namespace

void Cholesky::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_lapack<false>(inputs[0].dtype(), "linalg::cholesky", [&](auto tag) {
    using U = decltype(tag);
    auto b = lapack::load<U>(inputs[0]);
    const int n = b.rows;
    lapack::RowMajorOut<U> out(b.count, n, n);
    for (size_t i = 0; i < b.count && n > 0; ++i) {
      U* a = b.matrix(i);
      // Not positive definite (info > 0): the factor is left partial, as MLX
      // and LAPACK leave it; no exception (MLX raises none either).
      lapack::check_info(lapack::potrf<U>(upper_ ? 'U' : 'L', n, a, n), "linalg::cholesky", "potrf");
      zero_triangle(a, n, !upper_);
      out.put(i, a, n);
    }
    lapack::store(out.data, outputs[0]);
  });
}

void Inverse::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const char* op = triangular_ ? "linalg::tri_inv" : "linalg::inv";
  dispatch_lapack<false>(inputs[0].dtype(), op, [&](auto tag) {
    using U = decltype(tag);
    auto b = lapack::load<U>(inputs[0]);
    const int n = b.rows;
    lapack::RowMajorOut<U> out(b.count, n, n);
    std::vector<int> ipiv(std::max(n, 1));
    for (size_t i = 0; i < b.count && n > 0; ++i) {
      U* a = b.matrix(i);
      int info;
      if (triangular_) {
        info = lapack::trtri<U>(upper_ ? 'U' : 'L', n, a, n);
        lapack::check_info(info, op, "trtri");
        zero_triangle(a, n, !upper_);  // trtri leaves the unread triangle as it was
      } else {
        info = lapack::getrf<U>(n, n, a, n, ipiv.data());
        lapack::check_info(info, op, "getrf");
        if (info == 0) {
          info = lapack::getri<U>(n, a, n, ipiv.data());
          lapack::check_info(info, op, "getri");
        }
      }
      if (info > 0) {
        throw std::runtime_error(std::string("[") + op + "] The matrix is singular (pivot " + std::to_string(info - 1) +
                                 " is exactly zero); it has no inverse.");
      }
      out.put(i, a, n);
    }
    lapack::store(out.data, outputs[0]);
  });
}

void LUF::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_lapack<false>(inputs[0].dtype(), "linalg::lu_factor", [&](auto tag) {
    using U = decltype(tag);
    auto b = lapack::load<U>(inputs[0]);
    const int m = b.rows, n = b.cols, k = std::min(m, n);
    lapack::RowMajorOut<U> lu(b.count, m, n);
    std::vector<uint32_t> pivots(b.count * k), perm_inv(b.count * m);
    std::vector<int> ipiv(std::max(k, 1));
    std::vector<uint32_t> perm(m);
    for (size_t i = 0; i < b.count; ++i) {
      std::iota(perm.begin(), perm.end(), 0u);
      if (k > 0) {
        U* a = b.matrix(i);
        // info > 0 (an exact zero pivot) still gives a valid factorization.
        lapack::check_info(lapack::getrf<U>(m, n, a, m, ipiv.data()), "linalg::lu_factor", "getrf");
        lu.put(i, a, m);
        for (int j = 0; j < k; ++j) {
          pivots[i * k + j] = static_cast<uint32_t>(ipiv[j] - 1);  // LAPACK counts from 1
          std::swap(perm[j], perm[ipiv[j] - 1]);
        }
      }
      // perm[r]: the row of `a` at row r of L U; P inverts it so (L U)[P] == a.
      for (int r = 0; r < m; ++r) perm_inv[i * m + perm[r]] = static_cast<uint32_t>(r);
    }
    lapack::store(lu.data, outputs[0]);
    lapack::store(pivots, outputs[1]);
    lapack::store(perm_inv, outputs[2]);
  });
}

void QRF::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_lapack<false>(inputs[0].dtype(), "linalg::qr", [&](auto tag) {
    using U = decltype(tag);
    auto b = lapack::load<U>(inputs[0]);
    const int m = b.rows, n = b.cols, k = std::min(m, n);
    lapack::RowMajorOut<U> q(b.count, m, k), r(b.count, k, n);
    std::vector<U> tau(std::max(k, 1));
    for (size_t i = 0; i < b.count && k > 0; ++i) {
      U* a = b.matrix(i);
      lapack::check_info(lapack::geqrf<U>(m, n, a, m, tau.data()), "linalg::qr", "geqrf");
      U* ri = r.matrix(i);
      for (int row = 0; row < k; ++row)
        for (int c = 0; c < n; ++c)
          ri[static_cast<size_t>(row) * n + c] = c >= row ? a[row + static_cast<size_t>(c) * m] : U(0);
      lapack::check_info(lapack::orgqr<U>(m, k, k, a, m, tau.data()), "linalg::qr", "orgqr");
      q.put(i, a, m);
    }
    lapack::store(q.data, outputs[0]);
    lapack::store(r.data, outputs[1]);
  });
}

void SVD::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_lapack<true>(inputs[0].dtype(), "linalg::svd", [&](auto tag) {
    using U = decltype(tag);
    using R = real_t<U>;
    auto b = lapack::load<U>(inputs[0]);
    require_finite(b, "linalg::svd");
    const int m = b.rows, n = b.cols, k = std::min(m, n);
    std::vector<R> s(b.count * k);
    lapack::RowMajorOut<U> uo(compute_uv_ ? b.count : 0, m, m), vo(compute_uv_ ? b.count : 0, n, n);
    std::vector<U> u(compute_uv_ ? std::max<size_t>(static_cast<size_t>(m) * m, 1) : 1);
    std::vector<U> vt(compute_uv_ ? std::max<size_t>(static_cast<size_t>(n) * n, 1) : 1);
    for (size_t i = 0; i < b.count; ++i) {
      if (k == 0) {  // nothing to factor: any orthonormal bases will do
        if (compute_uv_) {
          set_identity(u.data(), m);
          set_identity(vt.data(), n);
          uo.put(i, u.data(), m);
          vo.put(i, vt.data(), n);
        }
        continue;
      }
      const int info =
          lapack::gesdd<U>(compute_uv_ ? 'A' : 'N', m, n, b.matrix(i), m, s.data() + i * k, u.data(), m, vt.data(), n);
      lapack::check_info(info, "linalg::svd", "gesdd");
      if (info > 0) throw std::runtime_error("[linalg::svd] The SVD did not converge.");
      if (compute_uv_) {
        uo.put(i, u.data(), m);
        vo.put(i, vt.data(), n);
      }
    }
    if (compute_uv_) {
      lapack::store(uo.data, outputs[0]);
      lapack::store(s, outputs[1]);
      lapack::store(vo.data, outputs[2]);
    } else {
      lapack::store(s, outputs[0]);
    }
  });
}

namespace {
// A real matrix's eigenproblem through the real geev, as MLX and numpy solve
// it: exact zero imaginary parts for real eigenvalues, conjugate pairs
// exactly conjugate, and numpy's order (a complex geev on a widened copy
// gives none of these; MLX's bundled OpenBLAS may order them otherwise).
// Vectors unpack from LAPACK's real packing.
void eig_of_real(bool compute_vectors, const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_lapack<false>(inputs[0].dtype(), "linalg::eig", [&](auto tag) {
    using R = decltype(tag);
    using C = std::complex<R>;
    auto b = lapack::load<R>(inputs[0]);
    require_finite(b, "linalg::eig");
    const int n = b.rows;
    const size_t nn = static_cast<size_t>(n) * n;
    std::vector<C> w(b.count * n);
    std::vector<R> wr(std::max(n, 1)), wi(std::max(n, 1));
    std::vector<R> vr(compute_vectors ? std::max<size_t>(nn, 1) : 1);
    lapack::RowMajorOut<C> vo(compute_vectors ? b.count : 0, n, n);
    std::vector<C> vc(compute_vectors ? nn : 0);
    for (size_t i = 0; i < b.count && n > 0; ++i) {
      const int info = lapack::geev_real<R>(compute_vectors ? 'V' : 'N', n, b.matrix(i), n, wr.data(), wi.data(),
                                            vr.data(), compute_vectors ? n : 1);
      lapack::check_info(info, "linalg::eig", "geev");
      if (info > 0) throw std::runtime_error("[linalg::eig] The eigenvalue iteration did not converge.");
      for (int j = 0; j < n; ++j) w[i * n + j] = C(wr[j], wi[j]);
      if (!compute_vectors) continue;
      for (int j = 0; j < n; ++j) {
        const R* re = vr.data() + static_cast<size_t>(j) * n;
        if (wi[j] != R(0) && j + 1 < n) {
          const R* im = re + n;  // the pair's second column: its imaginary part
          for (int r = 0; r < n; ++r) {
            vc[static_cast<size_t>(j) * n + r] = C(re[r], im[r]);
            vc[static_cast<size_t>(j + 1) * n + r] = C(re[r], -im[r]);
          }
          ++j;
        } else {
          for (int r = 0; r < n; ++r) vc[static_cast<size_t>(j) * n + r] = C(re[r], R(0));
        }
      }
      vo.put(i, vc.data(), n);
    }
    lapack::store(w, outputs[0]);
    if (compute_vectors) lapack::store(vo.data, outputs[1]);
  });
}
}  // namespace

void Eig::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  if (!is_complex(inputs[0].dtype())) return eig_of_real(compute_vectors_, inputs, outputs);
  dispatch_lapack<true>(inputs[0].dtype(), "linalg::eig", [&](auto tag) {
    using C = std::conditional_t<std::is_same_v<decltype(tag), double>, std::complex<double>, std::complex<float>>;
    auto b = lapack::load<C>(inputs[0]);
    require_finite(b, "linalg::eig");
    const int n = b.rows;
    std::vector<C> w(b.count * n);
    lapack::RowMajorOut<C> vo(compute_vectors_ ? b.count : 0, n, n);
    std::vector<C> vr(compute_vectors_ ? std::max<size_t>(static_cast<size_t>(n) * n, 1) : 1);
    for (size_t i = 0; i < b.count && n > 0; ++i) {
      const int info = lapack::geev<C>(compute_vectors_ ? 'V' : 'N', n, b.matrix(i), n, w.data() + i * n, vr.data(),
                                       compute_vectors_ ? n : 1);
      lapack::check_info(info, "linalg::eig", "geev");
      if (info > 0) throw std::runtime_error("[linalg::eig] The eigenvalue iteration did not converge.");
      if (compute_vectors_) vo.put(i, vr.data(), n);
    }
    lapack::store(w, outputs[0]);
    if (compute_vectors_) lapack::store(vo.data, outputs[1]);
  });
}

void Eigh::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  dispatch_lapack<true>(inputs[0].dtype(), "linalg::eigh", [&](auto tag) {
    using U = decltype(tag);
    using R = real_t<U>;
    auto b = lapack::load<U>(inputs[0]);
    const int n = b.rows;
    std::vector<R> w(b.count * n);
    lapack::RowMajorOut<U> vo(compute_vectors_ ? b.count : 0, n, n);
    for (size_t i = 0; i < b.count && n > 0; ++i) {
      U* a = b.matrix(i);
      const int info = lapack::syevd<U>(compute_vectors_ ? 'V' : 'N', uplo_, n, a, n, w.data() + i * n);
      lapack::check_info(info, "linalg::eigh", "syevd");
      if (info > 0) throw std::runtime_error("[linalg::eigh] The eigenvalue iteration did not converge.");
      if (compute_vectors_) vo.put(i, a, n);
    }
    lapack::store(w, outputs[0]);
    if (compute_vectors_) lapack::store(vo.data, outputs[1]);
  });
}

}  // namespace alloy

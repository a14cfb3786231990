// mx.linalg (as mlx.core.linalg 0.32.4) and random::multivariate_normal.
// Factorizations run through LAPACK on the CPU; on the GPU through cuSOLVER
// (float32/float64 Cholesky, LU, inverse, QR, eigh, SVD) or, for the rest,
// LAPACK on a host copy (backend/cuda/linalg_decomp.cpp).
// Inputs are batched over their leading axes; the last two are the matrix.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy::linalg {

// ord of norm: absent (2-norm / Frobenius), a number (inf allowed) or "fro"/"nuc".
using NormOrder = std::variant<std::monostate, double, std::string>;
array norm(const array& a, const NormOrder& ord = {}, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});

array cholesky(const array& a, bool upper = false, StreamOrDevice s = {});
array cholesky_inv(const array& a, bool upper = false, StreamOrDevice s = {});
array inv(const array& a, StreamOrDevice s = {});
array tri_inv(const array& a, bool upper = false, StreamOrDevice s = {});
array pinv(const array& a, StreamOrDevice s = {});
array det(const array& a, StreamOrDevice s = {});
std::pair<array, array> slogdet(const array& a, StreamOrDevice s = {});  // (sign, log|det|)
array solve(const array& a, const array& b, StreamOrDevice s = {});
array solve_triangular(const array& a, const array& b, bool upper = false, StreamOrDevice s = {});
array cross(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

// (LU packed as LAPACK's getrf, uint32 pivots: row i was swapped with row pivots[i]).
std::pair<array, array> lu_factor(const array& a, StreamOrDevice s = {});
// (P, L, U): uint32 row indices with (L @ U)[P] == a.
std::tuple<array, array, array> lu(const array& a, StreamOrDevice s = {});
std::pair<array, array> qr(const array& a, StreamOrDevice s = {});
// compute_uv: {U, S, Vt} (full matrices); otherwise {S}.
std::vector<array> svd(const array& a, bool compute_uv = true, StreamOrDevice s = {});
// Eigenvalues (complex64) and right eigenvectors (columns, complex64).
std::pair<array, array> eig(const array& a, StreamOrDevice s = {});
array eigvals(const array& a, StreamOrDevice s = {});
// Symmetric / Hermitian: ascending real eigenvalues, eigenvectors as columns.
std::pair<array, array> eigh(const array& a, const std::string& uplo = "L", StreamOrDevice s = {});
array eigvalsh(const array& a, const std::string& uplo = "L", StreamOrDevice s = {});

}  // namespace alloy::linalg

namespace alloy::random {
// Samples of shape broadcast(shape, batch of mean and cov) + (n,): mean + z @ sqrt(cov)
// with the square root taken from the SVD of cov (as MLX). float32 only.
array multivariate_normal(const array& mean, const array& cov, const Shape& shape = {}, Dtype dtype = float32,
                          const std::optional<array>& key = std::nullopt, StreamOrDevice s = {});
}  // namespace alloy::random

// The mx.linalg ops that are one factorization primitive each (plus lu,
// eigvals and eigvalsh, which only pick its outputs). Checks and result
// dtypes follow MLX 0.32.4; the arithmetic lives in the backends.
#include "primitives/linalg_decomp.h"

#include <algorithm>

#include "alloy/linalg.h"
#include "alloy/ops.h"
#include "alloy/ops_shape.h"
#include "ops/linalg_checks.h"

namespace alloy::linalg {

using namespace linalg_detail;

namespace {

Shape batch_of(const array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }

Shape with(Shape s, std::initializer_list<ShapeElem> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

// Real dtype of the singular values / Hermitian eigenvalues.
Dtype real_dtype(Dtype d) { return d == complex64 ? float32 : d; }

char uplo_arg(const std::string& uplo) {
  // MLX reads only the first letter and treats anything but "U" as lower.
  return !uplo.empty() && uplo[0] == 'U' ? 'U' : 'L';
}

}  // namespace

array cholesky(const array& a, bool upper, StreamOrDevice s) {
  check_matrix(a, "linalg::cholesky", false, "Cholesky decomposition is only defined for square matrices.");
  array f(a.shape(), a.dtype(), std::make_shared<Cholesky>(to_stream(s), upper), {a});
  // The primitive leaves the other triangle unspecified (cuSOLVER keeps the input there).
  return upper ? triu(f, 0, s) : tril(f, 0, s);
}

array inv(const array& a, StreamOrDevice s) {
  check_matrix(a, "linalg::inv", false, "Inverses are only defined for square matrices.");
  return array(a.shape(), a.dtype(), std::make_shared<Inverse>(to_stream(s), false, false), {a});
}

array tri_inv(const array& a, bool upper, StreamOrDevice s) {
  // MLX reports tri_inv's errors under linalg::inv.
  check_matrix(a, "linalg::inv", false, "Inverses are only defined for square matrices.");
  array r(a.shape(), a.dtype(), std::make_shared<Inverse>(to_stream(s), true, upper), {a});
  // The primitive leaves the other triangle unspecified (cuSOLVER keeps the input there).
  return upper ? triu(r, 0, s) : tril(r, 0, s);
}

namespace {

std::vector<array> lu_outputs(const array& a, const char* op, StreamOrDevice s) {
  check_matrix(a, op, false, nullptr);
  const ShapeElem m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  Shape b = batch_of(a);
  return array::make_arrays({a.shape(), with(b, {k}), with(b, {m})}, {a.dtype(), uint32, uint32},
                            std::make_shared<LUF>(to_stream(s)), {a});
}

}  // namespace

std::pair<array, array> lu_factor(const array& a, StreamOrDevice s) {
  auto o = lu_outputs(a, "linalg::lu_factor", s);
  return {o[0], o[1]};
}

std::tuple<array, array, array> lu(const array& a, StreamOrDevice s) {
  auto o = lu_outputs(a, "linalg::lu", s);
  const ShapeElem m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  const int nd = a.ndim();
  // L: the strictly lower part of the first k columns plus a unit diagonal; U: the first k rows, upper part.
  Shape lo(nd, 0), hi_l = a.shape(), hi_u = a.shape(), step(nd, 1);
  hi_l[nd - 1] = k;
  hi_u[nd - 2] = k;
  array l = add(tril(slice(o[0], lo, hi_l, step, s), -1, s), eye(m, k, 0, a.dtype(), s), s);
  array u = triu(slice(o[0], lo, hi_u, step, s), 0, s);
  return {o[2], l, u};
}

std::pair<array, array> qr(const array& a, StreamOrDevice s) {
  check_matrix(a, "linalg::qr", false, nullptr);
  const ShapeElem m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  Shape b = batch_of(a);
  auto o = array::make_arrays({with(b, {m, k}), with(b, {k, n})}, {a.dtype(), a.dtype()},
                              std::make_shared<QRF>(to_stream(s)), {a});
  return {o[0], triu(o[1], 0, s)};  // below R's diagonal the primitive leaves Householder vectors
}

std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s) {
  check_dtype(a, "linalg::svd", true);
  if (a.ndim() < 2) {
    throw std::invalid_argument("[linalg::svd] Input array must have >= 2 dimensions. Received array with " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  const ShapeElem m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  Shape b = batch_of(a);
  auto prim = std::make_shared<SVD>(to_stream(s), compute_uv);
  if (!compute_uv) return array::make_arrays({with(b, {k})}, {real_dtype(a.dtype())}, prim, {a});
  return array::make_arrays({with(b, {m, m}), with(b, {k}), with(b, {n, n})},
                            {a.dtype(), real_dtype(a.dtype()), a.dtype()}, prim, {a});
}

namespace {

std::vector<array> eig_outputs(const array& a, const char* op, bool vectors, StreamOrDevice s) {
  check_matrix(a, op, true, "Only defined for square matrices.");
  const ShapeElem n = a.shape(-1);
  Shape b = batch_of(a);
  auto prim = std::make_shared<Eig>(to_stream(s), vectors);
  // MLX returns complex64 whatever the input (float64 included).
  if (!vectors) return array::make_arrays({with(b, {n})}, {complex64}, prim, {a});
  return array::make_arrays({with(b, {n}), a.shape()}, {complex64, complex64}, prim, {a});
}

std::vector<array> eigh_outputs(const array& a, const std::string& uplo, const char* op, bool vectors,
                                StreamOrDevice s) {
  check_matrix(a, op, true, "Only defined for square matrices.");
  const ShapeElem n = a.shape(-1);
  Shape b = batch_of(a);
  auto prim = std::make_shared<Eigh>(to_stream(s), uplo_arg(uplo), vectors);
  if (!vectors) return array::make_arrays({with(b, {n})}, {real_dtype(a.dtype())}, prim, {a});
  return array::make_arrays({with(b, {n}), a.shape()}, {real_dtype(a.dtype()), a.dtype()}, prim, {a});
}

}  // namespace

std::pair<array, array> eig(const array& a, StreamOrDevice s) {
  auto o = eig_outputs(a, "linalg::eig", true, s);
  return {o[0], o[1]};
}

array eigvals(const array& a, StreamOrDevice s) { return eig_outputs(a, "linalg::eigvals", false, s)[0]; }

std::pair<array, array> eigh(const array& a, const std::string& uplo, StreamOrDevice s) {
  auto o = eigh_outputs(a, uplo, "linalg::eigh", true, s);
  return {o[0], o[1]};
}

array eigvalsh(const array& a, const std::string& uplo, StreamOrDevice s) {
  return eigh_outputs(a, uplo, "linalg::eigvalsh", false, s)[0];
}

}  // namespace alloy::linalg

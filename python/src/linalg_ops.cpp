// mx.linalg (signatures as mlx.core.linalg 0.32.4), mx.matrix_norm (MLX's
// alias of linalg.norm) and mx.random.multivariate_normal.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>

#include "alloy/linalg.h"
#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

linalg::NormOrder ord_arg(nb::handle ord) {
  if (ord.is_none()) return {};
  if (nb::isinstance<nb::str>(ord)) return nb::cast<std::string>(ord);
  // Any real number: Python ints, floats and bools, numpy scalars (as MLX takes them).
  if (PyNumber_Check(ord.ptr()) && !PyComplex_Check(ord.ptr())) {
    double v = PyFloat_AsDouble(ord.ptr());
    if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return v;
  }
  throw nb::type_error("[linalg::norm] ord must be None, a number or a string.");
}

std::optional<std::vector<int>> axis_arg(nb::handle axis) {
  if (axis.is_none()) return std::nullopt;
  if (nb::isinstance<nb::int_>(axis)) return std::vector<int>{nb::cast<int>(axis)};
  std::vector<int> out;
  for (nb::handle h : axis) out.push_back(nb::cast<int>(h));
  return out;
}

using py::shape_arg;

}  // namespace

void init_linalg_ops(nb::module_& m) {
  nb::module_ l =
      m.def_submodule("linalg", "Linear algebra: LAPACK on the CPU (a host copy of it on the GPU for now).");
  l.def(
      "norm",
      [](const array& a, nb::handle ord, nb::handle axis, bool keepdims, SD s) {
        return linalg::norm(a, ord_arg(ord), axis_arg(axis), keepdims, s);
      },
      nb::arg(), "ord"_a = nb::none(), "axis"_a = nb::none(), "keepdims"_a = false, nb::kw_only(),
      "stream"_a = nb::none(),
      nb::sig("def norm(a: array, /, ord: None | int | float | str = None, axis: None | int | list[int] = None, "
              "keepdims: bool = False, *, stream: Stream | Device | None = None) -> array"),
      "Vector norm (one axis) or matrix norm (two axes). ord None: 2-norm / Frobenius; 'fro', 'nuc'; "
      "numbers (inf allowed). With axis None and ord None, the 2-norm of the flattened array.");
  m.attr("matrix_norm") = l.attr("norm");
  l.def(
      "cholesky", [](const array& a, bool upper, SD s) { return linalg::cholesky(a, upper, s); }, "a"_a,
      "upper"_a = false, nb::kw_only(), "stream"_a = nb::none(),
      "Cholesky factor of a symmetric positive definite matrix (lower by default), read from that triangle.");
  l.def(
      "cholesky_inv", [](const array& a, bool upper, SD s) { return linalg::cholesky_inv(a, upper, s); }, "a"_a,
      "upper"_a = false, nb::kw_only(), "stream"_a = nb::none(),
      "Inverse of the matrix whose Cholesky factor (lower, or upper) is a.");
  l.def(
      "inv", [](const array& a, SD s) { return linalg::inv(a, s); }, "a"_a, nb::kw_only(), "stream"_a = nb::none(),
      "Inverse of a square matrix (batched over leading axes).");
  l.def(
      "tri_inv", [](const array& a, bool upper, SD s) { return linalg::tri_inv(a, upper, s); }, "a"_a,
      "upper"_a = false, nb::kw_only(), "stream"_a = nb::none(),
      "Inverse of a lower (or upper) triangular matrix; the other triangle is ignored.");
  l.def(
      "pinv", [](const array& a, SD s) { return linalg::pinv(a, s); }, "a"_a, nb::kw_only(), "stream"_a = nb::none(),
      "Moore-Penrose pseudo-inverse through the SVD.");
  l.def(
      "det", [](const array& a, SD s) { return linalg::det(a, s); }, "a"_a, nb::kw_only(), "stream"_a = nb::none(),
      "Determinant of square matrices.");
  l.def(
      "slogdet", [](const array& a, SD s) { return linalg::slogdet(a, s); }, "a"_a, nb::kw_only(),
      "stream"_a = nb::none(), "(sign, log|det|) of square matrices.");
  l.def(
      "solve", [](const array& a, const array& b, SD s) { return linalg::solve(a, b, s); }, "a"_a, "b"_a, nb::kw_only(),
      "stream"_a = nb::none(), "x with a @ x == b for square a.");
  l.def(
      "solve_triangular",
      [](const array& a, const array& b, bool upper, SD s) { return linalg::solve_triangular(a, b, upper, s); }, "a"_a,
      "b"_a, nb::kw_only(), "upper"_a = false, "stream"_a = nb::none(),
      "x with a @ x == b for triangular a (lower by default).");
  l.def(
      "cross", [](const array& a, const array& b, int axis, SD s) { return linalg::cross(a, b, axis, s); }, "a"_a,
      "b"_a, "axis"_a = -1, nb::kw_only(), "stream"_a = nb::none(),
      "Cross product of 3-vectors (2-vectors get a zero third component) along axis.");
  l.def(
      "lu_factor", [](const array& a, SD s) { return linalg::lu_factor(a, s); }, "a"_a, nb::kw_only(),
      "stream"_a = nb::none(), "(LU, pivots): LAPACK's packed LU factors and uint32 row swaps.");
  l.def(
      "lu", [](const array& a, SD s) { return linalg::lu(a, s); }, "a"_a, nb::kw_only(), "stream"_a = nb::none(),
      "(P, L, U) with (L @ U)[P] == a; P holds uint32 row indices.");
  l.def(
      "qr", [](const array& a, SD s) { return linalg::qr(a, s); }, "a"_a, nb::kw_only(), "stream"_a = nb::none(),
      "(Q, R) reduced QR factorization.");
  l.def(
      "svd",
      [](const array& a, bool compute_uv, SD s) -> nb::object {
        auto r = linalg::svd(a, compute_uv, s);
        if (!compute_uv) return nb::cast(r[0]);
        return nb::make_tuple(r[0], r[1], r[2]);
      },
      "a"_a, "compute_uv"_a = true, nb::kw_only(), "stream"_a = nb::none(),
      nb::sig("def svd(a: array, compute_uv: bool = True, *, stream: Stream | Device | None = None) -> "
              "tuple[array, array, array]"),
      "(U, S, Vt) with a == U[:, :k] @ diag(S) @ Vt[:k]; S alone when compute_uv is False.");
  l.def(
      "eig", [](const array& a, SD s) { return linalg::eig(a, s); }, "a"_a, nb::kw_only(), "stream"_a = nb::none(),
      "(eigenvalues, right eigenvectors as columns), both complex64.");
  l.def(
      "eigvals", [](const array& a, SD s) { return linalg::eigvals(a, s); }, "a"_a, nb::kw_only(),
      "stream"_a = nb::none(), "Eigenvalues (complex64) of square matrices.");
  l.def(
      "eigh", [](const array& a, const std::string& uplo, SD s) { return linalg::eigh(a, uplo, s); }, "a"_a,
      "UPLO"_a = "L", nb::kw_only(), "stream"_a = nb::none(),
      "(ascending eigenvalues, eigenvectors as columns) of a symmetric/Hermitian matrix read from the UPLO "
      "triangle.");
  l.def(
      "eigvalsh", [](const array& a, const std::string& uplo, SD s) { return linalg::eigvalsh(a, uplo, s); }, "a"_a,
      "UPLO"_a = "L", nb::kw_only(), "stream"_a = nb::none(),
      "Ascending eigenvalues of a symmetric/Hermitian matrix read from the UPLO triangle.");

  nb::module_ r = nb::borrow<nb::module_>(m.attr("random"));
  r.def(
      "multivariate_normal",
      [](const array& mean, const array& cov, nb::handle shape, std::optional<Dtype> dtype, std::optional<array> key,
         SD s) { return random::multivariate_normal(mean, cov, shape_arg(shape), dtype.value_or(float32), key, s); },
      "mean"_a, "cov"_a, "shape"_a = nb::list(), "dtype"_a.none() = Dtype::float32, "key"_a = nb::none(),
      "stream"_a = nb::none(),
      "Jointly normal float32 samples: mean + z @ sqrt(cov) (square root from the SVD of cov).");
}

// mx.degrees ... mx.nan_to_num, MLX's alias names (acos, pow, ...), the
// constants (mx.pi ...), scans and counts, windows, view and as_strided.
// The dtype utilities live in dtype_utils.cpp.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <cmath>

#include "alloy/ops_math.h"
#include "bindings.h"
#include "convert.h"
#include "operands.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

void init_dtype_utils(nb::module_& m);  // dtype_utils.cpp

namespace {

template <typename T>
std::vector<T> int_list(nb::handle seq) {
  std::vector<T> out;
  for (nb::handle h : seq) out.push_back(nb::cast<T>(h));
  return out;
}

array logcumsumexp_call(const array& a, std::optional<int> axis, bool reverse, bool inclusive, SD s) {
  return axis ? logcumsumexp(a, *axis, reverse, inclusive, s) : logcumsumexp(a, reverse, inclusive, s);
}

// cumsum/cumprod with MLX's dtype argument: the input is cast first.
array cumulative_call(bool is_sum, const array& a0, std::optional<int> axis, bool reverse, bool inclusive,
                      std::optional<Dtype> dtype, SD s) {
  array a = dtype ? astype(a0, *dtype, s) : a0;
  if (!axis) {
    a = reshape(a, {-1}, s);
    axis = 0;
  }
  return is_sum ? cumsum(a, *axis, reverse, inclusive, s) : cumprod(a, *axis, reverse, inclusive, s);
}

void bind_elementwise(nb::module_& m) {
  // MLX binds these names to the very same functions as the arc* spellings.
  const char* const aliases[][2] = {
      {"acos", "arccos"},   {"acosh", "arccosh"}, {"asin", "arcsin"},
      {"asinh", "arcsinh"}, {"atan", "arctan"},   {"atan2", "arctan2"},
      {"atanh", "arctanh"}, {"pow", "power"},     {"bitwise_left_shift", "left_shift"},
      {"bitwise_right_shift", "right_shift"},
  };
  for (const auto& a : aliases) m.attr(a[0]) = m.attr(a[1]);

  using Unary = array (*)(const array&, SD);
  const std::pair<const char*, Unary> unary[] = {
      {"degrees", [](const array& a, SD s) { return degrees(a, s); }},
      {"radians", [](const array& a, SD s) { return radians(a, s); }},
      {"trunc", [](const array& a, SD s) { return trunc(a, s); }},
      {"positive", [](const array& a, SD s) { return positive(a, s); }},
  };
  const char* const unary_docs[] = {"Radians to degrees.", "Degrees to radians.",
                                    "Round towards zero (integers and bool unchanged).", "Unary plus."};
  for (size_t i = 0; i < std::size(unary); ++i) {
    Unary fn = unary[i].second;
    m.def(unary[i].first, [fn](nb::handle a, SD s) { return fn(py::to_array(a), s); }, "a"_a, nb::kw_only(),
          "stream"_a = nb::none(), unary_docs[i]);
  }
  // MLX takes the stream of these positionally too.
  m.def("isposinf", [](nb::handle a, SD s) { return isposinf(py::to_array(a), s); }, "a"_a,
        "stream"_a = nb::none(), "Elementwise test for +infinity.");
  m.def("isneginf", [](nb::handle a, SD s) { return isneginf(py::to_array(a), s); }, "a"_a,
        "stream"_a = nb::none(), "Elementwise test for -infinity.");
  m.def(
      "logical_xor",
      [](nb::handle a, nb::handle b, SD s) {
        auto [x, y] = py::binary_operands(a, b);
        return logical_xor(x, y, s);
      },
      "a"_a, "b"_a, nb::kw_only(), "stream"_a = nb::none(), "Elementwise logical exclusive or.");
  m.def(
      "divmod",
      [](nb::handle a, nb::handle b, SD s) {
        auto [x, y] = py::binary_operands(a, b);
        return divmod(x, y, s);  // a list of two arrays, as MLX
      },
      "a"_a, "b"_a, "stream"_a = nb::none(), "[a // b, a % b] elementwise.");
  m.def(
      "nan_to_num",
      [](nb::handle a, double nan, std::optional<double> posinf, std::optional<double> neginf, SD s) {
        return nan_to_num(py::to_array(a), nan, posinf, neginf, s);
      },
      "a"_a, "nan"_a = 0.0, "posinf"_a = nb::none(), "neginf"_a = nb::none(), nb::kw_only(),
      "stream"_a = nb::none(), "Replace NaN and +-inf by finite values (default: the dtype's extremes).");
}

void bind_constants(nb::module_& m) {
  m.attr("e") = M_E;
  m.attr("pi") = M_PI;
  m.attr("inf") = INFINITY;
  m.attr("nan") = NAN;
  m.attr("euler_gamma") = 0.5772156649015329;
  m.attr("newaxis") = nb::none();
}

void bind_scans_and_counts(nb::module_& m) {
  m.def(
      "logcumsumexp",
      [](nb::handle a, std::optional<int> axis, bool reverse, bool inclusive, SD s) {
        return logcumsumexp_call(py::to_array(a), axis, reverse, inclusive, s);
      },
      "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), "reverse"_a = false, "inclusive"_a = true,
      "stream"_a = nb::none(), "Cumulative log(sum(exp(a))) along an axis (the flattened array when None).");
  def_array_method(
      "logcumsumexp",
      [](const array& a, std::optional<int> axis, bool reverse, bool inclusive, SD s) {
        return logcumsumexp_call(a, axis, reverse, inclusive, s);
      },
      "axis"_a.none() = nb::none(), nb::kw_only(), "reverse"_a = false, "inclusive"_a = true,
      "stream"_a = nb::none());
  for (bool is_sum : {true, false}) {
    m.def(
        is_sum ? "cumulative_sum" : "cumulative_prod",
        [is_sum](nb::handle a, std::optional<int> axis, bool reverse, bool inclusive, std::optional<Dtype> dtype,
                 SD s) { return cumulative_call(is_sum, py::to_array(a), axis, reverse, inclusive, dtype, s); },
        "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), "reverse"_a = false, "inclusive"_a = true,
        "dtype"_a.none() = nb::none(), "stream"_a = nb::none(),
        is_sum ? "Cumulative sum (cumsum), computed in `dtype` when given."
               : "Cumulative product (cumprod), computed in `dtype` when given.");
  }
  m.def(
      "count_nonzero",
      [](nb::handle a, nb::handle axis, bool keepdims, SD s) {
        array x = py::to_array(a);
        auto axes = py::axes_arg(axis);
        return axes ? count_nonzero(x, *axes, keepdims, s) : count_nonzero(x, keepdims, s);
      },
      // axis is positional too (MLX's binding takes it so, whatever its signature says).
      "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), "keepdims"_a = false, "stream"_a = nb::none(),
      "Number of non-zero elements over the given axes, as int32.");
  m.def(
      "minmax",
      [](nb::handle a, nb::handle axis, bool keepdims, SD s) {
        array x = py::to_array(a);
        auto axes = py::axes_arg(axis);
        return axes ? minmax(x, *axes, keepdims, s) : minmax(x, keepdims, s);
      },
      "a"_a, "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), "stream"_a = nb::none(),
      "(min, max) over the given axes.");
}

void bind_windows(nb::module_& m) {
  using Window = array (*)(int, SD);
  const std::pair<const char*, Window> windows[] = {
      {"hamming", [](int M, SD s) { return hamming(M, s); }},
      {"hanning", [](int M, SD s) { return hanning(M, s); }},
      {"bartlett", [](int M, SD s) { return bartlett(M, s); }},
      {"blackman", [](int M, SD s) { return blackman(M, s); }},
  };
  for (const auto& [name, fn] : windows) {
    Window f = fn;
    m.def(name, [f](int M, SD s) { return f(M, s); }, "M"_a, nb::kw_only(), "stream"_a = nb::none(),
          "The symmetric window of M points (float32; empty when M < 1).");
  }
}

void bind_views(nb::module_& m) {
  m.def("view", [](nb::handle a, Dtype dtype, SD s) { return view(py::to_array(a), dtype, s); }, "a"_a, "dtype"_a,
        "stream"_a = nb::none(), "The same bytes read as another dtype (the last axis rescales).");
  def_array_method("view", [](const array& a, Dtype dtype, SD s) { return view(a, dtype, s); }, "dtype"_a,
                   nb::kw_only(), "stream"_a = nb::none());
  m.def(
      "as_strided",
      [](const array& a, nb::handle shape, nb::handle strides, size_t offset, SD s) {
        Shape sh = shape.is_none() ? a.shape() : int_list<ShapeElem>(shape);
        Strides st = strides.is_none() ? row_major_strides(sh) : int_list<int64_t>(strides);
        return as_strided(a, std::move(sh), std::move(st), offset, s);
      },
      "a"_a, "shape"_a.none() = nb::none(), "strides"_a.none() = nb::none(), "offset"_a = 0, nb::kw_only(),
      "stream"_a = nb::none(),
      "A view with the given shape and strides (in elements) over a's elements in row-major order.");
}

}  // namespace

void init_ops_math(nb::module_& m) {
  bind_elementwise(m);
  bind_constants(m);
  bind_scans_and_counts(m);
  bind_windows(m);
  bind_views(m);
  init_dtype_utils(m);
}

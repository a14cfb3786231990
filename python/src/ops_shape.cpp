// Shape and linear-algebra composites (mx.flip, mx.einsum ...) and the array
// methods diag, diagonal and mT.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops_shape.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

bool is_int(nb::handle h) { return !PyBool_Check(h.ptr()) && py::as_index(h); }

using py::ints_arg;

Shape to_shape(const std::vector<int>& v) { return Shape(v.begin(), v.end()); }

nb::tuple to_tuple(const std::vector<array>& v) {
  nb::list l;
  for (const array& a : v) l.append(nb::cast(a));
  return nb::tuple(l);
}

nb::tuple shape_tuple(const Shape& shape) {
  nb::list l;
  for (ShapeElem d : shape) l.append(d);
  return nb::tuple(l);
}

// Positional arrays (mx.array only, as MLX accepts) and keyword arguments
// from an allowed list for the variadic functions.
std::vector<array> array_args(const nb::args& args, const char* op) {
  std::vector<array> out;
  for (nb::handle h : args) {
    if (!nb::isinstance<array>(h)) {
      throw nb::type_error((std::string(op) + "(): arguments must be arrays, got " +
                            nb::cast<std::string>(nb::str(h.type().attr("__name__"))) + ".")
                               .c_str());
    }
    out.push_back(nb::cast<array>(h));
  }
  return out;
}

nb::object kwarg(const nb::kwargs& kw, const char* op, std::initializer_list<const char*> allowed, const char* name) {
  for (auto [k, v] : kw) {
    std::string key = nb::cast<std::string>(k);
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) throw nb::type_error((std::string(op) + "() got an unexpected keyword argument '" + key + "'").c_str());
  }
  return kw.contains(name) ? nb::object(kw[name]) : nb::none();
}

nb::object at_least(array (*f)(const array&, SD), const nb::args& args, const nb::kwargs& kw, const char* op) {
  SD s = nb::cast<SD>(kwarg(kw, op, {"stream"}, "stream"));
  std::vector<array> in = array_args(args, op);
  if (in.size() == 1) return nb::cast(f(in[0], s));
  nb::list out;
  for (const array& a : in) out.append(nb::cast(f(a, s)));
  return out;
}

array roll_arg(const array& a, nb::handle shift, nb::handle axis, SD s) {
  std::vector<int> sh = ints_arg(shift);
  if (axis.is_none()) {
    // Flattened: the shifts add up.
    int total = 0;
    for (int v : sh) total += v;
    return roll(a, total, s);
  }
  if (is_int(axis)) {
    int total = 0;
    for (int v : sh) total += v;
    return roll(a, Shape{total}, {py::int_arg(axis)}, s);
  }
  std::vector<int> axes = ints_arg(axis);
  if (is_int(shift)) sh.assign(axes.size(), sh[0]);  // one shift for every axis
  return roll(a, to_shape(sh), axes, s);
}

array tensordot_arg(const array& a, const array& b, nb::handle axes, SD s) {
  if (is_int(axes)) return tensordot(a, b, py::int_arg(axes), s);
  std::vector<nb::handle> pair(axes.begin(), axes.end());
  if (pair.size() != 2) throw std::invalid_argument("[tensordot] axes must be an int or a pair of axis lists.");
  return tensordot(a, b, ints_arg(pair[0]), ints_arg(pair[1]), s);
}

array diagonal_method(const array& a, int offset, int axis1, int axis2, SD s) {
  return diagonal(a, offset, axis1, axis2, s);
}

}  // namespace

void init_ops_shape(nb::module_& m) {
  m.def("atleast_1d", [](nb::args a, nb::kwargs kw) { return at_least(&atleast_1d, a, kw, "atleast_1d"); },
        "Each array with at least one dimension (one array: an array; several: a list).");
  m.def("atleast_2d", [](nb::args a, nb::kwargs kw) { return at_least(&atleast_2d, a, kw, "atleast_2d"); },
        "Each array with at least two dimensions (one array: an array; several: a list).");
  m.def("atleast_3d", [](nb::args a, nb::kwargs kw) { return at_least(&atleast_3d, a, kw, "atleast_3d"); },
        "Each array with at least three dimensions (one array: an array; several: a list).");
  m.def("flip",
        [](const array& a, nb::handle axis, SD s) { return axis.is_none() ? flip(a, s) : flip(a, ints_arg(axis), s); },
        "a"_a, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
        "Reverses the order of elements along the given axes (all when None).");
  m.def("roll", &roll_arg, "a"_a, "shift"_a, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
        "Rolls elements along axes (the flattened array when axis is None).");
  m.def("tri",
        [](int n, std::optional<int> mm, int k, std::optional<Dtype> dtype, SD s) {
          return tri(n, mm, k, dtype.value_or(float32), s);
        },
        "n"_a, "m"_a = nb::none(), "k"_a = 0, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
        "Ones at and below the k-th diagonal, zeros elsewhere (float32 by default).");
  m.def("tril", [](const array& x, int k, SD s) { return tril(x, k, s); }, "x"_a, "k"_a = 0, nb::kw_only(),
        "stream"_a = nb::none(), "Zeros the elements above the k-th diagonal of the last two axes.");
  m.def("triu", [](const array& x, int k, SD s) { return triu(x, k, s); }, "x"_a, "k"_a = 0, nb::kw_only(),
        "stream"_a = nb::none(), "Zeros the elements below the k-th diagonal of the last two axes.");
  m.def("diag", [](const array& a, int k, SD s) { return diag(a, k, s); }, "a"_a, "k"_a = 0, nb::kw_only(),
        "stream"_a = nb::none(), "The k-th diagonal of a matrix, or the matrix with a vector on it.");
  m.def("diagonal", &diagonal_method, "a"_a, "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, "stream"_a = nb::none(),
        "Diagonals of the (axis1, axis2) planes, on a new last axis.");
  m.def("trace",
        [](const array& a, int offset, int axis1, int axis2, std::optional<Dtype> dtype, SD s) {
          return trace(a, offset, axis1, axis2, dtype, s);
        },
        "a"_a, "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1, "dtype"_a = nb::none(), nb::kw_only(),
        "stream"_a = nb::none(), "Sum along a diagonal.");
  m.def("meshgrid",
        [](nb::args args, nb::kwargs kw) {
          const char* op = "meshgrid";
          auto allowed = {"sparse", "indexing", "stream"};
          nb::object sp = kwarg(kw, op, allowed, "sparse"), ix = kwarg(kw, op, allowed, "indexing");
          return to_tuple(meshgrid(array_args(args, op), sp.is_none() ? false : nb::cast<bool>(sp),
                                   ix.is_none() ? "xy" : nb::cast<std::string>(ix),
                                   nb::cast<SD>(kwarg(kw, op, allowed, "stream"))));
        },
        "Coordinate grids from 1-D arrays: meshgrid(*arrays, sparse=False, indexing='xy', stream=None).");
  m.def("unflatten",
        [](const array& a, int axis, const std::vector<int>& shape, SD s) { return unflatten(a, axis, to_shape(shape), s); },
        "a"_a, "axis"_a, "shape"_a, nb::kw_only(), "stream"_a = nb::none(),
        "Splits one axis into the given shape (one -1 is inferred).");
  m.def("unstack", [](const array& x, int axis, SD s) { return to_tuple(unstack(x, axis, s)); }, "x"_a, nb::kw_only(),
        "axis"_a = 0, "stream"_a = nb::none(), "The slices along an axis, that axis removed, as a tuple.");
  m.def("permute_dims",
        [](const array& a, nb::handle axes, SD s) {
          return axes.is_none() ? transpose(a, s) : permute_dims(a, ints_arg(axes), s);
        },
        "a"_a, "axes"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(), "See transpose.");
  m.def("matrix_transpose", [](const array& a, SD s) { return matrix_transpose(a, s); }, "a"_a, nb::kw_only(),
        "stream"_a = nb::none(), "Swaps the last two axes.");
  m.def("broadcast_shapes",
        [](nb::args shapes) {
          std::vector<Shape> v;
          for (nb::handle h : shapes) v.push_back(to_shape(nb::cast<std::vector<int>>(h)));
          return shape_tuple(broadcast_shapes(v));
        },
        "The shape that the given shapes broadcast to.");
  m.def("inner", [](const array& a, const array& b, SD s) { return inner(a, b, s); }, "a"_a, "b"_a, nb::kw_only(),
        "stream"_a = nb::none(), "Inner product over the last axes.");
  m.def("outer", [](const array& a, const array& b, SD s) { return outer(a, b, s); }, "a"_a, "b"_a, nb::kw_only(),
        "stream"_a = nb::none(), "Outer product of the flattened arrays.");
  m.def("kron", [](const array& a, const array& b, SD s) { return kron(a, b, s); }, "a"_a, "b"_a, nb::kw_only(),
        "stream"_a = nb::none(), "Kronecker product.");
  m.def("tensordot", &tensordot_arg, "a"_a, "b"_a, "axes"_a = 2, nb::kw_only(), "stream"_a = nb::none(),
        "Sum of products over the last `axes` axes of a and first of b, or over two lists of axes.");
  m.def("addmm",
        [](const array& c, const array& a, const array& b, float alpha, float beta, SD s) {
          return addmm(c, a, b, alpha, beta, s);
        },
        "c"_a, "a"_a, "b"_a, "alpha"_a = 1.0f, "beta"_a = 1.0f, nb::kw_only(), "stream"_a = nb::none(),
        "alpha * (a @ b) + beta * c.");
  m.def("vecdot", [](const array& a, const array& b, int axis, SD s) { return vecdot(a, b, axis, s); }, "a"_a, "b"_a,
        nb::kw_only(), "axis"_a = -1, "stream"_a = nb::none(), "Dot product of vectors along an axis.");
  m.def("diff", [](const array& a, int n, int axis, SD s) { return diff(a, n, axis, s); }, "a"_a, "n"_a = 1,
        "axis"_a = -1, nb::kw_only(), "stream"_a = nb::none(), "The n-th discrete difference along an axis.");
  m.def("einsum",
        [](const std::string& subscripts, nb::args operands, nb::kwargs kw) {
          SD s = nb::cast<SD>(kwarg(kw, "einsum", {"stream"}, "stream"));
          return einsum(subscripts, array_args(operands, "einsum"), s);
        },
        "subscripts"_a, "operands"_a, "kwargs"_a, "Einstein summation over the operands.");
  m.def("einsum_path",
        [](const std::string& subscripts, nb::args operands) {
          auto [path, info] = einsum_path(subscripts, array_args(operands, "einsum_path"));
          nb::list steps;
          for (const std::vector<int>& step : path) {
            nb::list l;
            for (int i : step) l.append(i);
            steps.append(nb::tuple(l));
          }
          return nb::make_tuple(steps, info);
        },
        "subscripts"_a, "operands"_a, "The contraction order einsum uses and a report of its cost.");
  m.def("slice",
        [](const array& a, const array& start, const std::vector<int>& axes, const std::vector<int>& size, SD s) {
          return slice(a, start, axes, to_shape(size), s);
        },
        "a"_a, "start_indices"_a, "axes"_a, "slice_size"_a, nb::kw_only(), "stream"_a = nb::none(),
        "The block of the given size at start indices held in an array (clamped to fit).");
  m.def("slice_update",
        [](const array& a, const array& update, const array& start, const std::vector<int>& axes, SD s) {
          return slice_update(a, update, start, axes, s);
        },
        "a"_a, "update"_a, "start_indices"_a, "axes"_a, nb::kw_only(), "stream"_a = nb::none(),
        "The array with `update` written at start indices held in an array (clamped to fit).");

  // ---- array methods
  def_array_method("diag", [](const array& a, int k, SD s) { return diag(a, k, s); }, "k"_a = 0, nb::kw_only(),
                   "stream"_a = nb::none());
  def_array_method("diagonal", &diagonal_method, "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1,
                   "stream"_a = nb::none());
  nb::handle cls = nb::type<array>();
  nb::object getter = nb::cpp_function([](const array& a) { return matrix_transpose(a); });
  nb::setattr(cls, "mT", nb::module_::import_("builtins").attr("property")(getter, nb::none(), nb::none(),
                                                                          "The last two axes swapped."));
}

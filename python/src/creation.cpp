// mx.zeros / ones / full / *_like / arange / linspace / eye / identity.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

using py::shape_arg;

// Python ints and numpy integer scalars (anything with __index__ that is not a float).
bool is_int_arg(nb::handle h) { return PyLong_Check(h.ptr()) || (!PyFloat_Check(h.ptr()) && PyIndex_Check(h.ptr())); }

}  // namespace

void init_creation(nb::module_& m) {
  m.def("zeros", [](nb::handle shape, std::optional<Dtype> dtype, SD s) {
          return zeros(shape_arg(shape), dtype.value_or(Dtype::float32), s);
        }, "shape"_a,
        "dtype"_a = Dtype::float32, nb::kw_only(), "stream"_a = nb::none(), "An array of zeros.");
  m.def("ones", [](nb::handle shape, std::optional<Dtype> dtype, SD s) {
          return ones(shape_arg(shape), dtype.value_or(Dtype::float32), s);
        }, "shape"_a,
        "dtype"_a = Dtype::float32, nb::kw_only(), "stream"_a = nb::none(), "An array of ones.");
  m.def("full",
        [](nb::handle shape, nb::handle vals, std::optional<Dtype> dtype, SD s) {
          // An int value for an integer dtype is checked as MLX checks it.
          const bool int_value = PyLong_Check(vals.ptr()) && !PyBool_Check(vals.ptr());
          return full(shape_arg(shape), int_value && dtype ? py::int_scalar_to(vals, *dtype) : py::to_array(vals), dtype,
                      s);
        },
        "shape"_a, "vals"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
        "An array of the given shape filled with vals (broadcast); dtype defaults to vals' dtype.");
  // As MLX: a dtype of None (the default) is a's.
  m.def(
      "zeros_like",
      [](const array& a, std::optional<Dtype> dtype, SD s) {
        return dtype && *dtype != a.dtype() ? zeros(a.shape(), *dtype, s) : zeros_like(a, s);
      },
      nb::arg(), "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  m.def(
      "ones_like",
      [](const array& a, std::optional<Dtype> dtype, SD s) {
        return dtype && *dtype != a.dtype() ? ones(a.shape(), *dtype, s) : ones_like(a, s);
      },
      nb::arg(), "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  m.def("full_like",
        [](const array& a, nb::handle vals, std::optional<Dtype> dtype, SD s) {
          return full(a.shape(), py::to_array(vals), dtype.value_or(a.dtype()), s);
        },
        "a"_a, "vals"_a, "dtype"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  m.def("arange",
        [](nb::handle first, nb::handle second, nb::handle third, std::optional<Dtype> dtype, SD s) {
          // MLX's second form, arange(stop, step, dtype), with all three positional.
          nb::object zero;  // keeps the start of that form alive
          if (Dtype d; !dtype && !second.is_none() && py::dtype_of(third.ptr(), d)) {
            dtype = d;
            third = second;
            second = first;
            zero = nb::int_(0);
            first = zero;
          }
          // arange(stop) or arange(start, stop[, step]); int32 when every given value is an int.
          bool ints = is_int_arg(first) && (second.is_none() || is_int_arg(second)) &&
                      (third.is_none() || is_int_arg(third));
          double start = second.is_none() ? 0.0 : nb::cast<double>(first);
          double stop = second.is_none() ? nb::cast<double>(first) : nb::cast<double>(second);
          double step = third.is_none() ? 1.0 : nb::cast<double>(third);
          return arange(start, stop, step, dtype.value_or(ints ? Dtype::int32 : Dtype::float32), s);
        },
        "start"_a, "stop"_a = nb::none(), "step"_a = nb::none(), "dtype"_a = nb::none(), nb::kw_only(),
        "stream"_a = nb::none(), "Evenly spaced values in [start, stop) (numpy's arange).");
  m.def("linspace",
        [](double start, double stop, int num, bool endpoint, std::optional<Dtype> dtype, SD s) {
          return linspace(start, stop, num, endpoint, dtype.value_or(Dtype::float32), s);
        },
        "start"_a, "stop"_a, "num"_a = 50, "endpoint"_a = true, "dtype"_a = Dtype::float32, nb::kw_only(),
        "stream"_a = nb::none(), "num evenly spaced values from start to stop (inclusive unless endpoint is false).");
  m.def("eye",
        [](int n, std::optional<int> mcols, int k, std::optional<Dtype> dtype, SD s) {
          return eye(n, mcols.value_or(n), k, dtype.value_or(Dtype::float32), s);
        },
        "n"_a, "m"_a = nb::none(), "k"_a = 0, "dtype"_a = Dtype::float32, nb::kw_only(), "stream"_a = nb::none(),
        "An (n, m) matrix with ones on the k-th diagonal.");
  m.def("identity", [](int n, std::optional<Dtype> dtype, SD s) { return identity(n, dtype.value_or(Dtype::float32), s); }, "n"_a,
        "dtype"_a = Dtype::float32, nb::kw_only(), "stream"_a = nb::none(), "The (n, n) identity matrix.");
}

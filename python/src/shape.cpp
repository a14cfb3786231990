// Shape functions (mx.reshape ...) and the matching array methods.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

using py::as_index;
using py::int_arg;
using py::ints_arg;

// `a.reshape(2, 3)` and `a.reshape((2, 3))` alike.
std::vector<int> varargs_ints(const nb::args& args) {
  if (args.size() == 1 && !as_index(args[0])) return ints_arg(args[0]);
  std::vector<int> out;
  for (nb::handle d : args) out.push_back(int_arg(d));
  return out;
}

SD stream_kwarg(const nb::kwargs& kw) {
  SD s;
  for (auto [k, v] : kw) {
    std::string key = nb::cast<std::string>(k);
    if (key != "stream") throw nb::type_error(("unexpected keyword argument '" + key + "'").c_str());
    s = nb::cast<SD>(v);
  }
  return s;
}

std::vector<array> arrays_arg(nb::handle seq) {
  std::vector<array> out;
  for (nb::handle h : seq) out.push_back(py::to_array(h));
  return out;
}

// numpy's pad_width forms: n, (n,), (lo, hi), or one (lo, hi) per axis.
std::vector<std::pair<int, int>> pad_width_arg(nb::handle h, int ndim) {
  if (as_index(h)) {
    const int w = int_arg(h);
    return std::vector<std::pair<int, int>>(ndim, {w, w});
  }
  std::vector<nb::handle> items(h.begin(), h.end());
  bool flat = !items.empty() && as_index(items[0]);
  if (flat) {
    const int lo = int_arg(items[0]);
    if (items.size() == 1) return std::vector<std::pair<int, int>>(ndim, {lo, lo});
    if (items.size() == 2) return std::vector<std::pair<int, int>>(ndim, {lo, int_arg(items[1])});
    throw std::invalid_argument("[pad] pad_width must be an int, (n,), (low, high) or a list of (low, high) pairs.");
  }
  std::vector<std::pair<int, int>> out;
  for (nb::handle p : items) {
    std::vector<int> v = ints_arg(p);
    if (v.size() == 1) v.push_back(v[0]);
    if (v.size() != 2) throw std::invalid_argument("[pad] each pad_width entry must be (low, high).");
    out.emplace_back(v[0], v[1]);
  }
  if (out.size() == 1) out.assign(ndim, out[0]);
  return out;
}

nb::list to_list(const std::vector<array>& v) {
  nb::list l;
  for (auto& a : v) l.append(nb::cast(a));
  return l;
}

array squeeze_arg(const array& a, nb::handle axis, SD s) {
  return axis.is_none() ? squeeze(a, s) : squeeze(a, ints_arg(axis), s);
}

std::vector<array> split_arg(const array& a, nb::handle indices_or_sections, int axis, SD s) {
  if (as_index(indices_or_sections)) return split(a, int_arg(indices_or_sections), axis, s);
  std::vector<int> idx = ints_arg(indices_or_sections);
  return split(a, Shape(idx.begin(), idx.end()), axis, s);
}

}  // namespace

void init_shape(nb::module_& m) {
  m.def("reshape", [](const array& a, nb::handle shape, SD s) {
        std::vector<int> v = ints_arg(shape);
        return reshape(a, Shape(v.begin(), v.end()), s);
      },
      "a"_a, "shape"_a, nb::kw_only(), "stream"_a = nb::none(), "The array with a new shape (one -1 is inferred).");
  m.def("flatten", [](const array& a, int start_axis, int end_axis, SD s) { return flatten(a, start_axis, end_axis, s); },
        "a"_a, "start_axis"_a = 0, "end_axis"_a = -1, nb::kw_only(), "stream"_a = nb::none());
  m.def("transpose",
        [](const array& a, nb::handle axes, SD s) { return axes.is_none() ? transpose(a, s) : transpose(a, ints_arg(axes), s); },
        "a"_a, "axes"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
        "Permutes the axes (reverses them when axes is None).");
  m.def("swapaxes", [](const array& a, int x, int y, SD s) { return swapaxes(a, x, y, s); }, "a"_a, "axis1"_a,
        "axis2"_a, nb::kw_only(), "stream"_a = nb::none());
  m.def("moveaxis", [](const array& a, int src, int dst, SD s) { return moveaxis(a, src, dst, s); }, "a"_a,
        "source"_a, "destination"_a, nb::kw_only(), "stream"_a = nb::none());
  m.def("expand_dims", [](const array& a, nb::handle axis, SD s) { return expand_dims(a, ints_arg(axis), s); }, "a"_a,
        "axis"_a, nb::kw_only(), "stream"_a = nb::none());
  m.def("squeeze", &squeeze_arg, "a"_a, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  m.def("broadcast_to",
        [](nb::handle a, nb::handle shape, SD s) {
          std::vector<int> v = ints_arg(shape);
          return broadcast_to(py::to_array(a), Shape(v.begin(), v.end()), s);
        },
        "a"_a, "shape"_a, nb::kw_only(), "stream"_a = nb::none());
  m.def("broadcast_arrays", [](nb::args arrays, nb::kwargs kw) {
        return nb::tuple(to_list(broadcast_arrays(arrays_arg(arrays), stream_kwarg(kw))));
      });
  m.def("concatenate",
        [](nb::handle arrays, nb::handle axis, SD s) {
          std::vector<array> v = arrays_arg(arrays);
          return axis.is_none() ? concatenate_flat(v, s) : concatenate(v, py::int_arg(axis), s);
        },
        "arrays"_a, "axis"_a.none() = 0, nb::kw_only(), "stream"_a = nb::none(),
        "Joins arrays along an axis (flattened first when axis is None).");
  m.attr("concat") = m.attr("concatenate");
  // axis None is 0, as in MLX.
  m.def(
      "stack",
      [](nb::handle arrays, std::optional<int> axis, SD s) { return stack(arrays_arg(arrays), axis.value_or(0), s); },
      "arrays"_a, "axis"_a.none() = 0, nb::kw_only(), "stream"_a = nb::none());
  m.def("split",
        [](const array& a, nb::handle ios, int axis, SD s) { return to_list(split_arg(a, ios, axis, s)); },
        "a"_a, "indices_or_sections"_a, "axis"_a = 0, nb::kw_only(), "stream"_a = nb::none(),
        "Splits into equal sections (an int) or at the given indices.");
  m.def("pad",
        [](const array& a, nb::handle pad_width, const std::string& mode, nb::handle constant_values, SD s) {
          return pad(a, pad_width_arg(pad_width, a.ndim()), py::to_array_like(constant_values, a), mode, s);
        },
        "a"_a, "pad_width"_a, "mode"_a = "constant", "constant_values"_a = 0, nb::kw_only(), "stream"_a = nb::none(),
        "Pads with a constant, by repeating the edge values, or by mirroring (reflect, symmetric).");
  m.def("tile", [](const array& a, nb::handle reps, SD s) { return tile(a, ints_arg(reps), s); }, "a"_a, "reps"_a,
        nb::kw_only(), "stream"_a = nb::none());
  m.def("repeat",
        [](const array& a, int repeats, std::optional<int> axis, SD s) {
          return axis ? repeat(a, repeats, *axis, s) : repeat(a, repeats, s);
        },
        "array"_a, "repeats"_a, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());

  // ---- array methods
  def_array_method("reshape", [](const array& a, nb::args shape, nb::kwargs kw) {
    std::vector<int> v = varargs_ints(shape);
    return reshape(a, Shape(v.begin(), v.end()), stream_kwarg(kw));
  });
  def_array_method("transpose", [](const array& a, nb::args axes, nb::kwargs kw) {
    return axes.size() == 0 ? transpose(a, stream_kwarg(kw)) : transpose(a, varargs_ints(axes), stream_kwarg(kw));
  });
  nb::type<array>().attr("T") = nb::module_::import_("builtins").attr("property")(
      nb::cpp_function([](const array& a) { return transpose(a); }));
  def_array_method("flatten", [](const array& a, int st, int en, SD s) { return flatten(a, st, en, s); },
                   "start_axis"_a = 0, "end_axis"_a = -1, nb::kw_only(), "stream"_a = nb::none());
  def_array_method("squeeze", &squeeze_arg, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  def_array_method("swapaxes", [](const array& a, int x, int y, SD s) { return swapaxes(a, x, y, s); }, "axis1"_a,
                   "axis2"_a, nb::kw_only(), "stream"_a = nb::none());
  def_array_method("moveaxis", [](const array& a, int x, int y, SD s) { return moveaxis(a, x, y, s); }, "source"_a,
                   "destination"_a, nb::kw_only(), "stream"_a = nb::none());
  def_array_method("split",
                   [](const array& a, nb::handle ios, int axis, SD s) { return to_list(split_arg(a, ios, axis, s)); },
                   "indices_or_sections"_a, "axis"_a = 0, nb::kw_only(), "stream"_a = nb::none());
}

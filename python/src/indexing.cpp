// a[idx], a[idx] = v, a.at[idx].add(v) ..., and mx.take / take_along_axis /
// put_along_axis.
//
// Indexing follows numpy: ints, slices, None and one Ellipsis are basic
// indices (views: Slice then Reshape); integer arrays (and ints next to them)
// are advanced indices, broadcast together, lowered to Gather. Their result
// dimensions replace the indexed axes when the advanced indices are adjacent
// in the index tuple, and go first otherwise.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <numeric>

#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "ops/op_utils.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

// An index that cannot be used: MLX raises ValueError, numpy IndexError.
// alloy.core.InvalidIndexError is both, so code written for either catches
// it. (An index past the end stays a plain IndexError: MLX reads outside
// the array there.)
[[noreturn]] void throw_invalid_index(const std::string& message) {
  static PyObject* type = [] {
    PyObject* bases = PyTuple_Pack(2, PyExc_IndexError, PyExc_ValueError);
    PyObject* t = PyErr_NewException("alloy.core.InvalidIndexError", bases, nullptr);
    Py_XDECREF(bases);
    return t;  // kept for the life of the process
  }();
  if (!type) throw nb::python_error();
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

struct Entry {
  enum Kind { Int, Slice, NewAxis, Ellipsis, Array } kind;
  int64_t value = 0;  // Int
  nb::object slice;   // Slice
  std::optional<array> arr;
  nb::object host;  // Array given as Python/numpy data: range-checked eagerly
};

// One slice entry normalised against an axis of size n.
struct Range {
  ShapeElem start, stop, step, length;
};

Range slice_range(nb::handle sl, ShapeElem n) {
  Py_ssize_t start, stop, step;
  if (PySlice_Unpack(sl.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
  if (step == 0) throw std::invalid_argument("[getitem] slice step cannot be zero.");
  Py_ssize_t len = PySlice_AdjustIndices(n, &start, &stop, step);
  return {static_cast<ShapeElem>(start), static_cast<ShapeElem>(stop), static_cast<ShapeElem>(step),
          static_cast<ShapeElem>(len)};
}

Entry parse_entry(nb::handle h) {
  if (h.is_none()) return {Entry::NewAxis};
  if (h.ptr() == Py_Ellipsis) return {Entry::Ellipsis};
  if (PySlice_Check(h.ptr())) return {Entry::Slice, 0, nb::borrow<nb::object>(h)};
  if (PyBool_Check(h.ptr())) throw std::invalid_argument("[getitem] boolean indices are not supported.");
  if (PyLong_Check(h.ptr())) return {Entry::Int, nb::cast<int64_t>(h)};
  // numpy integer scalars (and 0-d numpy arrays) index like Python ints.
  bool foreign_scalar = !nb::isinstance<array>(h) && PyIndex_Check(h.ptr()) &&
                        (!nb::hasattr(h, "shape") || nb::len(nb::object(h.attr("shape"))) == 0);
  if (foreign_scalar) return {Entry::Int, nb::cast<int64_t>(nb::steal(PyNumber_Index(h.ptr())))};
  bool is_array_like = nb::isinstance<array>(h) || nb::isinstance<nb::list>(h) || nb::hasattr(h, "__array__") ||
                       nb::hasattr(h, "__dlpack__");
  if (!is_array_like) {
    throw_invalid_index(std::string("[getitem] cannot index with an object of type ") + nb::type_name(h.type()).c_str() +
                        ".");
  }
  array a = py::to_array(h);
  if (a.dtype() == Dtype::bool_) throw std::invalid_argument("[getitem] boolean mask indices are not supported.");
  if (!is_integral(a.dtype())) {
    throw_invalid_index(std::string("[getitem] arrays used as indices must be integers, got ") + dtype_name(a.dtype()) +
                        ".");
  }
  return {Entry::Array, 0, nb::object(), a, nb::isinstance<array>(h) ? nb::object() : nb::borrow<nb::object>(h)};
}

// The index with its Ellipsis expanded to full slices: one consuming entry
// (Int, Slice, Array) per axis of the array, plus NewAxis entries.
struct Index {
  std::vector<Entry> entries;
  std::vector<int> axis_of;  // entry -> axis it consumes (-1 for NewAxis)
  bool advanced = false;
  bool adjacent = true;  // the advanced entries form one run
};

Index parse_index(const array& a, nb::handle idx, const char* op) {
  Index ix;
  std::vector<Entry> raw;
  if (nb::isinstance<nb::tuple>(idx)) {
    for (nb::handle h : idx) raw.push_back(parse_entry(h));
  } else {
    raw.push_back(parse_entry(idx));
  }
  int consuming = 0, ellipses = 0;
  for (auto& e : raw) {
    consuming += e.kind == Entry::Int || e.kind == Entry::Slice || e.kind == Entry::Array;
    ellipses += e.kind == Entry::Ellipsis;
  }
  // ValueError, as MLX raises it (numpy's is IndexError).
  if (ellipses > 1) throw nb::value_error((std::string("[") + op + "] an index can only have one Ellipsis (...).").c_str());
  if (consuming > a.ndim()) {
    throw_invalid_index(std::string("[") + op + "] too many indices: the array has " + std::to_string(a.ndim()) +
                        " dimensions but " + std::to_string(consuming) + " were indexed.");
  }
  auto full_slice = [] { return Entry{Entry::Slice, 0, nb::steal(PySlice_New(nullptr, nullptr, nullptr))}; };
  for (auto& e : raw) {
    if (e.kind == Entry::Ellipsis) {
      for (int i = consuming; i < a.ndim(); ++i) ix.entries.push_back(full_slice());
    } else {
      ix.entries.push_back(std::move(e));
    }
  }
  if (!ellipses) {
    for (int i = consuming; i < a.ndim(); ++i) ix.entries.push_back(full_slice());
  }
  int axis = 0, first = -1, last = -1, n_adv = 0;
  for (size_t i = 0; i < ix.entries.size(); ++i) {
    const Entry& e = ix.entries[i];
    ix.axis_of.push_back(e.kind == Entry::NewAxis ? -1 : axis++);
    if (e.kind == Entry::Array) ix.advanced = true;
  }
  if (ix.advanced) {
    for (size_t i = 0; i < ix.entries.size(); ++i) {
      auto k = ix.entries[i].kind;
      if (k == Entry::Array || k == Entry::Int) {
        if (first < 0) first = static_cast<int>(i);
        last = static_cast<int>(i);
        ++n_adv;
      }
    }
    ix.adjacent = last - first + 1 == n_adv;
  }
  // Python ints and host index data are checked here, so the error names the
  // axis (IndexError). Lazy mx.array indices are clamped by Gather instead.
  auto out_of_bounds = [&](int64_t v, int ax, int64_t n) {
    return nb::index_error((std::string("[") + op + "] index " + std::to_string(v) + " is out of bounds for axis " +
                            std::to_string(ax) + " with size " + std::to_string(n) + ".")
                               .c_str());
  };
  for (size_t i = 0; i < ix.entries.size(); ++i) {
    Entry& e = ix.entries[i];
    if (e.kind == Entry::Array && e.host.is_valid() && e.arr->size() > 0) {
      nb::object np_idx = nb::module_::import_("numpy").attr("asarray")(e.host);
      const int64_t n = a.shape(ix.axis_of[i]);
      int64_t lo = nb::cast<int64_t>(np_idx.attr("min")()), hi = nb::cast<int64_t>(np_idx.attr("max")());
      if (lo < -n) throw out_of_bounds(lo, ix.axis_of[i], n);
      if (hi >= n) throw out_of_bounds(hi, ix.axis_of[i], n);
    }
    if (e.kind != Entry::Int) continue;
    const int ax = ix.axis_of[i];
    const int64_t n = a.shape(ax);
    if (e.value < -n || e.value >= n) throw out_of_bounds(e.value, ax, n);
    if (e.value < 0) e.value += n;
  }
  return ix;
}

// ---- basic indexing: one Slice, then a Reshape dropping int axes and
// inserting new ones (both views).

struct BasicPlan {
  Shape start, stop, step;
  Shape final_shape;  // the result of a[idx]
  Shape slice_shape;  // the Slice's shape (1 at int axes, no new axes)
};

BasicPlan basic_plan(const array& a, const Index& ix) {
  BasicPlan p;
  for (size_t i = 0; i < ix.entries.size(); ++i) {
    const Entry& e = ix.entries[i];
    if (e.kind == Entry::NewAxis) {
      p.final_shape.push_back(1);
      continue;
    }
    ShapeElem n = a.shape(ix.axis_of[i]);
    if (e.kind == Entry::Int) {
      p.start.push_back(static_cast<ShapeElem>(e.value));
      p.stop.push_back(static_cast<ShapeElem>(e.value + 1));
      p.step.push_back(1);
      p.slice_shape.push_back(1);
    } else {
      Range r = slice_range(e.slice, n);
      p.start.push_back(r.start);
      p.stop.push_back(r.stop);
      p.step.push_back(r.step);
      p.slice_shape.push_back(r.length);
      p.final_shape.push_back(r.length);
    }
  }
  return p;
}

array basic_get(const array& a, const Index& ix) {
  BasicPlan p = basic_plan(a, ix);
  return reshape(slice(a, p.start, p.stop, p.step), p.final_shape);
}

// ---- advanced indexing

// Where the advanced result dims go, as numpy: tokens in output order.
// Token -1 = the broadcast index dims, -2 = a new axis, k >= 0 = the k-th
// sliced (non-advanced) axis.
std::vector<int> output_tokens(const Index& ix) {
  std::vector<int> tokens;
  bool placed = false;
  if (!ix.adjacent) {
    tokens.push_back(-1);
    placed = true;
  }
  int k = 0;
  for (const Entry& e : ix.entries) {
    if (e.kind == Entry::NewAxis) {
      tokens.push_back(-2);
    } else if (e.kind == Entry::Slice) {
      tokens.push_back(k++);
    } else if (!placed) {
      tokens.push_back(-1);
      placed = true;
    }
  }
  return tokens;
}

struct AdvancedParts {
  std::vector<array> indices;  // advanced index arrays, broadcast to `bshape`
  std::vector<int> axes;       // the axes they index
  Shape bshape;
};

AdvancedParts advanced_parts(const Index& ix, const char* op) {
  AdvancedParts parts;
  std::vector<array> raw;
  for (size_t i = 0; i < ix.entries.size(); ++i) {
    const Entry& e = ix.entries[i];
    if (e.kind == Entry::Array) {
      raw.push_back(*e.arr);
    } else if (e.kind == Entry::Int) {
      raw.push_back(array(static_cast<int32_t>(e.value)));
    } else {
      continue;
    }
    parts.axes.push_back(ix.axis_of[i]);
  }
  try {
    for (auto& r : raw) parts.bshape = broadcast_shapes(parts.bshape, r.shape());
  } catch (const std::invalid_argument&) {
    throw nb::value_error((std::string("[") + op + "] the index arrays cannot be broadcast together.").c_str());
  }
  for (auto& r : raw) parts.indices.push_back(broadcast_to(r, parts.bshape));
  return parts;
}

array advanced_get(const array& a, const Index& ix) {
  // Slices first (views), full range on advanced axes.
  Shape start, stop, step;
  std::vector<int> sliced_axes;
  for (size_t i = 0; i < ix.entries.size(); ++i) {
    const Entry& e = ix.entries[i];
    if (e.kind == Entry::NewAxis) continue;
    ShapeElem n = a.shape(ix.axis_of[i]);
    if (e.kind == Entry::Slice) {
      Range r = slice_range(e.slice, n);
      start.push_back(r.start), stop.push_back(r.stop), step.push_back(r.step);
      sliced_axes.push_back(ix.axis_of[i]);
    } else {
      start.push_back(0), stop.push_back(n), step.push_back(1);
    }
  }
  array src = slice(a, start, stop, step);
  AdvancedParts parts = advanced_parts(ix, "getitem");
  Shape sizes = src.shape();
  for (int ax : parts.axes) sizes[ax] = 1;
  array g = gather(src, parts.indices, parts.axes, sizes);
  // (B..., sizes...) -> (B..., sliced dims...)
  const int nb_dims = static_cast<int>(parts.bshape.size());
  Shape compact = parts.bshape;
  for (int ax : sliced_axes) compact.push_back(src.shape(ax));
  g = reshape(g, compact);
  // Into numpy's order, then new axes.
  std::vector<int> tokens = output_tokens(ix);
  std::vector<int> perm;
  Shape final_shape;
  for (int t : tokens) {
    if (t == -1) {
      for (int d = 0; d < nb_dims; ++d) perm.push_back(d), final_shape.push_back(parts.bshape[d]);
    } else if (t == -2) {
      final_shape.push_back(1);
    } else {
      perm.push_back(nb_dims + t);
      final_shape.push_back(compact[nb_dims + t]);
    }
  }
  return reshape(transpose(g, perm), final_shape);
}

array getitem(const array& a, nb::handle idx) {
  Index ix = parse_index(a, idx, "getitem");
  return ix.advanced ? advanced_get(a, ix) : basic_get(a, ix);
}

// ---- updates

// numpy lets a value carry extra leading size-1 dims.
array fit_update(const array& v, const Shape& shape, const char* op) {
  array u = v;
  while (u.ndim() > static_cast<int>(shape.size()) && u.shape(0) == 1) u = squeeze(u, {0});
  try {
    return broadcast_to(u, shape);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(std::string("[") + op + "] cannot broadcast a value of shape " +
                                shape_to_string(v.shape()) + " to the indexed shape " + shape_to_string(shape) + ".");
  }
}

enum class UpdateOp { set, add, subtract, multiply, divide, maximum, minimum };

// a with a[idx] replaced by (or combined with) v.
array update_at(const array& a, nb::handle idx, nb::handle value, UpdateOp uop, const char* op) {
  Index ix = parse_index(a, idx, op);
  array v = py::to_array_like(value, a);
  if (!ix.advanced) {
    BasicPlan p = basic_plan(a, ix);
    array upd = fit_update(v, p.final_shape, op);
    if (uop != UpdateOp::set) {
      array cur = reshape(slice(a, p.start, p.stop, p.step), p.final_shape);
      switch (uop) {
        case UpdateOp::add: upd = add(cur, upd); break;
        case UpdateOp::subtract: upd = subtract(cur, upd); break;
        case UpdateOp::multiply: upd = multiply(cur, upd); break;
        case UpdateOp::divide: upd = divide(cur, upd); break;
        case UpdateOp::maximum: upd = maximum(cur, upd); break;
        case UpdateOp::minimum: upd = minimum(cur, upd); break;
        case UpdateOp::set: break;
      }
    }
    return slice_update(a, reshape(upd, p.slice_shape), p.start, p.stop, p.step);
  }
  // Advanced: index every axis with arrays shaped to the result grid (the
  // result shape without new axes), then one Scatter with 1-element blocks.
  AdvancedParts parts = advanced_parts(ix, op);
  std::vector<int> tokens = output_tokens(ix);
  const int nb_dims = static_cast<int>(parts.bshape.size());
  Shape grid, final_shape;
  std::vector<int> slice_pos;  // grid position of the k-th sliced axis
  int adv_pos = 0;
  std::vector<Range> ranges;
  std::vector<int> sliced_axes;
  for (size_t i = 0; i < ix.entries.size(); ++i) {
    if (ix.entries[i].kind == Entry::Slice) {
      ranges.push_back(slice_range(ix.entries[i].slice, a.shape(ix.axis_of[i])));
      sliced_axes.push_back(ix.axis_of[i]);
    }
  }
  slice_pos.resize(ranges.size());
  for (int t : tokens) {
    if (t == -1) {
      adv_pos = static_cast<int>(grid.size());
      grid.insert(grid.end(), parts.bshape.begin(), parts.bshape.end());
      final_shape.insert(final_shape.end(), parts.bshape.begin(), parts.bshape.end());
    } else if (t == -2) {
      final_shape.push_back(1);
    } else {
      slice_pos[t] = static_cast<int>(grid.size());
      grid.push_back(ranges[t].length);
      final_shape.push_back(ranges[t].length);
    }
  }
  const int gd = static_cast<int>(grid.size());
  std::vector<array> indices;
  std::vector<int> axes;
  for (size_t k = 0; k < parts.indices.size(); ++k) {
    Shape s(gd, 1);
    for (int d = 0; d < nb_dims; ++d) s[adv_pos + d] = parts.bshape[d];
    indices.push_back(reshape(parts.indices[k], s));
    axes.push_back(parts.axes[k]);
  }
  for (size_t k = 0; k < ranges.size(); ++k) {
    Shape s(gd, 1);
    s[slice_pos[k]] = ranges[k].length;
    indices.push_back(reshape(arange(ranges[k].start, ranges[k].start + ranges[k].length * static_cast<double>(ranges[k].step),
                                     ranges[k].step, Dtype::int32),
                              s));
    axes.push_back(sliced_axes[k]);
  }
  array upd = fit_update(v, final_shape, op);
  ScatterReduce reduce = ScatterReduce::none;
  switch (uop) {
    case UpdateOp::set: break;
    case UpdateOp::add: reduce = ScatterReduce::add; break;
    case UpdateOp::subtract: reduce = ScatterReduce::add, upd = negative(upd); break;
    case UpdateOp::multiply: reduce = ScatterReduce::prod; break;
    case UpdateOp::divide: reduce = ScatterReduce::prod, upd = reciprocal(astype(upd, a.dtype())); break;
    case UpdateOp::maximum: reduce = ScatterReduce::max; break;
    case UpdateOp::minimum: reduce = ScatterReduce::min; break;
  }
  Shape upd_shape = grid;
  upd_shape.insert(upd_shape.end(), a.ndim(), 1);
  return scatter(a, indices, reshape(upd, upd_shape), axes, reduce);
}

// a.at[idx]: remembers the array and the index until an update method runs.
struct ArrayAt {
  array a;
  nb::object index;
};

}  // namespace

void init_indexing(nb::module_& m) {
  def_array_method("__getitem__", [](const array& a, nb::handle idx) { return getitem(a, idx); }, nb::arg("index").none());
  // In place for the Python object (as MLX): `a` now names the updated array.
  def_array_method("__setitem__", [](array& a, nb::handle idx, nb::handle v) {
    // A Python bool alone, as MLX takes it (numpy's rule): True sets every
    // element, False none; either way the value must broadcast to
    // (1, *a.shape).
    if (PyBool_Check(idx.ptr())) {
      const array value = py::to_array_like(v, a);
      Shape target = a.shape();
      target.insert(target.begin(), 1);
      broadcast_shapes(value.shape(), target);
      if (idx.ptr() == Py_True) a = update_at(a, nb::borrow(Py_Ellipsis), nb::cast(value), UpdateOp::set, "setitem");
      return;
    }
    a = update_at(a, idx, v, UpdateOp::set, "setitem");
  }, nb::arg("index").none(), nb::arg("value"));

  nb::class_<ArrayAt>(m, "ArrayAt", "a.at[idx]: out-of-place updates at an index (repeated indices accumulate).")
      .def("__getitem__",
           [](const ArrayAt& at, nb::handle idx) { return ArrayAt{at.a, nb::borrow<nb::object>(idx)}; },
           nb::arg("index").none())
      .def("add", [](const ArrayAt& at, nb::handle v) { return update_at(at.a, at.index, v, UpdateOp::add, "at.add"); }, "value"_a)
      .def("subtract", [](const ArrayAt& at, nb::handle v) { return update_at(at.a, at.index, v, UpdateOp::subtract, "at.subtract"); }, "value"_a)
      .def("multiply", [](const ArrayAt& at, nb::handle v) { return update_at(at.a, at.index, v, UpdateOp::multiply, "at.multiply"); }, "value"_a)
      .def("divide", [](const ArrayAt& at, nb::handle v) { return update_at(at.a, at.index, v, UpdateOp::divide, "at.divide"); }, "value"_a)
      .def("maximum", [](const ArrayAt& at, nb::handle v) { return update_at(at.a, at.index, v, UpdateOp::maximum, "at.maximum"); }, "value"_a)
      .def("minimum", [](const ArrayAt& at, nb::handle v) { return update_at(at.a, at.index, v, UpdateOp::minimum, "at.minimum"); }, "value"_a);
  nb::type<array>().attr("at") = nb::module_::import_("builtins").attr("property")(
      nb::cpp_function([](const array& a) { return ArrayAt{a, nb::none()}; }));

  m.def("take",
        [](const array& a, nb::handle indices, std::optional<int> axis, SD s) {
          array idx = PyLong_Check(indices.ptr()) ? array(nb::cast<int32_t>(indices)) : py::to_array(indices);
          return axis ? take(a, idx, *axis, s) : take(a, idx, s);
        },
        "a"_a, "indices"_a, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
        "Elements at `indices` along `axis` (of the flattened array when axis is None).");
  m.def("take_along_axis",
        [](const array& a, const array& indices, std::optional<int> axis, SD s) {
          return axis ? take_along_axis(a, indices, *axis, s) : take_along_axis(reshape(a, {-1}, s), indices, 0, s);
        },
        "a"_a, "indices"_a, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  m.def("put_along_axis",
        [](const array& a, const array& indices, nb::handle values, std::optional<int> axis, SD s) {
          array v = py::to_array_like(values, a);
          if (axis) return put_along_axis(a, indices, v, *axis, s);
          return reshape(put_along_axis(reshape(a, {-1}, s), indices, v, 0, s), a.shape(), s);
        },
        "a"_a, "indices"_a, "values"_a, "axis"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
}

#include "convert.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include <nanobind/ndarray.h>

#include "alloy/ops.h"
#include "alloy/transforms.h"

namespace alloy::py {

namespace {

// ---- nested Python lists -------------------------------------------------

enum class LeafKind { Bool = 0, Int = 1, Float = 2, Complex = 3 };

struct ListReader {
  Shape shape;
  std::vector<std::complex<double>> values;  // all leaves, widened
  std::vector<int64_t> ints;                 // exact integers while kind <= Int
  LeafKind kind = LeafKind::Bool;            // of every leaf
  bool saw_leaf = false;
  // Arrays in the list (MLX stacks them): their dtypes promoted, and the kind
  // of the Python leaves beside them.
  std::optional<Dtype> array_dtype;
  LeafKind python_kind = LeafKind::Bool;
  bool saw_python_leaf = false;
  bool in_array = false;

  void read(nb::handle obj, size_t depth) {
    if (nb::isinstance<array>(obj)) {
      // An array in the list: its dtype joins the others', and its values
      // are read as nested Python lists, as the rest of the list is.
      array a = nb::cast<array>(obj);
      array_dtype = array_dtype ? promote_types(*array_dtype, a.dtype()) : a.dtype();
      const bool outer = in_array;
      in_array = true;
      read_items(a.ndim() == 0 ? to_scalar(a) : to_list(a), depth);
      in_array = outer;
      return;
    }
    read_items(obj, depth);
  }

  void read_items(nb::handle obj, size_t depth) {
    bool seq = nb::isinstance<nb::list>(obj) || nb::isinstance<nb::tuple>(obj);
    if (seq) {
      size_t n = nb::len(obj);
      if (depth == shape.size()) {
        if (saw_leaf) throw std::invalid_argument("[array] inhomogeneous nested list: a list where a scalar was expected.");
        shape.push_back(static_cast<ShapeElem>(n));
      } else if (shape[depth] != static_cast<ShapeElem>(n)) {
        throw std::invalid_argument("[array] inhomogeneous nested list: lengths " + std::to_string(shape[depth]) +
                                    " and " + std::to_string(n) + " at depth " + std::to_string(depth) + ".");
      }
      for (nb::handle item : obj) read(item, depth + 1);
      return;
    }
    if (depth != shape.size()) {
      throw std::invalid_argument("[array] inhomogeneous nested list: a scalar where a list was expected.");
    }
    saw_leaf = true;
    read_leaf(obj);
  }

  void note_kind(LeafKind k) {
    kind = std::max(kind, k);
    if (!in_array) {
      python_kind = std::max(python_kind, k);
      saw_python_leaf = true;
    }
  }

  void read_leaf(nb::handle obj) {
    if (PyBool_Check(obj.ptr())) {
      values.emplace_back(obj.ptr() == Py_True ? 1.0 : 0.0, 0.0);
      ints.push_back(obj.ptr() == Py_True);
      note_kind(LeafKind::Bool);
    } else if (PyLong_Check(obj.ptr())) {
      int64_t v = nb::cast<int64_t>(obj);
      values.emplace_back(static_cast<double>(v), 0.0);
      ints.push_back(v);
      note_kind(LeafKind::Int);
    } else if (PyFloat_Check(obj.ptr())) {
      values.emplace_back(PyFloat_AsDouble(obj.ptr()), 0.0);
      ints.push_back(0);
      note_kind(LeafKind::Float);
    } else if (PyComplex_Check(obj.ptr())) {
      values.emplace_back(PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr()));
      ints.push_back(0);
      note_kind(LeafKind::Complex);
    } else if (nb::hasattr(obj, "item") && nb::hasattr(obj, "dtype")) {  // numpy scalar
      read_leaf(obj.attr("item")());
    } else {
      throw std::invalid_argument(std::string("[array] cannot convert an element of type ") +
                                  nb::type_name(obj.type()).c_str() + " to an array.");
    }
  }
};

Dtype default_dtype(LeafKind k, bool int_fits_32) {
  switch (k) {
    case LeafKind::Bool: return Dtype::bool_;
    case LeafKind::Int: return int_fits_32 ? Dtype::int32 : Dtype::int64;
    case LeafKind::Float: return Dtype::float32;
    case LeafKind::Complex: return Dtype::complex64;
  }
  return Dtype::float32;
}

// The dtype of a list holding arrays: theirs and the Python leaves' own
// (int32, float32, ...) promoted together, as MLX builds it ([int8 array,
// 1] is int32; [float16 array, 2] float16).
Dtype stacked_dtype(const ListReader& r, bool int_fits_32) {
  Dtype d = *r.array_dtype;
  return r.saw_python_leaf ? promote_types(d, default_dtype(r.python_kind, int_fits_32)) : d;
}

// [a, b, ...] of arrays of one shape (the common case, and large ones): a
// stack node rather than their elements read through Python lists. Empty
// when the list is anything else.
std::optional<array> stacked_arrays(nb::handle obj, std::optional<Dtype> dtype) {
  const size_t n = nb::len(obj);
  if (n == 0) return std::nullopt;
  std::vector<array> items;
  items.reserve(n);
  for (nb::handle item : obj) {
    if (!nb::isinstance<array>(item)) return std::nullopt;
    items.push_back(nb::cast<array>(item));
    if (items.back().ndim() == 0 || items.back().shape() != items.front().shape()) return std::nullopt;
  }
  Dtype d = items.front().dtype();
  for (const array& a : items) d = promote_types(d, a.dtype());
  for (array& a : items) a = astype(a, dtype.value_or(d));
  return stack(items, 0);
}

array from_list(nb::handle obj, std::optional<Dtype> dtype) {
  if (std::optional<array> stacked = stacked_arrays(obj, dtype)) return *stacked;
  ListReader r;
  r.read(obj, 0);
  bool fits32 = true;
  for (auto v : r.ints) fits32 = fits32 && v >= INT32_MIN && v <= INT32_MAX;
  // An empty list is float32 (MLX's default dtype), not bool.
  Dtype out = dtype.value_or(r.array_dtype ? stacked_dtype(r, fits32)
                                           : r.saw_leaf ? default_dtype(r.kind, fits32) : Dtype::float32);
  if (r.kind <= LeafKind::Int && !is_inexact(out)) {
    return array(r.ints, r.shape, out);
  }
  if (r.kind == LeafKind::Complex) {
    std::vector<complex64_t> c(r.values.begin(), r.values.end());
    return array(c, r.shape, out);
  }
  std::vector<double> d;
  d.reserve(r.values.size());
  for (auto& v : r.values) d.push_back(v.real());
  return array(d, r.shape, out);
}

// ---- buffers from numpy / DLPack -------------------------------------------

std::optional<Dtype> dtype_from_dlpack(nb::dlpack::dtype t) {
  using nb::dlpack::dtype_code;
  auto code = static_cast<dtype_code>(t.code);
  if (t.lanes != 1) return std::nullopt;
  switch (code) {
    case dtype_code::Bool: return Dtype::bool_;
    case dtype_code::Int:
      switch (t.bits) { case 8: return Dtype::int8; case 16: return Dtype::int16; case 32: return Dtype::int32; case 64: return Dtype::int64; }
      break;
    case dtype_code::UInt:
      switch (t.bits) { case 8: return Dtype::uint8; case 16: return Dtype::uint16; case 32: return Dtype::uint32; case 64: return Dtype::uint64; }
      break;
    case dtype_code::Float:
      switch (t.bits) { case 16: return Dtype::float16; case 32: return Dtype::float32; case 64: return Dtype::float64; }
      break;
    case dtype_code::Bfloat:
      if (t.bits == 16) return Dtype::bfloat16;
      break;
    case dtype_code::Complex:
      if (t.bits == 64) return Dtype::complex64;
      break;
    default: break;
  }
  return std::nullopt;
}

nb::dlpack::dtype dlpack_from_dtype(Dtype d) {
  using nb::dlpack::dtype_code;
  dtype_code c = dtype_code::Float;
  switch (kind_of(d)) {
    case DtypeKind::Bool: c = dtype_code::Bool; break;
    case DtypeKind::Unsigned: c = dtype_code::UInt; break;
    case DtypeKind::Signed: c = dtype_code::Int; break;
    case DtypeKind::Floating: c = d == Dtype::bfloat16 ? dtype_code::Bfloat : dtype_code::Float; break;
    case DtypeKind::Complex: c = dtype_code::Complex; break;
  }
  return nb::dlpack::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(size_of(d) * 8), 1};
}

// Keeps a Python object alive as an array's memory owner; releases it with the GIL.
std::shared_ptr<void> python_owner(nb::object o) {
  auto* held = new nb::object(std::move(o));
  return std::shared_ptr<void>(held, [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::object*>(p);
  });
}

array from_ndarray(const nb::ndarray<nb::ro>& nd, nb::handle owner, bool share, std::optional<Dtype> dtype,
                   bool float64_to_float32) {
  auto src_dtype = dtype_from_dlpack(nd.dtype());
  if (!src_dtype) throw std::invalid_argument("[array] unsupported element type in the input buffer.");
  if (nd.device_type() != nb::device::cpu::value) {
    throw std::invalid_argument("[array] only host (CPU) buffers can be imported without the CUDA backend.");
  }
  Shape shape;
  Strides strides;
  for (size_t i = 0; i < nd.ndim(); ++i) {
    shape.push_back(static_cast<ShapeElem>(nd.shape(i)));
    strides.push_back(nd.stride(i));
  }
  Buffer b{const_cast<void*>(nd.data()), nd.nbytes(), Device(Device::cpu)};
  auto data = std::make_shared<Data>(b, python_owner(nb::borrow<nb::object>(owner)));
  // A view of the foreign memory (no copy).
  array view(data, shape, strides, *src_dtype, 0);
  Dtype target = dtype.value_or(*src_dtype == Dtype::float64 && float64_to_float32 ? Dtype::float32 : *src_dtype);
  if (share && target == *src_dtype) return view;
  // numpy memory is mutable by its owner: take a copy, as MLX does.
  array out = target == *src_dtype ? copy(view, Device(Device::cpu)) : astype(view, target, Device(Device::cpu));
  out.eval();
  return out;
}

}  // namespace

bool is_python_scalar(nb::handle obj) {
  return PyBool_Check(obj.ptr()) || PyLong_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) ||
         PyComplex_Check(obj.ptr());
}

array to_array(nb::handle obj, std::optional<Dtype> dtype) {
  if (nb::isinstance<array>(obj)) {
    array a = nb::cast<array>(obj);
    return dtype ? astype(a, *dtype) : a;
  }
  if (PyBool_Check(obj.ptr())) return array(obj.ptr() == Py_True, dtype.value_or(Dtype::bool_));
  if (PyLong_Check(obj.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow) throw std::invalid_argument("[array] Python integer out of the range of int64.");
    bool fits = v >= INT32_MIN && v <= INT32_MAX;
    return array(static_cast<int64_t>(v), dtype.value_or(fits ? Dtype::int32 : Dtype::int64));
  }
  if (PyFloat_Check(obj.ptr())) return array(PyFloat_AsDouble(obj.ptr()), dtype.value_or(Dtype::float32));
  if (PyComplex_Check(obj.ptr())) {
    complex64_t c(static_cast<float>(PyComplex_RealAsDouble(obj.ptr())),
                  static_cast<float>(PyComplex_ImagAsDouble(obj.ptr())));
    return array(c, dtype.value_or(Dtype::complex64));
  }
  if (nb::isinstance<nb::list>(obj) || nb::isinstance<nb::tuple>(obj)) return from_list(obj, dtype);

  // numpy (including ml_dtypes' bfloat16, which has no buffer-protocol code),
  // and, as MLX takes them, other buffer-protocol objects (a memoryview of
  // packed kernel parameters, bytes, array.array) through a numpy view of
  // their memory, in the element type of their format.
  nb::module_ np = nb::module_::import_("numpy");
  const bool numpy_object = nb::isinstance(obj, np.attr("ndarray")) || nb::isinstance(obj, np.attr("generic"));
  if (numpy_object || PyObject_CheckBuffer(obj.ptr())) {
    nb::object arr = numpy_object ? np.attr("asarray")(obj)
                                  : np.attr("asarray")(nb::steal(PyMemoryView_FromObject(obj.ptr())));
    std::string name = nb::cast<std::string>(arr.attr("dtype").attr("name"));
    if (name == "complex128") {
      // MLX has no complex128: numpy narrows it to complex64 (MLX's dtype for it).
      arr = arr.attr("astype")(np.attr("complex64"));
      name = "complex64";
    }
    if (name == "bfloat16") {
      // ascontiguousarray makes 0-d arrays 1-d: restore the shape after.
      nb::object bits = np.attr("ascontiguousarray")(arr).attr("view")(np.attr("uint16")).attr("reshape")(
          arr.attr("shape"));
      auto nd = nb::cast<nb::ndarray<nb::ro>>(bits);
      array raw = from_ndarray(nd, bits, false, Dtype::uint16, false);
      array out(raw.data_shared_ptr(), raw.shape(), raw.strides(), Dtype::bfloat16, raw.offset());
      return dtype ? astype(out, *dtype) : out;
    }
    auto nd = nb::cast<nb::ndarray<nb::ro>>(arr);
    return from_ndarray(nd, arr, false, dtype, true);
  }
  // Other producers (PyTorch ...) through DLPack: shared when nothing converts.
  if (nb::hasattr(obj, "__dlpack__")) {
    auto nd = nb::cast<nb::ndarray<nb::ro>>(obj);
    return from_ndarray(nd, obj, true, dtype, false);
  }
  throw std::invalid_argument(std::string("[array] cannot convert an object of type ") +
                              nb::type_name(obj.type()).c_str() + " to an array.");
}

array int_scalar_to(nb::handle obj, Dtype dtype) {
  // As MLX: a Python int that an integer dtype of under 8 bytes cannot hold
  // is an error (uint8_array + (-1)), where a 64-bit dtype wraps.
  if (is_integral(dtype) && size_of(dtype) < 8) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    const int bits = 8 * static_cast<int>(size_of(dtype));
    const long long lo = is_unsigned(dtype) ? 0 : -(1LL << (bits - 1));
    const long long hi = is_unsigned(dtype) ? (1LL << bits) - 1 : (1LL << (bits - 1)) - 1;
    if (!overflow && (v < lo || v > hi)) {
      throw std::invalid_argument("Converting " + std::to_string(v) + " to " + dtype_name(dtype) +
                                  " would result in overflow.");
    }
  }
  return to_array(obj, dtype);
}

array to_array_like(nb::handle obj, const array& other) {
  Dtype od = other.dtype();
  if (!is_python_scalar(obj)) {
    // An array keeps its dtype; numpy arrays and scalars (and lists) take
    // the array's, as MLX converts them.
    return nb::isinstance<array>(obj) ? nb::cast<array>(obj) : to_array(obj, od);
  }
  if (PyBool_Check(obj.ptr())) return array(obj.ptr() == Py_True, od);
  if (PyLong_Check(obj.ptr())) {
    // An int scalar keeps the array's dtype unless that is bool.
    return od == Dtype::bool_ ? to_array(obj) : int_scalar_to(obj, od);
  }
  if (PyFloat_Check(obj.ptr())) return to_array(obj, is_inexact(od) ? od : Dtype::float32);
  return to_array(obj, Dtype::complex64);
}

array host_row_major(array a) {
  nb::gil_scoped_release release;
  a.eval();
  if (a.device().type != Device::cpu || !a.flags().row_contiguous) {
    // A row-contiguous host copy (contiguous() would hand back a GPU array as is).
    a = copy(a, Device(Device::cpu));
    a.eval();
  }
  return a;
}

nb::object to_numpy(array a, std::optional<nb::handle> np_dtype) {
  a = host_row_major(std::move(a));
  // Copy into memory the numpy array owns (arrays may share their buffers).
  size_t n = a.nbytes();
  char* copy_mem = new char[std::max<size_t>(n, 1)];
  if (n) std::memcpy(copy_mem, a.raw_data(), n);  // an empty array may have no memory at all
  nb::capsule owner(copy_mem, [](void* p) noexcept { delete[] static_cast<char*>(p); });
  std::vector<size_t> shape(a.shape().begin(), a.shape().end());
  bool bf16 = a.dtype() == Dtype::bfloat16;
  nb::dlpack::dtype dt = bf16 ? dlpack_from_dtype(Dtype::uint16) : dlpack_from_dtype(a.dtype());
  nb::ndarray<nb::numpy> nd(copy_mem, shape.size(), shape.data(), owner, nullptr, dt);
  nb::object out = nb::cast(nd, nb::rv_policy::reference);
  if (bf16) {
    nb::object ml = nb::module_::import_("ml_dtypes");
    out = out.attr("view")(ml.attr("bfloat16"));
  }
  if (np_dtype && !np_dtype->is_none()) out = out.attr("astype")(*np_dtype);
  return out;
}

nb::object array_protocol(array a, nb::handle np_dtype, nb::handle copy) {
  // numpy 2's __array__(dtype, copy): copy=True asks for a fresh array,
  // copy=None for a view where possible, copy=False for a view or an error.
  if (!copy.is_none() && PyObject_IsTrue(copy.ptr()) == 1) {
    return to_numpy(a, np_dtype.is_none() ? std::nullopt : std::optional<nb::handle>(np_dtype));
  }
  const bool must_view = !copy.is_none();
  {
    nb::gil_scoped_release release;
    a.eval();
  }
  const bool bf16 = a.dtype() == Dtype::bfloat16;
  const char* why = nullptr;
  if (a.device().type != Device::cpu) why = "the array lives in GPU memory";
  if (!why && !np_dtype.is_none()) {
    nb::object np = nb::module_::import_("numpy");
    nb::object mine = bf16 ? nb::module_::import_("ml_dtypes").attr("bfloat16") : np.attr(dtype_name(a.dtype()));
    if (!nb::cast<bool>(np.attr("dtype")(np_dtype).attr("__eq__")(np.attr("dtype")(mine)))) {
      why = "the requested dtype differs from the array's";
    }
  }
  if (why) {
    if (must_view) {
      throw std::invalid_argument(std::string("[array.__array__] cannot give a numpy view without a copy (copy=False): ") +
                                  why + ". Use np.asarray(a) or np.array(a) to allow a copy.");
    }
    return to_numpy(a, np_dtype.is_none() ? std::nullopt : std::optional<nb::handle>(np_dtype));
  }
  // A view of the array's own memory (strides in elements, as nanobind
  // takes them), kept alive by a handle to the array. It is read-only, unlike
  // MLX's: Alloy's buffers never change once written (the GPU keeps copies of
  // host buffers it has read), so a write through the view would be seen by
  // some uses and not others. Writes fail loudly; np.array(a) gives a copy.
  std::vector<size_t> shape(a.shape().begin(), a.shape().end());
  std::vector<int64_t> strides(a.strides().begin(), a.strides().end());
  nb::capsule owner(new array(a), [](void* p) noexcept { delete static_cast<array*>(p); });
  nb::dlpack::dtype dt = bf16 ? dlpack_from_dtype(Dtype::uint16) : dlpack_from_dtype(a.dtype());
  nb::ndarray<nb::numpy, nb::ro> nd(a.raw_data(), shape.size(), shape.data(), owner, strides.data(), dt);
  nb::object out = nb::cast(nd, nb::rv_policy::reference);
  if (bf16) out = out.attr("view")(nb::module_::import_("ml_dtypes").attr("bfloat16"));
  return out;
}

std::optional<int64_t> as_index(nb::handle h) {
  if (PyLong_Check(h.ptr())) return nb::cast<int64_t>(h);
  if (PyFloat_Check(h.ptr()) || !PyIndex_Check(h.ptr())) return std::nullopt;
  // Arrays define __index__ at every rank and refuse it but at rank 0.
  PyObject* index = PyNumber_Index(h.ptr());
  if (!index) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
    PyErr_Clear();
    return std::nullopt;
  }
  return nb::cast<int64_t>(nb::steal(index));
}

namespace {
int narrow_to_int(int64_t i) {
  if (i < INT32_MIN || i > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, ("integer " + std::to_string(i) + " does not fit in 32 bits").c_str());
    throw nb::python_error();
  }
  return static_cast<int>(i);
}
}  // namespace

int int_arg(nb::handle h) {
  std::optional<int64_t> i = as_index(h);
  if (!i) {
    throw nb::type_error(("expected an int or a sequence of ints, got an item of type " +
                          std::string(nb::type_name(h.type()).c_str()))
                             .c_str());
  }
  return narrow_to_int(*i);
}

std::vector<int> ints_arg(nb::handle h) {
  if (std::optional<int64_t> i = as_index(h)) return {narrow_to_int(*i)};
  std::vector<int> out;
  for (nb::handle d : h) out.push_back(int_arg(d));
  return out;
}

Shape shape_arg(nb::handle h) {
  std::vector<int> v = ints_arg(h);
  return Shape(v.begin(), v.end());
}

std::optional<std::vector<int>> axes_arg(nb::handle axis) {
  if (axis.is_none()) return std::nullopt;
  return ints_arg(axis);
}

nb::object to_list(array a) {
  if (a.dtype() == Dtype::bfloat16 || a.dtype() == Dtype::float16) a = astype(a, Dtype::float32);
  return to_numpy(a).attr("tolist")();
}

nb::object to_scalar(array a) {
  if (a.size() != 1) {
    throw std::invalid_argument("[item] only arrays with one element can be converted to a Python scalar (size is " +
                                std::to_string(a.size()) + ").");
  }
  {
    nb::gil_scoped_release release;
    a.eval();
  }
  switch (kind_of(a.dtype())) {
    case DtypeKind::Bool: return nb::bool_(a.item<bool>());
    case DtypeKind::Unsigned: return nb::int_(a.item<uint64_t>());
    case DtypeKind::Signed: return nb::int_(a.item<int64_t>());
    case DtypeKind::Floating: return nb::float_(a.item<double>());
    case DtypeKind::Complex: {
      auto c = a.item<complex64_t>();
      return nb::steal(PyComplex_FromDoubles(c.real(), c.imag()));
    }
  }
  return nb::none();
}

}  // namespace alloy::py

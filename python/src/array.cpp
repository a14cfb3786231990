// mx.array: construction, metadata, conversion to Python and numpy.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/ndarray.h>

#include <cstring>
#include <new>

#include "alloy/allocator.h"
#include "alloy/ops.h"
#include "alloy/transforms.h"
#include "bindings.h"
#include "buffer_protocol.h"
#include "convert.h"
#include "raw_call.h"
#include "stream_or_device.h"

using namespace alloy;

namespace {

// The elements in row-major order as bytes, read on the host (a GPU array
// is copied there): bytes(a), and the payload of a pickled array.
nb::bytes row_major_bytes(const array& a) {
  array host = py::host_row_major(a);
  return nb::bytes(static_cast<const char*>(host.raw_data()), host.nbytes());
}

// Pickling: (row-major bytes, shape, dtype name), rebuilt as an evaluated
// host array. Alloy's own format; the bytes are the platform's (little-endian).
nb::tuple pickle_state(const array& a) {
  nb::list shape;
  for (auto d : a.shape()) shape.append(d);
  return nb::make_tuple(row_major_bytes(a), nb::tuple(shape), std::string(dtype_name(a.dtype())));
}

void unpickle_into(array* self, const nb::tuple& state) {
  if (state.size() != 3) throw std::invalid_argument("[array] a pickled array holds (bytes, shape, dtype).");
  nb::bytes payload = nb::cast<nb::bytes>(state[0]);
  Shape shape;
  for (nb::handle d : nb::cast<nb::tuple>(state[1])) shape.push_back(nb::cast<ShapeElem>(d));
  Dtype dtype = dtype_from_name(nb::cast<std::string>(state[2]));
  const size_t n = shape_size(shape) * size_of(dtype);
  if (payload.size() != n) {
    throw std::invalid_argument("[array] a pickled array of " + std::to_string(shape_size(shape)) + " " +
                                dtype_name(dtype) + " elements needs " + std::to_string(n) + " bytes, got " +
                                std::to_string(payload.size()) + ".");
  }
  Buffer b = allocator(Device(Device::cpu)).malloc(n);
  if (n) std::memcpy(b.ptr, payload.c_str(), n);
  new (self) array(std::make_shared<Data>(b), shape, row_major_strides(shape), dtype);
}

nb::tuple shape_tuple(const array& a) {
  nb::list l;
  for (auto d : a.shape()) l.append(d);
  return nb::tuple(l);
}

std::string array_repr(const array& a) {
  nb::object np = nb::module_::import_("numpy");
  array shown = (a.dtype() == Dtype::bfloat16) ? astype(a, Dtype::float32) : a;
  nb::object arr = py::to_numpy(shown);
  std::string body = nb::cast<std::string>(
      np.attr("array2string")(arr, nb::arg("separator") = ", ", nb::arg("prefix") = "array("));
  return "array(" + body + ", dtype=" + dtype_name(a.dtype()) + ")";
}

// DLPack export: a read-only tensor over the array's memory (no copy), kept
// alive by a handle to the array. copy=True exports a fresh copy instead.
nb::object dlpack_export(const array& self, nb::kwargs kw) {
  array a = self;
  if (kw.contains("copy") && PyObject_IsTrue(nb::object(kw["copy"]).ptr()) == 1) {
    a = copy(self);
    nb::del(kw["copy"]);
  }
  {
    nb::gil_scoped_release release;
    a.eval();
  }
  // GPU arrays are exported through their host copy (numpy and most
  // consumers read host memory; a CUDA DLPack export is not offered yet).
  if (a.device().type != Device::cpu) a = to_host(a);
  using nb::dlpack::dtype_code;
  dtype_code code = dtype_code::Float;
  switch (kind_of(a.dtype())) {
    case DtypeKind::Bool: code = dtype_code::Bool; break;
    case DtypeKind::Unsigned: code = dtype_code::UInt; break;
    case DtypeKind::Signed: code = dtype_code::Int; break;
    case DtypeKind::Floating: code = a.dtype() == Dtype::bfloat16 ? dtype_code::Bfloat : dtype_code::Float; break;
    case DtypeKind::Complex: code = dtype_code::Complex; break;
  }
  nb::dlpack::dtype dt{static_cast<uint8_t>(code), static_cast<uint8_t>(a.itemsize() * 8), 1};
  std::vector<size_t> shape(a.shape().begin(), a.shape().end());
  std::vector<int64_t> strides(a.strides().begin(), a.strides().end());
  nb::capsule owner(new array(a), [](void* p) noexcept { delete static_cast<array*>(p); });
  nb::ndarray<nb::array_api, nb::ro> nd(a.raw_data(), shape.size(), shape.data(), owner, strides.data(), dt, nb::device::cpu::value, 0);
  return nb::cast(nd, nb::rv_policy::reference).attr("__dlpack__")(**kw);
}

// mx.eval(*args): arrays anywhere inside nested lists, tuples and dicts.
PyObject* eval_arrays(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return py::call_translating_exceptions([&] {
    std::vector<array> arrays;
    if (nargs == 1 && nb::isinstance<array>(nb::handle(args[0]))) {
      // One array, the common `mx.eval(out)`: no walk over containers.
      arrays.push_back(*nb::inst_ptr<array>(nb::handle(args[0])));
    } else {
      std::vector<nb::handle> todo(args, args + nargs);
      while (!todo.empty()) {
        nb::handle h = todo.back();
        todo.pop_back();
        if (nb::isinstance<array>(h)) {
          arrays.push_back(nb::cast<array>(h));
        } else if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
          for (nb::handle x : h) todo.push_back(x);
        } else if (nb::isinstance<nb::dict>(h)) {
          for (auto [k, v] : nb::borrow<nb::dict>(h)) todo.push_back(v);
        }
      }
    }
    {
      nb::gil_scoped_release release;  // other Python threads run while this one waits
      eval(std::move(arrays));
    }
    return nb::none();
  });
}

}  // namespace

void init_array(nb::module_& m) {
  nb::class_<array>(m, "array", nb::type_slots(array_buffer_slots()), "A lazy n-dimensional array.")
      .def("__init__",
           [](array* self, nb::handle obj, std::optional<Dtype> dtype) { new (self) array(py::to_array(obj, dtype)); },
           nb::arg("val"), nb::arg("dtype") = nb::none())
      .def_prop_ro("shape", &shape_tuple, "The array's dimensions as a tuple.")
      .def_prop_ro("dtype", &array::dtype)
      .def_prop_ro("size", &array::size)
      .def_prop_ro("ndim", &array::ndim)
      .def_prop_ro("itemsize", &array::itemsize)
      .def_prop_ro("nbytes", &array::nbytes)
      .def("item", [](const array& a) { return py::to_scalar(a); }, "The single element as a Python scalar.")
      .def("tolist", [](const array& a) { return py::to_list(a); }, "Nested Python lists of the elements.")
      .def("__array__",
           [](const array& a, nb::handle dtype, nb::handle copy) { return py::array_protocol(a, dtype, copy); },
           nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__repr__", &array_repr)
      .def("__str__", &array_repr)
      .def("__len__",
           [](const array& a) {
             if (a.ndim() == 0) throw nb::type_error("len() of a 0-d array");
             return a.shape(0);
           })
      .def("__bool__",
           [](const array& a) {
             if (a.size() != 1) {
               throw std::invalid_argument("[array] the truth value of an array with more than one element is ambiguous.");
             }
             return nb::cast<bool>(nb::bool_(py::to_scalar(astype(a, Dtype::bool_))));
           })
      .def("__int__", [](const array& a) { return nb::int_(py::to_scalar(astype(a, Dtype::int64))); })
      .def("__float__", [](const array& a) { return nb::float_(py::to_scalar(astype(a, Dtype::float64))); })
      .def("__complex__",
           [](const array& a) {
             nb::object c = py::to_scalar(astype(a, Dtype::complex64));
             return nb::steal(PyComplex_FromDoubles(nb::cast<double>(c.attr("real")), nb::cast<double>(c.attr("imag"))));
           })
      .def("__index__",
           [](const array& a) {
             // MLX's rule: what stands for an int (a list index, a pad width,
             // an axis) is a 0-d integer array; bool is not an integer here.
             if (!is_integral(a.dtype()) || a.ndim() != 0) {
               throw nb::type_error("Only 0-dimensional integer arrays can be converted to an index.");
             }
             return nb::int_(py::to_scalar(a));
           })
      .def("astype", [](const array& a, Dtype d, StreamOrDevice s) { return astype(a, d, s); }, nb::arg("dtype"),
           nb::arg("stream") = nb::none())
      .def("__copy__", [](const array& a) { return copy(a); })
      .def("__deepcopy__", [](const array& a, nb::handle) { return copy(a); }, nb::arg("memo"))
      .def("__bytes__", &row_major_bytes)
      .def("__getstate__", &pickle_state)
      .def("__setstate__", &unpickle_into)
      .def(
          "__array_namespace__",
          [](const array&, nb::handle api_version) {
            // The array API standard's entry point (einops.array_api and other
            // libraries written against the standard find the ops here).
            if (!api_version.is_none()) {
              throw std::invalid_argument("[array] Explicitly specifying api_version is not yet implemented.");
            }
            return nb::module_::import_("alloy.core");
          },
          nb::arg("api_version") = nb::none(), "The module of array API functions: alloy.core.")
      .def("__dlpack__", &dlpack_export, "Exports the array through DLPack (shares memory).")
      .def("__dlpack_device__", [](const array& a) { return nb::make_tuple(a.device().type == Device::cpu ? 1 : 2, 0); });
  // METH_FASTCALL, not a generic binding: `mx.eval(out)` after each launch
  // is the hot path of small programs.
  static PyMethodDef eval_def = {"eval", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(eval_arrays)),
                                 METH_FASTCALL,
                                 "eval(*arrays): evaluates the given arrays (and arrays in nested lists, tuples and "
                                 "dicts), and waits until they are computed."};
  nb::object eval_fn = nb::steal(PyCFunction_NewEx(&eval_def, nullptr, m.attr("__name__").ptr()));
  if (!eval_fn.is_valid()) throw nb::python_error();
  m.attr("eval") = eval_fn;
}

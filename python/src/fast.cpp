// mx.fast.metal_kernel and mx.fast.cuda_kernel: MLX's Python API.
#include <optional>
#include <string>
#include <variant>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "alloy/fast.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;

namespace {

// A Python int (the common case) without the generic conversion; numpy
// integers (np.prod(...)) and our 0-d arrays go through int().
int64_t to_int64(nb::handle x) {
  if (PyLong_CheckExact(x.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(x.ptr(), &overflow);
    if (!overflow) return v;
  }
  // numpy integers (the seeds pass np.prod(shape)) through __index__.
  PyObject* index = PyNumber_Index(x.ptr());
  if (!index) throw nb::python_error();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow) throw std::invalid_argument("[metal_kernel] an integer argument is out of range.");
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

// A tuple's or list's items without an iterator object.
template <class F>
void for_each_item(nb::handle seq, F&& f) {
  PyObject* o = seq.ptr();
  if (PyTuple_Check(o)) {
    for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(o); i < n; ++i) f(nb::handle(PyTuple_GET_ITEM(o, i)));
  } else if (PyList_Check(o)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); ++i) f(nb::handle(PyList_GET_ITEM(o, i)));
  } else {
    for (nb::handle x : seq) f(x);
  }
}

fast::Dims3 to_dims(const char* api, nb::handle h, const char* what) {
  if (!nb::isinstance<nb::tuple>(h) && !nb::isinstance<nb::list>(h)) {
    throw nb::type_error((std::string("[") + api + "] " + what + " must be a tuple of 3 integers.").c_str());
  }
  if (nb::len(h) != 3) {
    throw std::invalid_argument(std::string("[") + api + "] " + what + " must have 3 dimensions, got " +
                                std::to_string(nb::len(h)) + ".");
  }
  PyObject* seq = h.ptr();
  auto dim = [&](Py_ssize_t i) {
    // Tuples (the usual spelling) without building an index object.
    int64_t v = PyTuple_Check(seq) ? to_int64(nb::handle(PyTuple_GET_ITEM(seq, i))) : to_int64(h[i]);
    if (v > INT32_MAX || v < INT32_MIN) {
      throw std::invalid_argument(std::string("[") + api + "] " + what + " dimension " + std::to_string(i) +
                                  " is too large (" + std::to_string(v) + ").");
    }
    return static_cast<int>(v);
  };
  return {dim(0), dim(1), dim(2)};
}

Shape to_shape(nb::handle h) {
  Shape s;
  for_each_item(h, [&](nb::handle d) { s.push_back(static_cast<ShapeElem>(to_int64(d))); });
  return s;
}

// One launch: builds the lazy outputs. Called through a nanobind function
// object (vectorcall, keywords passed without a dict), which is what keeps
// the per-call host cost low; see docs in init_fast.
nb::list call_kernel(const char* api, const fast::CustomKernelFunction& fn, nb::list inputs, nb::list output_shapes,
                     nb::list output_dtypes, nb::handle grid, nb::handle threadgroup,
                     std::optional<nb::list> template_args, std::optional<double> init_value, bool verbose,
                     std::optional<bool> ensure_row_contiguous, StreamOrDevice stream) {
  fast::KernelCall call;
  call.inputs.reserve(inputs.size());
  for_each_item(inputs, [&](nb::handle in) {
    if (nb::isinstance<array>(in)) {
      call.inputs.push_back(*nb::inst_ptr<array>(in));
    } else {
      call.inputs.push_back(py::to_array(in));
    }
  });
  call.output_shapes.reserve(output_shapes.size());
  for_each_item(output_shapes, [&](nb::handle s) { call.output_shapes.push_back(to_shape(s)); });
  call.output_dtypes.reserve(output_dtypes.size());
  for_each_item(output_dtypes, [&](nb::handle d) {
    if (!nb::isinstance<Dtype>(d)) throw nb::type_error((std::string("[") + api + "] output_dtypes must hold Dtypes.").c_str());
    call.output_dtypes.push_back(nb::cast<Dtype>(d));
  });
  call.grid = to_dims(api, grid, "grid");
  call.threadgroup = to_dims(api, threadgroup, "threadgroup");
  if (template_args) {
    for (nb::handle item : *template_args) {
      if (!nb::isinstance<nb::tuple>(item) || nb::len(item) != 2) {
        throw nb::type_error((std::string("[") + api + "] template entries must be (name, value) tuples.").c_str());
      }
      std::string name = nb::cast<std::string>(item[0]);
      nb::handle v = item[1];
      fast::TemplateArg arg;
      if (nb::isinstance<Dtype>(v)) {
        arg = nb::cast<Dtype>(v);
      } else if (PyBool_Check(v.ptr())) {
        arg = v.ptr() == Py_True;
      } else if (PyLong_Check(v.ptr())) {
        arg = nb::cast<int>(v);
      } else {
        throw nb::type_error((std::string("[") + api + "] template value for '" + name +
                              "' must be a Dtype, int or bool, not " + nb::type_name(v.type()).c_str() + ".")
                                 .c_str());
      }
      call.template_args.emplace_back(name, arg);
    }
  }
  call.init_value = init_value;
  call.verbose = verbose;
  call.ensure_row_contiguous = ensure_row_contiguous;
  call.stream = stream;
  std::vector<array> outs = fn(call);
  nb::list out;
  for (auto& a : outs) out.append(nb::cast(std::move(a)));
  return out;
}

// The callable a kernel definition returns. A function object rather than
// an instance with __call__: Python calls it through vectorcall with the
// keywords as a tuple, where an instance's __call__ would build and unpack a
// dict every launch.
nb::object launcher(const char* api, fast::CustomKernelFunction fn, const std::string& name) {
  return nb::cpp_function(
      [api, fn](nb::list inputs, nb::list output_shapes, nb::list output_dtypes, nb::handle grid,
                nb::handle threadgroup, std::optional<nb::list> template_args, std::optional<double> init_value,
                bool verbose, std::optional<bool> ensure_row_contiguous, StreamOrDevice stream) {
        return call_kernel(api, fn, inputs, output_shapes, output_dtypes, grid, threadgroup, template_args,
                           init_value, verbose, ensure_row_contiguous, stream);
      },
      nb::kw_only(), nb::arg("inputs"), nb::arg("output_shapes"), nb::arg("output_dtypes"), nb::arg("grid"),
      nb::arg("threadgroup"), nb::arg("template") = nb::none(), nb::arg("init_value") = nb::none(),
      nb::arg("verbose") = false, nb::arg("ensure_row_contiguous") = nb::none(), nb::arg("stream") = nb::none(),
      nb::name(name.c_str()), "Launches the kernel: returns a list of lazy output arrays.");
}

}  // namespace

// Kernel definitions already made, by their arguments. The seeds (like many
// MLX users) build the kernel object inside the function they call, so the
// same definition comes back on every call: handing back the launcher made
// the first time skips making a Python function (tens of microseconds) and
// lets its variant memo answer the launch at once. Launchers hold no state
// beyond their definition, so sharing one is invisible.
template <class Make>
nb::object cached_launcher(const nb::tuple& key, Make&& make) {
  static nb::dict* cache = new nb::dict();  // never freed: lives as long as the module
  constexpr Py_ssize_t kMaxDefinitions = 4096;
  if (PyObject* hit = PyDict_GetItemWithError(cache->ptr(), key.ptr())) return nb::borrow(hit);
  if (PyErr_Occurred()) throw nb::python_error();
  nb::object fn = make();
  if (PyDict_Size(cache->ptr()) >= kMaxDefinitions) PyDict_Clear(cache->ptr());
  if (PyDict_SetItem(cache->ptr(), key.ptr(), fn.ptr()) != 0) throw nb::python_error();
  return fn;
}

std::vector<std::string> to_names(nb::handle seq) { return nb::cast<std::vector<std::string>>(seq); }

void init_fast(nb::module_& m) {
  nb::module_ f = m.def_submodule("fast", "Fused operations and custom kernels.");
  f.def(
      "metal_kernel",
      [](nb::str name, nb::object input_names, nb::object output_names, nb::str source, nb::str header,
         bool ensure_row_contiguous, bool atomic_outputs, std::optional<nb::dict> compile_options) {
        std::string math_mode = "safe";
        if (compile_options) {
          for (auto [k, v] : *compile_options) {
            std::string key = nb::cast<std::string>(k);
            if (key != "math_mode") {
              throw std::invalid_argument("[metal_kernel] unknown compile option '" + key +
                                          "' (the only option is 'math_mode').");
            }
            math_mode = nb::cast<std::string>(v);
          }
        }
        nb::tuple key = nb::make_tuple("metal", name, nb::tuple(input_names), nb::tuple(output_names), source,
                                       header, ensure_row_contiguous, atomic_outputs, math_mode);
        return cached_launcher(key, [&] {
          std::string n = nb::cast<std::string>(name);
          return launcher("metal_kernel",
                          fast::metal_kernel(n, to_names(input_names), to_names(output_names),
                                             nb::cast<std::string>(source), nb::cast<std::string>(header),
                                             ensure_row_contiguous, atomic_outputs, math_mode),
                          n);
        });
      },
      nb::arg("name"), nb::arg("input_names"), nb::arg("output_names"), nb::arg("source"), nb::arg("header") = "",
      nb::arg("ensure_row_contiguous") = true, nb::arg("atomic_outputs") = false,
      nb::arg("compile_options") = nb::none(),
      "A custom kernel from the body of a Metal kernel, as MLX's mx.fast.metal_kernel; it runs on NVIDIA "
      "GPUs (translated to CUDA) and on CPUs (translated to C++).");
  f.def(
      "cuda_kernel",
      [](nb::str name, nb::object input_names, nb::object output_names, nb::str source, nb::str header,
         bool ensure_row_contiguous, int shared_memory) {
        nb::tuple key = nb::make_tuple("cuda", name, nb::tuple(input_names), nb::tuple(output_names), source,
                                       header, ensure_row_contiguous, shared_memory);
        return cached_launcher(key, [&] {
          std::string n = nb::cast<std::string>(name);
          return launcher("cuda_kernel",
                          fast::cuda_kernel(n, to_names(input_names), to_names(output_names),
                                            nb::cast<std::string>(source), nb::cast<std::string>(header),
                                            ensure_row_contiguous, shared_memory),
                          n);
        });
      },
      nb::arg("name"), nb::arg("input_names"), nb::arg("output_names"), nb::arg("source"), nb::arg("header") = "",
      nb::arg("ensure_row_contiguous") = true, nb::arg("shared_memory") = 0,
      "A custom kernel from the body of a CUDA kernel, as MLX's mx.fast.cuda_kernel (GPU only). Inputs arrive as "
      "`const T* name` (with name_shape, name_strides, name_ndim when the body uses them), outputs as `T* name`; "
      "the grid counts threads; `shared_memory` bytes of dynamic shared memory per block.");
}

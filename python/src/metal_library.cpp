// mx.fast.metal_library: a whole Metal program, its kernels launched by
// binding parameters by name (or [[buffer(i)]] index).
#include <map>
#include <optional>
#include <string>

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "alloy/fast.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;

namespace {

fast::Dims3 dims_arg(nb::handle h, const char* what) {
  std::vector<int> v;
  try {
    v = nb::cast<std::vector<int>>(h);
  } catch (const nb::cast_error&) {
    throw nb::type_error((std::string("[metal_library] ") + what + " must be a tuple of 3 integers.").c_str());
  }
  if (v.size() != 3)
    throw std::invalid_argument(std::string("[metal_library] ") + what + " must have 3 dimensions, got " +
                                std::to_string(v.size()) + ".");
  return {v[0], v[1], v[2]};
}

// One value of `args`: an array, (shape, dtype), or a number.
fast::LibraryArg library_arg(const std::string& name, nb::handle v) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return nb::cast<int64_t>(v);
  if (PyFloat_Check(v.ptr())) return nb::cast<double>(v);
  if (nb::isinstance<array>(v)) return nb::cast<array>(v);
  if (nb::isinstance<nb::tuple>(v) && nb::len(v) == 2) {
    nb::handle shape = v[0], dtype = v[1];
    if (nb::isinstance<Dtype>(dtype)) {
      fast::OutputSpec o;
      try {
        o.shape = nb::cast<std::vector<int>>(shape);
      } catch (const nb::cast_error&) {
        throw nb::type_error(("[metal_library] output '" + name + "': the shape of (shape, dtype) must be a tuple "
                              "of integers.").c_str());
      }
      o.dtype = nb::cast<Dtype>(dtype);
      return o;
    }
    // (data, scales): a quantized tensor's two planes.
    auto array_like = [](nb::handle h) { return nb::isinstance<array>(h) || nb::hasattr(h, "__array__"); };
    if (array_like(v[0]) && array_like(v[1])) {
      auto as_array = [](nb::handle h) { return nb::isinstance<array>(h) ? nb::cast<array>(h) : py::to_array(h); };
      return fast::QuantizedTensorArg{as_array(v[0]), as_array(v[1])};
    }
  }
  if (nb::hasattr(v, "__array__") || nb::isinstance<nb::list>(v)) return py::to_array(v);
  throw nb::type_error(("[metal_library] argument '" + name + "' must be an array, a (shape, dtype) tuple, a "
                        "(data, scales) pair of arrays or a number, not " + std::string(Py_TYPE(v.ptr())->tp_name) + ".")
                           .c_str());
}

}  // namespace

void init_metal_library(nb::module_& f) {
  nb::class_<fast::LibraryKernel>(f, "LibraryKernel",
                                  "One kernel of a metal_library: call it with args=, grid=, threadgroup=.")
      .def_prop_ro("name", &fast::LibraryKernel::name)
      .def_prop_ro("output_names", &fast::LibraryKernel::output_names,
                   "The `device T*` parameters (written by the kernel), in parameter order: what a call returns.")
      .def_prop_ro("arg_names", &fast::LibraryKernel::arg_names,
                   "Every parameter a call binds (buffers, values, threadgroup memory), in parameter order.")
      .def_prop_ro("max_total_threads_per_threadgroup", &fast::LibraryKernel::max_total_threads_per_threadgroup)
      .def(
          "__call__",
          [](const fast::LibraryKernel& k, nb::dict args, nb::handle grid, nb::handle threadgroup,
             const std::string& dispatch, StreamOrDevice stream, bool verbose, std::optional<double> timeout) {
            fast::LibraryCall call;
            for (auto [key, value] : args) {
              std::string name;
              if (PyLong_Check(key.ptr()) && !PyBool_Check(key.ptr()))
                name = k.buffer_name(nb::cast<int>(key));
              else if (nb::isinstance<nb::str>(key))
                name = nb::cast<std::string>(key);
              else
                throw nb::type_error("[metal_library] args keys must be parameter names or [[buffer(i)]] indices.");
              call.args.emplace_back(name, library_arg(name, value));
            }
            call.grid = dims_arg(grid, "grid");
            call.threadgroup = dims_arg(threadgroup, "threadgroup");
            if (dispatch == "threads")
              call.dispatch = fast::Dispatch::Threads;
            else if (dispatch == "threadgroups")
              call.dispatch = fast::Dispatch::Threadgroups;
            else
              throw std::invalid_argument("[metal_library] dispatch must be 'threads' (dispatchThreads) or "
                                          "'threadgroups' (dispatchThreadgroups), not '" + dispatch + "'.");
            call.stream = stream;
            call.verbose = verbose;
            call.timeout = timeout;
            return k(call);
          },
          nb::kw_only(), nb::arg("args"), nb::arg("grid"), nb::arg("threadgroup"), nb::arg("dispatch") = "threads",
          nb::arg("stream") = nb::none(), nb::arg("verbose") = false, nb::arg("timeout") = nb::none(),
          "Launches the kernel: `args` binds parameters by name (or [[buffer(i)]] index): arrays for buffers it "
          "reads, (shape, dtype) or a starting array for buffers it writes, (data, scales) for a quantized "
          "(MXFP8) tensor, numbers or 0-d arrays for `constant T&`, byte counts for threadgroup memory. Returns the outputs, lazily, in output_names order.")
      .def("__repr__", [](const fast::LibraryKernel& k) { return "<metal_library kernel '" + k.name() + "'>"; });

  nb::class_<fast::MetalLibrary>(f, "MetalLibrary", "A compiled whole Metal program (mx.fast.metal_library).")
      .def_prop_ro("kernel_names", &fast::MetalLibrary::kernel_names,
                   "The entry points: kernel functions and [[host_name]] instantiations, in source order.")
      .def_prop_ro("warnings", &fast::MetalLibrary::warnings)
      .def_prop_ro("function_constants", &fast::MetalLibrary::function_constants,
                   "The program's function constants, as declared.")
      .def(
          "kernel",
          [](const fast::MetalLibrary& lib, const std::string& name, std::optional<nb::dict> constants) {
            std::map<std::string, double> values;
            if (constants) {
              for (auto [k, v] : *constants) {
                std::string key;
                if (nb::isinstance<nb::bool_>(k) || !(nb::isinstance<nb::int_>(k) || nb::isinstance<nb::str>(k)))
                  throw nb::type_error("[metal_library] function_constants keys are names (str) or indices (int).");
                key = nb::isinstance<nb::str>(k) ? nb::cast<std::string>(k) : std::to_string(nb::cast<long>(k));
                if (!(nb::isinstance<nb::bool_>(v) || nb::isinstance<nb::int_>(v) || nb::isinstance<nb::float_>(v)))
                  throw nb::type_error(("[metal_library] function constant '" + key +
                                        "' takes a bool, int or float.").c_str());
                values[key] = nb::cast<double>(v);
              }
            }
            return lib.kernel(name, values);
          },
          nb::arg("name"), nb::arg("function_constants").none() = nb::none(),
          "The launcher of kernel `name`; `function_constants` ({index or name: value}) gives the program's "
          "function constants their values, as Metal's MTLFunctionConstantValues.")
      .def("__repr__", [](const fast::MetalLibrary& l) {
        std::string s = "<metal_library kernels=[";
        for (const std::string& n : l.kernel_names()) s += (s.back() == '[' ? "'" : ", '") + n + "'";
        return s + "]>";
      });

  f.def(
      "metal_library",
      [](const std::string& source, const std::string& header, std::optional<nb::dict> compile_options) {
        std::string math_mode = "safe";
        if (compile_options) {
          for (auto [k, v] : *compile_options) {
            std::string key = nb::cast<std::string>(k);
            if (key == "math_mode") {
              math_mode = nb::cast<std::string>(v);
            } else if (key == "fast_math") {  // MTLCompileOptions.fastMathEnabled
              math_mode = nb::cast<bool>(v) ? "fast" : "safe";
            } else {
              throw std::invalid_argument("[metal_library] unknown compile option '" + key +
                                          "' (the options are 'math_mode' and 'fast_math').");
            }
          }
        }
        fast::MetalLibrary lib = fast::metal_library(source, header, math_mode);
        for (const std::string& w : lib.warnings())
          if (PyErr_WarnEx(PyExc_UserWarning, ("[metal_library] " + w).c_str(), 1) != 0) throw nb::python_error();
        return lib;
      },
      nb::arg("source"), nb::arg("header") = "", nb::arg("compile_options") = nb::none(),
      "A whole Metal program (what newLibraryWithSource takes: kernels with [[buffer(i)]] parameters, program-"
      "scope constants, structs, templates with [[host_name]] instantiations). `lib.kernel(name)` returns a "
      "launcher; kernels run on NVIDIA GPUs (translated to CUDA) and on CPUs (translated to C++).");
}

// alloy.mlx._ext: the Python face of alloy::mlx::metal_kernel, with the
// arguments of mlx.core.fast.metal_kernel and of the kernel it returns.
// Arrays, dtypes and streams are MLX's own Python objects: this module
// shares nanobind's type registry with mlx.core (same nanobind ABI).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>

#include "alloy/mlx/metal_kernel.h"
#include "definition_cache.h"
#include "launch.h"
#include "mlx/array.h"
#include "mlx/stream.h"

namespace nb = nanobind;
namespace mxc = ::mlx::core;
using namespace nb::literals;

namespace {

struct Kernel {
  std::string name;
  alloy::fast::CustomKernelFunction fn;
};

[[noreturn]] void type_error(const std::string& what) { throw nb::type_error(("[metal_kernel] " + what).c_str()); }

std::vector<std::string> to_names(nb::handle seq, const char* what) {
  if (!nb::isinstance<nb::list>(seq) && !nb::isinstance<nb::tuple>(seq)) {
    type_error(std::string(what) + " must be a list of strings.");
  }
  std::vector<std::string> names;
  for (nb::handle h : seq) {
    if (!nb::isinstance<nb::str>(h)) type_error(std::string(what) + " must be a list of strings.");
    names.push_back(nb::cast<std::string>(h));
  }
  return names;
}

// Calls fn on each item of a list or tuple, in place (a call's arguments
// are walked on every launch: no copy of the sequence).
template <class F> void for_each_item(nb::handle seq, const char* what, F&& fn) {
  if (!PyList_Check(seq.ptr()) && !PyTuple_Check(seq.ptr())) {
    type_error(std::string(what) + " must be a list, not " + nb::type_name(seq.type()).c_str() + ".");
  }
  PyObject* fast = seq.ptr();  // a list or tuple is its own PySequence_Fast
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  for (Py_ssize_t i = 0; i < n; ++i) fn(nb::handle(items[i]));
}

int to_int(nb::handle h, const char* what) {
  try {
    return nb::cast<int>(h);
  } catch (const nb::cast_error&) {
    type_error(std::string(what) + " must hold integers, not " + nb::type_name(h.type()).c_str() + ".");
  }
}

std::tuple<int, int, int> to_dims(nb::handle h, const char* what) {
  if (!PyTuple_Check(h.ptr()) && !PyList_Check(h.ptr())) {
    type_error(std::string(what) + " must be a tuple of 3 integers.");
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(h.ptr());
  if (n != 3) {
    throw std::invalid_argument("[metal_kernel] " + std::string(what) + " must have 3 dimensions, got " +
                                std::to_string(n) + ".");
  }
  PyObject** items = PySequence_Fast_ITEMS(h.ptr());
  return {to_int(items[0], what), to_int(items[1], what), to_int(items[2], what)};
}

mxc::array to_array(nb::handle h) {
  mxc::array* a = nullptr;
  if (nb::try_cast<mxc::array*>(h, a) && a) return *a;
  // Scalars and array-likes, as mx.array(x) makes them.
  static nb::object mx_array = nb::module_::import_("mlx.core").attr("array");
  return nb::cast<mxc::array>(mx_array(h));
}

mxc::StreamOrDevice to_stream(nb::handle h) {
  if (h.is_none()) return {};
  mxc::Stream* s = nullptr;
  if (nb::try_cast<mxc::Stream*>(h, s) && s) return *s;
  mxc::Device* d = nullptr;
  if (nb::try_cast<mxc::Device*>(h, d) && d) return *d;
  mxc::Device::DeviceType t;
  if (nb::try_cast<mxc::Device::DeviceType>(h, t)) return mxc::Device(t);
  type_error(std::string("stream must be a Stream, a Device or None, not ") + nb::type_name(h.type()).c_str() + ".");
}

nb::list call(Kernel& k, nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes, nb::handle grid,
              nb::handle threadgroup, nb::handle template_args, nb::handle init_value, bool verbose,
              nb::handle stream, std::optional<bool> ensure_row_contiguous) {
  std::vector<mxc::array> ins;
  for_each_item(inputs, "inputs", [&](nb::handle h) { ins.push_back(to_array(h)); });
  std::vector<mxc::Shape> shapes;
  for_each_item(output_shapes, "output_shapes", [&](nb::handle s) {
    mxc::Shape shape;
    for_each_item(s, "each output shape", [&](nb::handle d) { shape.push_back(to_int(d, "output_shapes")); });
    shapes.push_back(std::move(shape));
  });
  std::vector<mxc::Dtype> dtypes;
  for_each_item(output_dtypes, "output_dtypes", [&](nb::handle d) {
    mxc::Dtype* dt = nullptr;
    if (!nb::try_cast<mxc::Dtype*>(d, dt) || !dt) type_error("output_dtypes must hold Dtypes.");
    dtypes.push_back(*dt);
  });
  std::vector<std::pair<std::string, mxc::fast::TemplateArg>> targs;
  if (!template_args.is_none()) {
    for_each_item(template_args, "template", [&](nb::handle item) {
      if (!PyTuple_Check(item.ptr()) || PyTuple_GET_SIZE(item.ptr()) != 2 ||
          !PyUnicode_Check(PyTuple_GET_ITEM(item.ptr(), 0))) {
        type_error("template entries must be (name, value) tuples.");
      }
      Py_ssize_t length = 0;
      const char* chars = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(item.ptr(), 0), &length);
      if (!chars) throw nb::python_error();
      std::string name(chars, static_cast<size_t>(length));
      nb::handle v = PyTuple_GET_ITEM(item.ptr(), 1);
      mxc::Dtype* dt = nullptr;
      if (nb::try_cast<mxc::Dtype*>(v, dt) && dt) {
        targs.emplace_back(name, *dt);
      } else if (nb::isinstance<nb::bool_>(v)) {
        targs.emplace_back(name, nb::cast<bool>(v));
      } else if (nb::isinstance<nb::int_>(v)) {
        targs.emplace_back(name, nb::cast<int>(v));
      } else {
        type_error("template value for '" + name + "' must be a Dtype, int or bool, not " +
                   nb::type_name(v.type()).c_str() + ".");
      }
    });
  }
  std::optional<float> init;
  if (!init_value.is_none()) init = nb::cast<float>(init_value);
  std::vector<mxc::array> outs =
      alloy::mlx::launch(k.fn, ins, shapes, dtypes, to_dims(grid, "grid"), to_dims(threadgroup, "threadgroup"), targs,
                         init, verbose, ensure_row_contiguous, to_stream(stream));
  nb::list result;
  for (auto& o : outs) result.append(nb::cast(std::move(o)));
  return result;
}

}  // namespace

NB_MODULE(_ext, m) {
  // mlx.core registers the array, Dtype, Stream and Device types this module casts.
  nb::module_::import_("mlx.core");
  m.def("built_for_mlx_version", [] { return std::string(alloy::mlx::built_for_mlx_version()); });

  nb::class_<Kernel>(m, "MetalKernel")
      .def_ro("name", &Kernel::name)
      .def("__call__", &call, nb::kw_only(), "inputs"_a, "output_shapes"_a, "output_dtypes"_a, "grid"_a,
           "threadgroup"_a, "template"_a = nb::none(), "init_value"_a = nb::none(), "verbose"_a = false,
           "stream"_a = nb::none(), "ensure_row_contiguous"_a = nb::none(),
           "Launches the kernel; returns the list of its lazy MLX output arrays.")
      .def("__repr__", [](const Kernel& k) { return "<alloy.mlx metal_kernel '" + k.name + "'>"; });

  m.def(
      "metal_kernel",
      [](nb::str name, nb::handle input_names, nb::handle output_names, nb::str source, nb::str header,
         bool ensure_row_contiguous, bool atomic_outputs, nb::handle compile_options) -> nb::object {
        mxc::CompileOptions options;
        if (!compile_options.is_none()) {
          if (!nb::isinstance<nb::dict>(compile_options)) type_error("compile_options must be a dict.");
          for (auto [key, value] : nb::borrow<nb::dict>(compile_options)) {
            std::string k = nb::cast<std::string>(key);
            if (k != "math_mode") {
              throw std::invalid_argument("[metal_kernel] unknown compile option '" + k +
                                          "' (the only option is 'math_mode').");
            }
            std::string mode = nb::cast<std::string>(value);
            if (mode == "safe") options.math_mode = mxc::MathMode::Safe;
            else if (mode == "relaxed") options.math_mode = mxc::MathMode::Relaxed;
            else if (mode == "fast") options.math_mode = mxc::MathMode::Fast;
            else throw std::invalid_argument("[metal_kernel] math_mode must be 'safe', 'relaxed' or 'fast', not '" + mode + "'.");
          }
        }
        std::vector<std::string> inputs = to_names(input_names, "input_names");
        std::vector<std::string> outputs = to_names(output_names, "output_names");
        // Code that makes its kernel on every call (the seeds do) gets the
        // one made first for the same definition, as from Alloy's own
        // (ALLOY_BOUNDS_CHECK and ALLOY_RACE_CHECK, read at each definition, are part of it).
        nb::tuple key = nb::make_tuple(name, nb::tuple(input_names), nb::tuple(output_names), source, header,
                                       ensure_row_contiguous, atomic_outputs, static_cast<int>(options.math_mode),
                                       alloy::fast::default_bounds_check(), alloy::fast::default_race_check());
        return alloy_python::cached_definition(key, [&] {
          std::string n = nb::cast<std::string>(name);
          return nb::cast(Kernel{n, alloy::mlx::make_kernel(n, inputs, outputs, nb::cast<std::string>(source),
                                                            nb::cast<std::string>(header), ensure_row_contiguous,
                                                            atomic_outputs, options)});
        });
      },
      "name"_a, "input_names"_a, "output_names"_a, "source"_a, "header"_a = "", "ensure_row_contiguous"_a = true,
      "atomic_outputs"_a = false, "compile_options"_a = nb::none(),
      "mlx.core.fast.metal_kernel, run by Alloy: the kernel's Metal body is translated to C++ for MLX's CPU "
      "backend and to CUDA for MLX's CUDA backend.");
}

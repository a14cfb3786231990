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
#include "background_loads.h"
#include "callable_object.h"
#include "definition_cache.h"
#include "keyword_call.h"
#include "launch.h"
#include "mlx/array.h"
#include "mlx/stream.h"
#include "private_symbol.h"

namespace nb = nanobind;
namespace mxc = ::mlx::core;
using namespace nb::literals;

namespace {

[[noreturn]] void type_error(const std::string& what) { throw nb::type_error(("[metal_kernel] " + what).c_str()); }

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

constexpr const char* kApi = "metal_kernel";

// ---- the kernel object: a Python type called through vectorcall ---------
// mlx.core.fast.metal_kernel's kernel takes keywords only; through a
// generic binding they cost a dict built and unpacked per call, over a
// third of a tiny call (1.71 us, 1.08 through vectorcall; keyword_call.h,
// as Alloy's own launcher).

enum Keyword { kInputs, kOutputShapes, kOutputDtypes, kGrid, kThreadgroup, kTemplate, kInitValue, kVerbose,
               kStream, kEnsureRowContiguous, kKeywordCount };
constexpr const char* kKeywordNames[kKeywordCount] = {"inputs", "output_shapes", "output_dtypes", "grid",
                                                      "threadgroup", "template", "init_value", "verbose",
                                                      "stream", "ensure_row_contiguous"};
const alloy::py::KeywordOnly<kKeywordCount>* keywords = nullptr;  // made by the module's init

using KernelObject = alloy::py::CallableObject<alloy::fast::CustomKernelFunction>;

nb::object launch(KernelObject& self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyObject* given[kKeywordCount];
  keywords->match(self.name, "inputs=, output_shapes=, output_dtypes=, grid=, threadgroup= (and template=, "
                  "init_value=, verbose=, stream=, ensure_row_contiguous=)", args, nargsf, kwnames, given);
  auto given_or_none = [&](int k) { return given[k] && given[k] != Py_None ? given[k] : nullptr; };
  std::vector<mxc::array> ins;
  alloy::py::for_each_item(kApi, given[kInputs], "inputs", [&](PyObject* h) { ins.push_back(to_array(h)); });
  std::vector<mxc::Shape> shapes;
  alloy::py::for_each_item(kApi, given[kOutputShapes], "output_shapes", [&](PyObject* s) {
    mxc::Shape shape;
    alloy::py::for_each_item(kApi, s, "each output shape", [&](PyObject* d) {
      shape.push_back(alloy::py::to_int32(kApi, d, "a dimension in output_shapes"));
    });
    shapes.push_back(std::move(shape));
  });
  std::vector<mxc::Dtype> dtypes;
  alloy::py::for_each_item(kApi, given[kOutputDtypes], "output_dtypes", [&](PyObject* d) {
    mxc::Dtype* dt = nullptr;
    if (!nb::try_cast<mxc::Dtype*>(nb::handle(d), dt) || !dt) type_error("output_dtypes must hold Dtypes.");
    dtypes.push_back(*dt);
  });
  std::vector<std::pair<std::string, mxc::fast::TemplateArg>> targs;
  if (PyObject* t = given_or_none(kTemplate)) {
    alloy::py::for_each_item(kApi, t, "template", [&](PyObject* item) {
      if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(item, 0))) {
        type_error("template entries must be (name, value) tuples.");
      }
      Py_ssize_t length = 0;
      const char* chars = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(item, 0), &length);
      if (!chars) throw nb::python_error();
      std::string name(chars, static_cast<size_t>(length));
      nb::handle v = PyTuple_GET_ITEM(item, 1);
      mxc::Dtype* dt = nullptr;
      if (nb::try_cast<mxc::Dtype*>(v, dt) && dt) {
        targs.emplace_back(name, *dt);
      } else if (nb::isinstance<nb::bool_>(v)) {
        targs.emplace_back(name, nb::cast<bool>(v));
      } else if (nb::isinstance<nb::int_>(v)) {
        targs.emplace_back(name, alloy::py::to_int32(kApi, v.ptr(), "template value for '" + name + "'"));
      } else {
        type_error("template value for '" + name + "' must be a Dtype, int or bool, not " +
                   nb::type_name(v.type()).c_str() + ".");
      }
    });
  }
  std::optional<float> init;
  if (PyObject* v = given_or_none(kInitValue)) init = nb::cast<float>(nb::handle(v));
  bool verbose = false;
  if (PyObject* v = given_or_none(kVerbose)) {
    const int truth = PyObject_IsTrue(v);
    if (truth < 0) throw nb::python_error();
    verbose = truth != 0;
  }
  std::optional<bool> ensure_row_contiguous;
  if (PyObject* v = given_or_none(kEnsureRowContiguous)) {
    const int truth = PyObject_IsTrue(v);
    if (truth < 0) throw nb::python_error();
    ensure_row_contiguous = truth != 0;
  }
  const std::array<int, 3> grid = alloy::py::to_dims(kApi, given[kGrid], "grid");
  const std::array<int, 3> group = alloy::py::to_dims(kApi, given[kThreadgroup], "threadgroup");
  std::vector<mxc::array> outs = alloy::mlx::launch(
      *self.fn, ins, shapes, dtypes, {grid[0], grid[1], grid[2]}, {group[0], group[1], group[2]}, targs, init,
      verbose, ensure_row_contiguous, to_stream(given[kStream] ? nb::handle(given[kStream]) : nb::none()));
  return alloy::py::list_of(std::move(outs));
}

using KernelType = alloy::py::CallableType<alloy::fast::CustomKernelFunction, launch>;

}  // namespace

NB_MODULE(_ext, m) {
  // mlx.core registers the array, Dtype, Stream and Device types this module casts.
  nb::module_::import_("mlx.core");
  m.def("built_for_mlx_version", [] { return std::string(alloy::mlx::built_for_mlx_version()); });
  // For tests: where find_private_symbol finds a name in libmlx (0: not
  // found), and the name of the CUDA output allocator the GPU half looks up.
  m.def("_private_symbol_address", [](const std::string& name) {
    return reinterpret_cast<uintptr_t>(
        alloy::mlx::find_private_symbol(reinterpret_cast<const void*>(&mxc::allocator::allocator), name));
  });
  m.attr("_mlx_cuda_malloc_async") = std::string(alloy::mlx::kMlxCudaMallocAsync);
  // alloy.mlx imports Alloy's package, not alloy.core, which registers the same.
  alloy::py::join_background_loads_at_exit();

  keywords = new alloy::py::KeywordOnly<kKeywordCount>(kKeywordNames, kThreadgroup + 1);  // never freed
  PyTypeObject* kernel_type = KernelType::create(
      "alloy.mlx._ext.MetalKernel", "<alloy.mlx %s '%U'>",
      "k(*, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None, verbose=False, "
      "stream=None, ensure_row_contiguous=None): launches the kernel; returns the list of its lazy MLX output arrays.");
  m.attr("MetalKernel") = nb::handle(reinterpret_cast<PyObject*>(kernel_type));

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
        std::vector<std::string> inputs = alloy::py::to_names(kApi, input_names.ptr(), "input_names");
        std::vector<std::string> outputs = alloy::py::to_names(kApi, output_names.ptr(), "output_names");
        // Code that makes its kernel on every call (the seeds do) gets the
        // one made first for the same definition, as from Alloy's own
        // (ALLOY_BOUNDS_CHECK and ALLOY_RACE_CHECK, read at each definition, are part of it).
        nb::tuple key = nb::make_tuple(name, nb::tuple(input_names), nb::tuple(output_names), source, header,
                                       ensure_row_contiguous, atomic_outputs, static_cast<int>(options.math_mode),
                                       alloy::fast::default_bounds_check(), alloy::fast::default_race_check());
        return alloy_python::cached_definition(key, [&] {
          std::string n = nb::cast<std::string>(name);
          return KernelType::make(kApi, alloy::mlx::make_kernel(n, inputs, outputs, nb::cast<std::string>(source),
                                                            nb::cast<std::string>(header), ensure_row_contiguous,
                                                            atomic_outputs, options),
                                  n);
        });
      },
      "name"_a, "input_names"_a, "output_names"_a, "source"_a, "header"_a = "", "ensure_row_contiguous"_a = true,
      "atomic_outputs"_a = false, "compile_options"_a = nb::none(),
      "mlx.core.fast.metal_kernel, run by Alloy: the kernel's Metal body is translated to C++ for MLX's CPU "
      "backend and to CUDA for MLX's CUDA backend.");
}

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
#include "definition_cache.h"
#include "kernel_launcher.h"
#include "keyword_call.h"
#include "stream_or_device.h"

using namespace alloy;

void init_fast(nb::module_& m) {
  nb::module_ f = m.def_submodule("fast", "Fused operations and custom kernels.");
  init_kernel_launcher(f);
  init_metal_library(f);
  f.def("_wait_for_specialized_kernels", &fast::wait_for_specialized_kernels,
        nb::call_guard<nb::gil_scoped_release>(),  // other Python threads run while this one waits
        "Waits for the GPU builds of metal_kernels specialized to their inputs' layouts being made "
        "(Alloy only; for benchmarks and tests).");
  f.def("_specialized_kernels_built", &fast::specialized_kernels_built,
        "How many GPU builds specialized to input layouts this process has made (Alloy only; for tests).");
  f.def(
      "metal_kernel",
      [](nb::str name, nb::object input_names, nb::object output_names, nb::str source, nb::str header,
         bool ensure_row_contiguous, bool atomic_outputs, std::optional<nb::dict> compile_options) {
        std::string math_mode = "safe";
        std::optional<bool> bounds_check;
        if (compile_options) {
          for (auto [k, v] : *compile_options) {
            std::string key = nb::cast<std::string>(k);
            if (key == "math_mode") {
              math_mode = nb::cast<std::string>(v);
            } else if (key == "bounds_check") {
              if (!nb::isinstance<nb::bool_>(v))
                throw nb::type_error("[metal_kernel] compile option 'bounds_check' must be True or False.");
              bounds_check = nb::cast<bool>(v);
            } else {
              throw std::invalid_argument("[metal_kernel] unknown compile option '" + key +
                                          "' (the options are 'math_mode' and 'bounds_check').");
            }
          }
        }
        const bool checked = bounds_check ? *bounds_check : fast::default_bounds_check();
        std::vector<std::string> ins = py::to_names("metal_kernel", input_names.ptr(), "input_names");
        std::vector<std::string> outs = py::to_names("metal_kernel", output_names.ptr(), "output_names");
        // ($ALLOY_RACE_CHECK, read at each definition, is part of the definition.)
        nb::tuple key = nb::make_tuple("metal", name, nb::tuple(input_names), nb::tuple(output_names), source,
                                       header, ensure_row_contiguous, atomic_outputs, math_mode, checked,
                                       fast::default_race_check());
        return alloy_python::cached_definition(key, [&] {
          std::string n = nb::cast<std::string>(name);
          return make_kernel_launcher("metal_kernel",
                          fast::metal_kernel(n, std::move(ins), std::move(outs),
                                             nb::cast<std::string>(source), nb::cast<std::string>(header),
                                             ensure_row_contiguous, atomic_outputs, math_mode, checked),
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
        std::vector<std::string> ins = py::to_names("cuda_kernel", input_names.ptr(), "input_names");
        std::vector<std::string> outs = py::to_names("cuda_kernel", output_names.ptr(), "output_names");
        nb::tuple key = nb::make_tuple("cuda", name, nb::tuple(input_names), nb::tuple(output_names), source,
                                       header, ensure_row_contiguous, shared_memory);
        return alloy_python::cached_definition(key, [&] {
          std::string n = nb::cast<std::string>(name);
          return make_kernel_launcher("cuda_kernel",
                          fast::cuda_kernel(n, std::move(ins), std::move(outs),
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
  f.def(
      "precompiled_cuda_kernel",
      [](const std::string& name, nb::bytes compiled_source, nb::sequence inputs, std::vector<Shape> output_shapes,
         std::vector<Dtype> output_dtypes, nb::sequence scalars, fast::Dims3 grid, fast::Dims3 threadgroup,
         int shared_memory, std::optional<float> init_value, bool ensure_row_contiguous, StreamOrDevice s) {
        std::vector<array> ins;
        for (nb::handle in : inputs) ins.push_back(py::to_array(in));
        std::vector<fast::ScalarArg> values;
        for (nb::handle v : scalars) {
          // bool before int: Python's bool is an int.
          if (nb::isinstance<nb::bool_>(v)) values.emplace_back(nb::cast<bool>(v));
          else if (nb::isinstance<nb::int_>(v)) values.emplace_back(nb::cast<int>(v));
          else if (nb::isinstance<nb::float_>(v)) values.emplace_back(nb::cast<float>(v));
          else {
            throw std::invalid_argument("[precompiled_cuda_kernel] kernel '" + name + "': scalars must be bool, int "
                                        "or float; got " + nb::cast<std::string>(nb::str(v.type().attr("__name__"))) +
                                        ".");
          }
        }
        return fast::precompiled_cuda_kernel(
            name, std::string(static_cast<const char*>(compiled_source.data()), compiled_source.size()), ins,
            output_shapes, output_dtypes, values, grid, threadgroup, shared_memory, init_value,
            ensure_row_contiguous, s);
      },
      nb::kw_only(), nb::arg("name"), nb::arg("compiled_source"), nb::arg("inputs"), nb::arg("output_shapes"),
      nb::arg("output_dtypes"), nb::arg("scalars"), nb::arg("grid"), nb::arg("threadgroup"),
      nb::arg("shared_memory") = 0, nb::arg("init_value") = nb::none(), nb::arg("ensure_row_contiguous") = false,
      nb::arg("stream") = nb::none(),
      "Runs a kernel compiled ahead of time (PTX text or a cubin, as bytes), as MLX's "
      "mx.fast.precompiled_cuda_kernel (GPU only): the kernel `name` gets a pointer per input, a pointer per "
      "output, then the scalars by value (bool, int as int32, float as float32); the grid counts threads.");
}

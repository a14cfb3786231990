// The runtime surface of mlx.core that is not math: mx.contiguous,
// mx.depends, device queries and memory limits, and the mx.metal / mx.cuda
// namespaces. Alloy runs Metal kernels on every device, so mx.metal answers
// for the device Metal kernels run on here.
#include <cstdio>
#include <sstream>

#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "alloy/allocator.h"
#include "alloy/ops.h"
#include "alloy/runtime.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;

namespace {

// A lone array or a sequence of them, as MLX's depends takes.
std::vector<array> array_or_arrays(nb::handle h, const char* op, const char* what) {
  if (nb::isinstance<array>(h)) return {nb::cast<array>(h)};
  try {
    return nb::cast<std::vector<array>>(h);
  } catch (const nb::cast_error&) {
    throw nb::type_error((std::string("[") + op + "] " + what + " must be an array or a sequence of arrays.").c_str());
  }
}

Device device_of(nb::handle d) {
  if (d.is_none()) return default_device();
  if (nb::isinstance<Device>(d)) return nb::cast<Device>(d);
  if (nb::isinstance<Device::DeviceType>(d)) return Device(nb::cast<Device::DeviceType>(d));
  throw nb::type_error("[device_info] expects a Device, a DeviceType or None.");
}

// Metal's device_info keys for the device Metal kernels run on: the GPU
// where there is one, else this machine's CPU and RAM.
DeviceInfo metal_device_info() {
  if (is_available(Device(Device::gpu))) return device_info(Device(Device::gpu));
  DeviceInfo info = device_info(Device(Device::cpu));
  const size_t memory = get_memory_limit();
  info["memory_size"] = memory;
  info["max_buffer_length"] = memory;
  info["max_recommended_working_set_size"] = memory;
  return info;
}

void warn_capture(const char* what) {
  nb::module_::import_("warnings")
      .attr("warn")(std::string("[metal.") + what +
                    "] GPU captures are an Xcode feature; Alloy accepts the call and records nothing.");
}

void def_memory_functions(nb::module_& m) {
  m.def("get_memory_limit", &get_memory_limit, "The memory limit in bytes.");
  m.def("set_memory_limit", &set_memory_limit, nb::arg("limit"),
        "Sets the memory limit (bytes); above it allocations give the cache back first. Returns the previous limit.");
  m.def("set_cache_limit", &set_cache_limit, nb::arg("limit"),
        "Sets how many freed bytes the allocator keeps for reuse (0 disables the cache). Returns the previous "
        "limit.");
  m.def("set_wired_limit", &set_wired_limit, nb::arg("limit"),
        "Kept for MLX code: wired memory is a macOS notion with no effect here. Returns the previous value.");
}

}  // namespace

void init_runtime(nb::module_& m) {
  m.def("contiguous", [](const array& a, bool allow_col_major, StreamOrDevice s) { return contiguous(a, allow_col_major, s); },
        nb::arg("a"), nb::arg("allow_col_major") = false, nb::kw_only(), nb::arg("stream") = nb::none(),
        "The array as a row-contiguous one (column-major too when allow_col_major), copying only if needed.");
  m.def("depends",
        [](nb::handle inputs, nb::handle dependencies) -> nb::object {
          std::vector<array> outs = depends(array_or_arrays(inputs, "depends", "inputs"),
                                             array_or_arrays(dependencies, "depends", "dependencies"));
          if (nb::isinstance<array>(inputs)) return nb::cast(outs[0]);
          return nb::cast(outs);
        },
        nb::arg("inputs"), nb::arg("dependencies"),
        "The inputs, unchanged, made to depend on `dependencies` (evaluated first).");
  m.def("device_info", [](nb::handle d) { return device_info(device_of(d)); }, nb::arg("d") = nb::none(),
        "Properties of a device (default: the default device) under MLX's keys.");
  m.def("set_float32_matmul_precision", &set_float32_matmul_precision, nb::arg("precision"),
        "How float32 matmuls run on the GPU (PyTorch's names): \"highest\" (the default, full float32) or "
        "\"high\" (TF32 tensor cores: inputs rounded to 10 mantissa bits, float32 sums; \"medium\" is the same). "
        "The CPU always computes in float32. ALLOY_FLOAT32_MATMUL_PRECISION sets the starting value.");
  m.def("get_float32_matmul_precision", &get_float32_matmul_precision,
        "\"highest\" or \"high\": see set_float32_matmul_precision.");
  m.def("device_count", [](Device::DeviceType t) { return device_count(t); }, nb::arg("device_type"),
        "How many devices of a type this process can use.");
  def_memory_functions(m);
  m.def("export_to_dot",
        [](nb::object file, nb::args args, nb::kwargs kwargs) {
          std::vector<std::pair<std::string, array>> outputs;
          for (nb::handle h : args) {
            for (const array& a : array_or_arrays(h, "export_to_dot", "each positional argument")) {
              outputs.emplace_back("", a);
            }
          }
          for (auto [k, v] : kwargs) outputs.emplace_back(nb::cast<std::string>(k), nb::cast<array>(v));
          std::ostringstream text;
          export_to_dot(text, outputs);
          if (nb::isinstance<nb::str>(file) || nb::hasattr(file, "__fspath__")) {
            nb::object f = nb::module_::import_("builtins").attr("open")(file, "w");
            f.attr("write")(text.str());
            f.attr("close")();
          } else {
            file.attr("write")(text.str());
          }
        },
        nb::arg("file"), nb::arg("args"), nb::arg("kwargs"),
        "Writes the unevaluated graph behind the arrays (keyword arrays named by their keys) to `file` (a path "
        "or a text file object) in Graphviz's DOT language.");

  nb::module_ metal = m.def_submodule(
      "metal", "Metal kernels run here on every device (translated for the GPU or the CPU), so is_available() is "
               "True; the memory functions are mx's own.");
  metal.def("is_available", [] { return true; }, "True: Alloy runs Metal kernels on every device.");
  metal.def("device_info", &metal_device_info,
            "Metal's device_info keys for the device Metal kernels run on (the GPU, else the CPU).");
  for (const char* name : {"get_active_memory", "get_peak_memory", "reset_peak_memory", "get_cache_memory",
                           "clear_cache", "set_memory_limit", "set_cache_limit", "set_wired_limit"}) {
    metal.attr(name) = m.attr(name);
  }
  metal.def("start_capture", [](nb::handle) { warn_capture("start_capture"); }, nb::arg("path"));
  metal.def("stop_capture", [] { warn_capture("stop_capture"); });

  nb::module_ cuda = m.def_submodule("cuda", "The CUDA backend: mx.gpu is a CUDA device where one is present.");
  cuda.def("is_available", [] { return is_available(Device(Device::gpu)); },
           "Whether mx.gpu is a CUDA GPU this process can use.");
}

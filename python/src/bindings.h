// One init function per binding file; module.cpp calls them in order.
#pragma once

#include <nanobind/nanobind.h>

#include "dtype_caster.h"

namespace nb = nanobind;

void init_dtypes(nb::module_& m);
void init_device(nb::module_& m);
void init_array(nb::module_& m);
void init_creation(nb::module_& m);
void init_elementwise(nb::module_& m);
void init_reductions(nb::module_& m);
void init_shape(nb::module_& m);
void init_indexing(nb::module_& m);
void init_linalg(nb::module_& m);
void init_ops_shape(nb::module_& m);
void init_random(nb::module_& m);
void init_fast(nb::module_& m);
void init_metal_library(nb::module_& f);  // called by init_fast: adds to mx.fast
void init_transforms(nb::module_& m);
void init_memory(nb::module_& m);
void init_msl(nb::module_& m);
void init_runtime(nb::module_& m);
void init_ops_math(nb::module_& m);
void init_conv(nb::module_& m);
void init_fast_ops(nb::module_& m);  // after init_fast: adds to mx.fast
void init_io(nb::module_& m);
void init_export(nb::module_& m);
void init_distributed(nb::module_& m);
void init_printing(nb::module_& m);
void init_array_iteration(nb::module_& m);
void init_sort(nb::module_& m);
void init_fft(nb::module_& m);  // the mx.fft submodule
void init_quant(nb::module_& m);
void init_buffers(nb::module_& m);
void init_linalg_ops(nb::module_& m);  // mx.linalg, mx.matrix_norm, random.multivariate_normal

#include "alloy/array.h"

// Adds a method to mx.array from any binding file (each op family binds its
// own methods and operators next to its functions).
template <typename F, typename... Extra>
void def_array_method(const char* name, F&& f, const Extra&... extra) {
  nb::handle cls = nb::type<alloy::array>();
  // nanobind chains this onto an existing overload set of the same name.
  nb::object fn = nb::cpp_function(std::forward<F>(f), nb::scope(cls), nb::name(name), nb::is_method(), extra...);
  nb::setattr(cls, name, fn);
}

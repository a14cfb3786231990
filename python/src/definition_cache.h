// A Python dictionary of kernel definitions already made, by their
// arguments: Alloy's mx.fast.metal_kernel / cuda_kernel and alloy.mlx's
// metal_kernel share it (header-only: each module keeps its own).
#pragma once

#include <nanobind/nanobind.h>

namespace alloy_python {

namespace nb = nanobind;

// The seeds (like many MLX users) build the kernel object inside the
// function they call, so the same definition comes back on every call:
// handing back the object made the first time skips making it again (for
// Alloy's launchers, tens of microseconds) and lets its variant memo answer
// the launch at once. The objects hold no state beyond their definition, so
// sharing one is invisible. `key` holds every argument that defines the
// kernel (its strings' hashes are kept by Python); at most 4096 are kept.
template <class Make>
nb::object cached_definition(const nb::tuple& key, Make&& make) {
  static nb::dict* cache = new nb::dict();  // never freed: lives as long as the module
  constexpr Py_ssize_t kMaxDefinitions = 4096;
  if (PyObject* hit = PyDict_GetItemWithError(cache->ptr(), key.ptr())) return nb::borrow(hit);
  if (PyErr_Occurred()) throw nb::python_error();
  nb::object made = make();
  if (PyDict_Size(cache->ptr()) >= kMaxDefinitions) PyDict_Clear(cache->ptr());
  if (PyDict_SetItem(cache->ptr(), key.ptr(), made.ptr()) != 0) throw nb::python_error();
  return made;
}

}  // namespace alloy_python

// mx.Dtype across the binding. nanobind's caster for enums also takes a
// Python int as the member of that value (`x.astype(5)` gave int8, and
// mx.zeros((2,), 5) an int8 array), where MLX, whose Dtype is a class of
// its own, raises TypeError: this caster takes only the members. Every file
// that passes a Dtype to or from Python sees it (bindings.h and convert.h
// include it), as the one definition rule asks of a specialization.
#pragma once

#include <array>

#include <nanobind/nanobind.h>

#include "alloy/dtype.h"

namespace alloy::py {

// mx.float32 and friends, by value: the enum's own members (kept alive by
// the enum type), set by init_dtypes before anything converts a Dtype.
inline std::array<PyObject*, kNumDtypes> dtype_members{};

// The Dtype `o` is, or false when it is not one of the members.
inline bool dtype_of(PyObject* o, Dtype& d) {
  for (int i = 0; i < kNumDtypes; ++i) {
    if (dtype_members[i] == o) {
      d = static_cast<Dtype>(i);
      return true;
    }
  }
  return false;
}

}  // namespace alloy::py

namespace nanobind::detail {

template <>
struct type_caster<alloy::Dtype> {
  NB_TYPE_CASTER(alloy::Dtype, const_name<alloy::Dtype>())

  template <typename Flags>
  bool from_python(handle src, Flags, cleanup_list*) noexcept {
    return alloy::py::dtype_of(src.ptr(), value);
  }

  static handle from_cpp(alloy::Dtype d, rv_policy, cleanup_list*) noexcept {
    PyObject* o = alloy::py::dtype_members[static_cast<int>(d)];
    if (!o) {
      PyErr_SetString(PyExc_RuntimeError, "alloy.core: a Dtype was converted before mx.Dtype was made.");
      return handle();
    }
    Py_INCREF(o);
    return o;
  }
};

}  // namespace nanobind::detail

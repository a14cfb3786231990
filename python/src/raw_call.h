// For the few bindings written against CPython's own calling convention
// (vectorcall, METH_FASTCALL) to skip the generic binding's cost: runs the
// C++ body and turns what it throws into the Python exception nanobind
// would raise for it, so those bindings fail exactly like the others.
// Header-only: Alloy's module and alloy.mlx's each keep their own copy.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>
#include <utility>

namespace alloy::py {

namespace nb = nanobind;

// Raises `failure` through nanobind's exception translators (the Python
// error is left set). Only failing calls come here.
inline void raise_as_python(std::exception_ptr failure) noexcept {
  thread_local std::exception_ptr pending;
  // A nanobind function that rethrows: nanobind's dispatcher translates the
  // exception (std::invalid_argument to ValueError, and so on) on its way out.
  static nb::object* rethrow =
      new nb::object(nb::cpp_function([] { std::rethrow_exception(std::exchange(pending, nullptr)); }));
  pending = std::move(failure);
  PyObject* r = PyObject_CallNoArgs(rethrow->ptr());
  Py_XDECREF(r);  // never a value: the call always raises
}

// Calls `body` (which returns nb::object); nullptr with the Python error set
// when it throws.
template <class Body>
PyObject* call_translating_exceptions(Body&& body) noexcept {
  try {
    return std::forward<Body>(body)().release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
  } catch (...) {
    raise_as_python(std::current_exception());
  }
  return nullptr;
}

}  // namespace alloy::py

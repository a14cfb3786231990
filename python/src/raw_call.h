// For the few bindings written against CPython's own calling convention
// (vectorcall, METH_FASTCALL) to skip the generic binding's cost: runs the
// C++ body and turns what it throws into the Python exception nanobind
// would raise for it, so those bindings fail exactly like the others.
#pragma once

#include <exception>
#include <utility>

#include "bindings.h"

namespace alloy::py {

// Raises `failure` through nanobind's exception translators (the Python
// error is left set). Only failing calls come here.
void raise_as_python(std::exception_ptr failure) noexcept;

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

#include "raw_call.h"

namespace alloy::py {

namespace {
thread_local std::exception_ptr pending;
}

void raise_as_python(std::exception_ptr failure) noexcept {
  // A nanobind function that rethrows: nanobind's dispatcher translates the
  // exception (std::invalid_argument to ValueError, and so on) on its way out.
  static nb::object* rethrow =
      new nb::object(nb::cpp_function([] { std::rethrow_exception(std::exchange(pending, nullptr)); }));
  pending = std::move(failure);
  PyObject* r = PyObject_CallNoArgs(rethrow->ptr());
  Py_XDECREF(r);  // never a value: the call always raises
}

}  // namespace alloy::py

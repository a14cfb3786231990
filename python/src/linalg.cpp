// mx.matmul and the @ operator.
#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

void init_linalg(nb::module_& m) {
  m.def("matmul", [](nb::handle a, nb::handle b, SD s) { return matmul(py::to_array(a), py::to_array(b), s); }, "a"_a,
        "b"_a, nb::kw_only(), "stream"_a = nb::none(),
        "Matrix product with numpy's rules (1-D promotion, broadcast batch dimensions).");
  // A Python scalar is no matrix: NotImplemented, so that `a @ 2` is
  // Python's TypeError, as MLX's (a 0-d operand was matmul's ValueError).
  def_array_method("__matmul__", [](const array& a, nb::handle b) -> nb::object {
    if (py::is_python_scalar(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(matmul(a, py::to_array(b)));
  });
  def_array_method("__rmatmul__", [](const array& a, nb::handle b) -> nb::object {
    if (py::is_python_scalar(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(matmul(py::to_array(b), a));
  });
  def_array_method("__imatmul__", [](array& a, nb::handle b) -> nb::object {
    if (py::is_python_scalar(b)) return nb::borrow(Py_NotImplemented);
    a = matmul(a, py::to_array(b));
    return nb::cast(a);
  });
}

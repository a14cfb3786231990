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
  def_array_method("__matmul__", [](const array& a, nb::handle b) { return matmul(a, py::to_array(b)); });
  def_array_method("__rmatmul__", [](const array& a, nb::handle b) { return matmul(py::to_array(b), a); });
  def_array_method("__imatmul__", [](array& a, nb::handle b) {
    a = matmul(a, py::to_array(b));
    return a;
  });
}

// my_custom_ops: the Python module the guide imports (`from my_custom_ops
// import scaled_elu`), with nanobind.
#include <nanobind/nanobind.h>

#include "custom_op.h"

namespace nb = nanobind;

NB_MODULE(my_custom_ops, m) {
  nb::module_::import_("alloy.core");  // alloy.core's array type, and its liballoy
  m.def("scaled_elu", &scaled_elu, nb::arg("x"), nb::arg("alpha") = 1.0f,
        "x if x > 0 else alpha * (exp(x) - 1), by the guide's Metal kernel on the default device.");
}

// mx.float32 ... as Dtype objects, plus the dtype categories of mx.issubdtype.
#include <nanobind/stl/string.h>

#include "alloy/dtype.h"
#include "bindings.h"

using namespace alloy;

void init_dtypes(nb::module_& m) {
  auto dt = nb::enum_<Dtype>(m, "Dtype", "An array's element type.");
#define ALLOY_BIND_DTYPE(name, type, kind, py, msl) dt.value(py, Dtype::name);
  ALLOY_DTYPES(ALLOY_BIND_DTYPE)
#undef ALLOY_BIND_DTYPE
  dt.def_prop_ro("size", [](Dtype d) { return size_of(d); }, "Size of one element in bytes.");
  dt.def("__repr__", [](Dtype d) { return std::string("alloy.core.") + dtype_name(d); });
  dt.def("__str__", [](Dtype d) { return std::string("alloy.core.") + dtype_name(d); });
  dt.def("__hash__", [](Dtype d) { return static_cast<int>(d); });
#define ALLOY_EXPORT_DTYPE(name, type, kind, py, msl) m.attr(py) = Dtype::name;
  ALLOY_DTYPES(ALLOY_EXPORT_DTYPE)
#undef ALLOY_EXPORT_DTYPE
  m.attr("bool_") = Dtype::bool_;  // MLX's spelling; mx.bool stays as an alias

  auto cat = nb::enum_<DtypeCategory>(m, "DtypeCategory");
  cat.value("complexfloating", DtypeCategory::complexfloating)
      .value("floating", DtypeCategory::floating)
      .value("inexact", DtypeCategory::inexact)
      .value("signedinteger", DtypeCategory::signedinteger)
      .value("unsignedinteger", DtypeCategory::unsignedinteger)
      .value("integer", DtypeCategory::integer)
      .value("number", DtypeCategory::number)
      .value("generic", DtypeCategory::generic);
  for (const char* c : {"complexfloating", "floating", "inexact", "signedinteger", "unsignedinteger", "integer",
                        "number", "generic"}) {
    m.attr(c) = cat.attr(c);
  }
  m.def("issubdtype", [](Dtype a, DtypeCategory c) { return issubdtype(a, c); }, nb::arg(), nb::arg());
  m.def("issubdtype", [](Dtype a, Dtype b) { return a == b; }, nb::arg(), nb::arg());
  m.def("issubdtype", [](DtypeCategory a, DtypeCategory b) {
    if (a == b || b == DtypeCategory::generic) return true;
    if (b == DtypeCategory::number) return a != DtypeCategory::generic;
    if (b == DtypeCategory::inexact) return a == DtypeCategory::floating || a == DtypeCategory::complexfloating;
    if (b == DtypeCategory::integer) return a == DtypeCategory::signedinteger || a == DtypeCategory::unsignedinteger;
    return false;
  });
  m.def("promote_types", &promote_types, nb::arg(), nb::arg(), "MLX's type promotion of two dtypes.");
}

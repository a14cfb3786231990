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
  // The members, for dtype_caster.h (which converts every Dtype from here on).
#define ALLOY_KEEP_DTYPE(name, type, kind, py_name, msl) \
  alloy::py::dtype_members[static_cast<int>(Dtype::name)] = dt.attr(py_name).inc_ref().ptr();
  ALLOY_DTYPES(ALLOY_KEEP_DTYPE)
#undef ALLOY_KEEP_DTYPE
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
  // Either side a Dtype or a category; anything else (an int, a string) is
  // MLX's ValueError naming the side. A category is never below a Dtype.
  m.def(
      "issubdtype",
      [](nb::handle a, nb::handle b) {
        struct Side {
          bool is_dtype;
          Dtype dtype;
          DtypeCategory category;
        };
        auto side = [](nb::handle h, const char* which) {
          Side s{true, Dtype::bool_, DtypeCategory::generic};
          if (py::dtype_of(h.ptr(), s.dtype)) return s;
          if (!nb::isinstance<DtypeCategory>(h))
            throw nb::value_error((std::string("[issubdtype] Received invalid type for ") + which + " input.").c_str());
          s.is_dtype = false;
          s.category = nb::cast<DtypeCategory>(h);
          return s;
        };
        const Side x = side(a, "first"), y = side(b, "second");
        if (x.is_dtype) return y.is_dtype ? x.dtype == y.dtype : issubdtype(x.dtype, y.category);
        return !y.is_dtype && issubdtype(x.category, y.category);
      },
      nb::arg(), nb::arg(), "Whether the first dtype or category is the second or below it.");
  m.def("promote_types", &promote_types, nb::arg(), nb::arg(), "MLX's type promotion of two dtypes.");
}

// Dtype utilities: mx.can_cast, result_type, isdtype, finfo, iinfo, and the
// array constructors asarray, astype, empty, empty_like.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cfloat>
#include <cstdio>
#include <limits>
#include <string>

#include "alloy/ops_math.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

bool is_kind(Dtype d, const std::string& kind) {
  if (kind == "bool") return d == Dtype::bool_;
  if (kind == "signed integer") return is_signed_integer(d);
  if (kind == "unsigned integer") return is_unsigned(d);
  if (kind == "integral") return is_integral(d);
  if (kind == "real floating") return is_floating(d);
  if (kind == "complex floating") return is_complex(d);
  if (kind == "numeric") return d != Dtype::bool_;
  throw std::invalid_argument("[isdtype] Unknown data type kind: '" + kind + "'.");
}

// One entry of isdtype's `kind`: a dtype or a kind name.
bool matches(Dtype d, nb::handle kind) {
  if (nb::isinstance<Dtype>(kind)) return nb::cast<Dtype>(kind) == d;
  if (nb::isinstance<nb::str>(kind)) return is_kind(d, nb::cast<std::string>(kind));
  throw std::invalid_argument("[isdtype] `kind` must be a dtype, a string, or a tuple of dtypes and strings.");
}

// numpy-style facts about a floating dtype (complex64: its float32 parts).
struct FloatInfo {
  Dtype dtype;
  int bits;
  double eps, max, min, smallest_normal;
};

FloatInfo float_info(Dtype d) {
  if (d == Dtype::complex64) d = Dtype::float32;
  switch (d) {
    case Dtype::float16: return {d, 16, 0x1p-10, 65504.0, -65504.0, 0x1p-14};
    case Dtype::bfloat16: return {d, 16, 0x1p-7, 0x1.fep127, -0x1.fep127, 0x1p-126};
    case Dtype::float32: return {d, 32, FLT_EPSILON, FLT_MAX, -FLT_MAX, FLT_MIN};
    case Dtype::float64: return {d, 64, DBL_EPSILON, DBL_MAX, -DBL_MAX, DBL_MIN};
    default:
      throw std::invalid_argument(std::string("[finfo] dtype ") + dtype_name(d) + " is not inexact.");
  }
}

struct IntInfo {
  Dtype dtype;
  nb::object min, max;  // Python ints: uint64's max does not fit int64
};

template <typename T>
IntInfo int_info_of(Dtype d) {
  return {d, nb::int_(std::numeric_limits<T>::min()), nb::int_(std::numeric_limits<T>::max())};
}

IntInfo int_info(Dtype d) {
  switch (d) {
    case Dtype::uint8: return int_info_of<uint8_t>(d);
    case Dtype::uint16: return int_info_of<uint16_t>(d);
    case Dtype::uint32: return int_info_of<uint32_t>(d);
    case Dtype::uint64: return int_info_of<unsigned long long>(d);
    case Dtype::int8: return int_info_of<int8_t>(d);
    case Dtype::int16: return int_info_of<int16_t>(d);
    case Dtype::int32: return int_info_of<int32_t>(d);
    case Dtype::int64: return int_info_of<long long>(d);
    default:
      throw std::invalid_argument(std::string("[iinfo] Only integer types supported but ") + dtype_name(d) +
                                  " was provided");
  }
}

// %g with 6 significant digits, as MLX prints finfo.
std::string short_float(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void bind_info_classes(nb::module_& m) {
  nb::class_<FloatInfo>(m, "finfo", "Facts about a floating dtype.")
      .def(nb::new_([](Dtype d) { return float_info(d); }), nb::arg())
      .def_ro("bits", &FloatInfo::bits)
      .def_ro("dtype", &FloatInfo::dtype)
      .def_ro("eps", &FloatInfo::eps)
      .def_ro("max", &FloatInfo::max)
      .def_ro("min", &FloatInfo::min)
      .def_ro("smallest_normal", &FloatInfo::smallest_normal)
      .def("__repr__", [](const FloatInfo& f) {
        return "finfo(min=" + short_float(f.min) + ", max=" + short_float(f.max) + ", dtype=" +
               dtype_name(f.dtype) + ")";
      });
  nb::class_<IntInfo>(m, "iinfo", "Facts about an integer dtype.")
      .def(nb::new_([](Dtype d) { return int_info(d); }), nb::arg())
      .def_ro("dtype", &IntInfo::dtype)
      .def_prop_ro("min", [](const IntInfo& i) { return i.min; })
      .def_prop_ro("max", [](const IntInfo& i) { return i.max; })
      .def("__repr__", [](const IntInfo& i) {
        return "iinfo(min=" + nb::cast<std::string>(nb::str(i.min)) + ", max=" +
               nb::cast<std::string>(nb::str(i.max)) + ", dtype=" + dtype_name(i.dtype) + ")";
      });
}

}  // namespace

void init_dtype_utils(nb::module_& m) {
  m.def(
      "can_cast",
      [](nb::handle from, Dtype to) {
        if (nb::isinstance<array>(from)) return can_cast(nb::cast<array>(from).dtype(), to);
        if (nb::isinstance<Dtype>(from)) return can_cast(nb::cast<Dtype>(from), to);
        throw std::invalid_argument("[can_cast] `from_` must be an array or a dtype.");
      },
      "from_"_a, "to"_a, "Whether promoting from_ with to gives to.");
  m.def(
      "result_type",
      [](nb::args args) {
        std::vector<Dtype> dtypes;
        for (nb::handle h : args) {
          if (nb::isinstance<array>(h)) {
            dtypes.push_back(nb::cast<array>(h).dtype());
          } else if (nb::isinstance<Dtype>(h)) {
            dtypes.push_back(nb::cast<Dtype>(h));
          } else {
            throw std::invalid_argument("[result_type] Inputs must be arrays or dtypes.");
          }
        }
        return result_type(dtypes);
      },
      "The dtype that promoting all the arrays and dtypes gives.");
  m.def(
      "isdtype",
      [](Dtype dtype, nb::handle kind) {
        if (nb::isinstance<nb::tuple>(kind)) {
          bool any = false;
          for (nb::handle k : kind) any = matches(dtype, k) || any;  // every entry is checked
          return any;
        }
        return matches(dtype, kind);
      },
      "dtype"_a, "kind"_a,
      "Whether dtype is kind (a dtype, a kind name such as 'integral', or a tuple of them).");
  bind_info_classes(m);

  m.def(
      "asarray",
      [](nb::handle a, std::optional<Dtype> dtype, std::optional<bool> copy) {
        // MLX's asarray always makes a new array, so copy=False cannot be honoured.
        if (copy && !*copy) throw std::invalid_argument("[asarray] Unable to avoid copy while creating an array.");
        return py::to_array(a, dtype);
      },
      "a"_a, "dtype"_a.none() = nb::none(), nb::kw_only(), "copy"_a.none() = nb::none(),
      "The input as an array (copy=False is refused: a new array is always made, as MLX).");
  m.def("astype", [](const array& a, Dtype dtype, SD s) { return astype(a, dtype, s); }, "a"_a, "dtype"_a,
        nb::kw_only(), "stream"_a = nb::none(), "The array cast to dtype.");
  // MLX's empty is its zeros (there is no uninitialised memory to hand out).
  m.attr("empty") = m.attr("zeros");
  m.def(
      "empty_like",
      [](const array& a, std::optional<Dtype> dtype, SD s) { return zeros(a.shape(), dtype.value_or(a.dtype()), s); },
      "a"_a, "dtype"_a.none() = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
      "Zeros of a's shape and (by default) dtype, as MLX's empty_like.");
}

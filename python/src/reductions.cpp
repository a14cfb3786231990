// Reductions and scans (mx.sum, mx.argmax, mx.cumsum ...) and the matching
// array methods. `axis` is an int, a list/tuple of ints, or None (all axes;
// for scans, the flattened array).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

using ReduceFn = array (*)(const array&, const Axes&, bool, SD);
using ReduceAllFn = array (*)(const array&, bool, SD);

struct ReduceEntry {
  const char* name;
  ReduceFn fn;
  ReduceAllFn all;
  const char* doc;
};

#define ALLOY_REDUCE_ENTRY(fn, doc)                                                  \
  {#fn, [](const array& a, const Axes& ax, bool k, SD s) { return fn(a, ax, k, s); }, \
   [](const array& a, bool k, SD s) { return fn(a, k, s); }, doc}
const ReduceEntry kReductions[] = {
    ALLOY_REDUCE_ENTRY(sum, "Sum over the given axes."),
    ALLOY_REDUCE_ENTRY(prod, "Product over the given axes."),
    ALLOY_REDUCE_ENTRY(max, "Maximum over the given axes."),
    ALLOY_REDUCE_ENTRY(min, "Minimum over the given axes."),
    ALLOY_REDUCE_ENTRY(mean, "Mean over the given axes."),
    ALLOY_REDUCE_ENTRY(all, "Whether all elements are true over the given axes."),
    ALLOY_REDUCE_ENTRY(any, "Whether any element is true over the given axes."),
    ALLOY_REDUCE_ENTRY(logsumexp, "log(sum(exp(a))) over the given axes, without overflow."),
};
#undef ALLOY_REDUCE_ENTRY

array reduce_call(const ReduceEntry& e, const array& a, nb::handle axis, bool keepdims, SD s) {
  auto axes = py::axes_arg(axis);
  return axes ? e.fn(a, *axes, keepdims, s) : e.all(a, keepdims, s);
}

array var_call(const array& a, nb::handle axis, bool keepdims, int ddof, SD s, bool take_sqrt) {
  auto axes = py::axes_arg(axis);
  array v = axes ? var(a, *axes, keepdims, ddof, s) : var(a, keepdims, ddof, s);
  return take_sqrt ? sqrt(v, s) : v;
}

array arg_call(bool is_max, const array& a, std::optional<int> axis, bool keepdims, SD s) {
  if (axis) return is_max ? argmax(a, *axis, keepdims, s) : argmin(a, *axis, keepdims, s);
  return is_max ? argmax(a, keepdims, s) : argmin(a, keepdims, s);
}

using ScanFn = array (*)(const array&, int, bool, bool, SD);
struct ScanEntry {
  const char* name;
  ScanFn fn;
  const char* doc;
};
const ScanEntry kScans[] = {
    {"cumsum", [](const array& a, int ax, bool r, bool i, SD s) { return cumsum(a, ax, r, i, s); },
     "Cumulative sum along an axis (the flattened array when axis is None)."},
    {"cumprod", [](const array& a, int ax, bool r, bool i, SD s) { return cumprod(a, ax, r, i, s); },
     "Cumulative product along an axis (the flattened array when axis is None)."},
    {"cummax", [](const array& a, int ax, bool r, bool i, SD s) { return cummax(a, ax, r, i, s); },
     "Cumulative maximum along an axis (the flattened array when axis is None)."},
    {"cummin", [](const array& a, int ax, bool r, bool i, SD s) { return cummin(a, ax, r, i, s); },
     "Cumulative minimum along an axis (the flattened array when axis is None)."},
};

array scan_call(ScanFn fn, const array& a, std::optional<int> axis, bool reverse, bool inclusive, SD s) {
  if (axis) return fn(a, *axis, reverse, inclusive, s);
  return fn(reshape(a, {-1}, s), 0, reverse, inclusive, s);
}

array softmax_call(const array& a, nb::handle axis, bool precise, SD s) {
  auto axes = py::axes_arg(axis);
  return axes ? softmax(a, *axes, precise, s) : softmax(a, precise, s);
}

}  // namespace

void init_reductions(nb::module_& m) {
  for (const auto& e : kReductions) {
    const ReduceEntry* ep = &e;
    m.def(
        e.name,
        [ep](nb::handle a, nb::handle axis, bool keepdims, SD s) {
          return reduce_call(*ep, py::to_array(a), axis, keepdims, s);
        },
        "a"_a, "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(),
        "stream"_a = nb::none(), e.doc);
    def_array_method(
        e.name,
        [ep](const array& a, nb::handle axis, bool keepdims, SD s) { return reduce_call(*ep, a, axis, keepdims, s); },
        "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), "stream"_a = nb::none());
  }
  for (bool is_std : {false, true}) {
    const char* name = is_std ? "std" : "var";
    m.def(
        name,
        [is_std](nb::handle a, nb::handle axis, bool keepdims, int ddof, SD s) {
          return var_call(py::to_array(a), axis, keepdims, ddof, s, is_std);
        },
        "a"_a, "axis"_a.none() = nb::none(), "keepdims"_a = false, "ddof"_a = 0, nb::kw_only(),
        "stream"_a = nb::none(),
        is_std ? "Standard deviation over the given axes (divisor n - ddof)."
               : "Variance over the given axes (divisor n - ddof).");
    def_array_method(
        name,
        [is_std](const array& a, nb::handle axis, bool keepdims, int ddof, SD s) {
          return var_call(a, axis, keepdims, ddof, s, is_std);
        },
        "axis"_a.none() = nb::none(), "keepdims"_a = false, "ddof"_a = 0, nb::kw_only(), "stream"_a = nb::none());
  }
  for (bool is_max : {true, false}) {
    const char* name = is_max ? "argmax" : "argmin";
    m.def(
        name,
        [is_max](nb::handle a, std::optional<int> axis, bool keepdims, SD s) {
          return arg_call(is_max, py::to_array(a), axis, keepdims, s);
        },
        "a"_a, "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(),
        "stream"_a = nb::none(),
        is_max ? "Index (uint32) of the first maximum along an axis, or of the flattened array."
               : "Index (uint32) of the first minimum along an axis, or of the flattened array.");
    def_array_method(
        name,
        [is_max](const array& a, std::optional<int> axis, bool keepdims, SD s) {
          return arg_call(is_max, a, axis, keepdims, s);
        },
        "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(), "stream"_a = nb::none());
  }
  for (const auto& e : kScans) {
    ScanFn fn = e.fn;
    m.def(
        e.name,
        [fn](nb::handle a, std::optional<int> axis, bool reverse, bool inclusive, SD s) {
          return scan_call(fn, py::to_array(a), axis, reverse, inclusive, s);
        },
        "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), "reverse"_a = false,
        "inclusive"_a = true, "stream"_a = nb::none(), e.doc);
    def_array_method(
        e.name,
        [fn](const array& a, std::optional<int> axis, bool reverse, bool inclusive, SD s) {
          return scan_call(fn, a, axis, reverse, inclusive, s);
        },
        "axis"_a.none() = nb::none(), nb::kw_only(), "reverse"_a = false, "inclusive"_a = true,
        "stream"_a = nb::none());
  }
  m.def(
      "softmax",
      [](nb::handle a, nb::handle axis, bool precise, SD s) { return softmax_call(py::to_array(a), axis, precise, s); },
      "a"_a, "axis"_a.none() = nb::none(), nb::kw_only(), "precise"_a = false,
      "stream"_a = nb::none(), "exp(a) / sum(exp(a)) over the given axes, computed stably.");
}

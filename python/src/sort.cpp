// Sorting: mx.sort, argsort, partition, argpartition, topk, median,
// searchsorted, unique (signatures as mlx.core 0.32.4: the array arguments are
// positional-only, unnamed as in MLX with nb::sig giving help() their names;
// `axis=None` flattens).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops.h"
#include "alloy/ops_sort.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

nb::object unique_call(const array& a, int size, bool return_index, bool return_inverse, bool return_counts,
                       nb::handle fill_value, SD s) {
  std::optional<array> fill;
  if (!fill_value.is_none()) fill = py::to_array(fill_value);
  UniqueResult r = unique(a, size, fill, s);
  if (!return_index && !return_inverse && !return_counts) return nb::cast(r.values);
  nb::list out;
  out.append(nb::cast(r.values));
  if (return_index) out.append(nb::cast(r.index));
  if (return_inverse) out.append(nb::cast(r.inverse));
  if (return_counts) out.append(nb::cast(r.counts));
  return nb::tuple(out);
}

}  // namespace

void init_sort(nb::module_& m) {
  m.def("sort", [](const array& a, std::optional<int> axis, SD s) { return sort(a, axis, s); }, nb::arg(),
        "axis"_a.none() = -1, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def sort(a: array, /, axis: int | None = -1, *, stream: Stream | Device | None = None) -> array"),
        "A sorted copy along axis (None: the flattened array). Stable; NaNs last.");
  m.def("argsort", [](const array& a, std::optional<int> axis, SD s) { return argsort(a, axis, s); }, nb::arg(),
        "axis"_a.none() = -1, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def argsort(a: array, /, axis: int | None = -1, *, stream: Stream | Device | None = None) -> array"),
        "The uint32 indices that sort along axis (None: the flattened array). Stable; NaNs last.");
  m.def("partition",
        [](const array& a, int kth, std::optional<int> axis, SD s) { return partition(a, kth, axis, s); }, nb::arg(),
        "kth"_a, "axis"_a.none() = -1, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def partition(a: array, /, kth: int, axis: int | None = -1, *, stream: Stream | Device | None = None) -> array"),
        "A copy whose element kth is in its sorted place, smaller-or-equal ones before it and "
        "greater-or-equal ones after.");
  m.def("argpartition",
        [](const array& a, int kth, std::optional<int> axis, SD s) { return argpartition(a, kth, axis, s); }, nb::arg(),
        "kth"_a, "axis"_a.none() = -1, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def argpartition(a: array, /, kth: int, axis: int | None = -1, *, stream: Stream | Device | None = None) -> array"),
        "The uint32 indices that partition along axis around kth.");
  m.def("topk", [](const array& a, int k, std::optional<int> axis, SD s) { return topk(a, k, axis, s); }, nb::arg(),
        "k"_a, "axis"_a.none() = -1, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def topk(a: array, /, k: int, axis: int | None = -1, *, stream: Stream | Device | None = None) -> array"),
        "The k largest elements along axis (not necessarily in order).");
  m.def("median",
        [](const array& a, nb::handle axis, bool keepdims, SD s) { return median(a, py::axes_arg(axis), keepdims, s); },
        nb::arg(), "axis"_a = nb::none(), "keepdims"_a = false, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def median(a: array, /, axis: int | Sequence[int] | None = None, keepdims: bool = False, *, stream: Stream | Device | None = None) -> array"),
        "Medians over the given axes (default: all); NaN where a NaN is present.");
  m.def("searchsorted",
        [](const array& seq, const array& values, const std::string& side, SD s) {
          return searchsorted(seq, values, side, s);
        },
        nb::arg(), nb::arg(), "side"_a = "left", nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def searchsorted(sorted_sequence: array, values: array, /, side: str = 'left', *, stream: Stream | Device | None = None) -> array"),
        "uint32 insertion points keeping the 1-D sorted_sequence sorted ('left': count of smaller elements; "
        "'right': count of smaller-or-equal ones).");
  m.def("unique", &unique_call, nb::arg(), "size"_a, "return_index"_a = false,
        "return_inverse"_a = false, "return_counts"_a = false, "fill_value"_a = nb::none(), nb::kw_only(),
        "stream"_a = nb::none(),
        nb::sig("def unique(a: array, /, size: int, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False, fill_value: scalar | array | None = None, *, stream: Stream | Device | None = None) -> array | tuple[array, ...]"),
        "The sorted unique elements of the flattened array, padded with fill_value or truncated to size; "
        "optionally with first indices, inverse indices and counts.");
}

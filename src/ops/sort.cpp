// Sorting ops. Sort, ArgSort, Partition and ArgPartition are the primitives
// (along the last axis; any other axis is swapped there and back). topk,
// median, searchsorted and unique are composites.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/ops_sort.h"
#include "alloy/random.h"
#include "ops/op_utils.h"
#include "primitives/sort.h"

namespace alloy {

namespace {

// The input seen along one axis: flattened for axis = None.
struct AxisView {
  array a;
  int axis;
};

AxisView view_along(const array& a, std::optional<int> axis, const char* op, SD s) {
  if (!axis) return {reshape(a, {-1}, s), 0};
  return {a, normalize_axis(*axis, a.ndim(), op)};
}

// Runs a last-axis primitive along `axis` (rows are contiguous in the kernels).
template <typename Prim, typename... Args>
array along_axis(const array& a, int axis, Dtype out_dtype, const char* op, SD s, Args... args) {
  // Positions within a row are uint32 in the result and in the kernels.
  if (a.ndim() > 0 && static_cast<int64_t>(a.shape(axis)) > int64_t{std::numeric_limits<uint32_t>::max()}) {
    throw std::invalid_argument(std::string("[") + op + "] rows longer than 2^32 - 1 elements are not supported.");
  }
  const int last = a.ndim() - 1;
  array x = axis == last ? a : swapaxes(a, axis, last, s);
  array y(x.shape(), out_dtype, std::make_shared<Prim>(to_stream(s), args...), {x});
  return axis == last ? y : swapaxes(y, axis, last, s);
}

std::string describe_axis(std::optional<int> axis) { return axis ? std::to_string(*axis) : std::string("None"); }

// kth in [-n, n), normalised to [0, n).
int check_kth(int kth, const AxisView& v, std::optional<int> axis, const char* op) {
  const ShapeElem n = v.a.shape(v.axis);
  if (kth >= n || kth < -n) {
    throw std::invalid_argument(std::string("[") + op + "] Received invalid kth " + std::to_string(kth) +
                                " along axis " + describe_axis(axis) + " for array with shape " +
                                shape_to_string(v.a.shape()) + ".");
  }
  return kth < 0 ? static_cast<int>(kth + n) : kth;
}

// Elements [start, start + len) along `axis`.
array slice_axis(const array& a, int axis, ShapeElem start, ShapeElem len, SD s) {
  Shape lo(a.ndim(), 0), hi = a.shape(), step(a.ndim(), 1);
  lo[axis] = start;
  hi[axis] = start + len;
  return slice(a, lo, hi, step, s);
}

}  // namespace

array sort(const array& a, std::optional<int> axis, SD s) {
  AxisView v = view_along(a, axis, "sort", s);
  return along_axis<Sort>(v.a, v.axis, v.a.dtype(), "sort", s);
}

array argsort(const array& a, std::optional<int> axis, SD s) {
  AxisView v = view_along(a, axis, "argsort", s);
  return along_axis<ArgSort>(v.a, v.axis, Dtype::uint32, "argsort", s);
}

array partition(const array& a, int kth, std::optional<int> axis, SD s) {
  AxisView v = view_along(a, axis, "partition", s);
  const int k = check_kth(kth, v, axis, "partition");
  return along_axis<Partition>(v.a, v.axis, v.a.dtype(), "partition", s, k);
}

array argpartition(const array& a, int kth, std::optional<int> axis, SD s) {
  AxisView v = view_along(a, axis, "argpartition", s);
  const int k = check_kth(kth, v, axis, "argpartition");
  return along_axis<ArgPartition>(v.a, v.axis, Dtype::uint32, "argpartition", s, k);
}

array topk(const array& a, int k, std::optional<int> axis, SD s) {
  AxisView v = view_along(a, axis, "topk", s);
  const ShapeElem n = v.a.shape(v.axis);
  if (k < 0 || k > n) {
    throw std::invalid_argument("[topk] Received invalid k=" + std::to_string(k) + " along axis " +
                                describe_axis(axis) + " for array with shape " + shape_to_string(v.a.shape()) + ".");
  }
  // The last k after partitioning at n - k (NaNs count as the largest). As
  // MLX, k == n returns the elements as they are, and k == 0 selects nothing.
  if (k == n) return v.a;
  if (k == 0) return slice_axis(v.a, v.axis, 0, 0, s);
  array parted = along_axis<Partition>(v.a, v.axis, v.a.dtype(), "topk", s, static_cast<int>(n - k));
  return slice_axis(parted, v.axis, n - k, k, s);
}

array median(const array& a, const std::optional<std::vector<int>>& axes_in, bool keepdims, SD s) {
  std::vector<int> axes;
  if (axes_in) {
    if (axes_in->empty()) throw std::invalid_argument("[median] Received an empty list of axes.");
    for (size_t i = 0; i < axes_in->size(); ++i) {
      const int ax = normalize_axis((*axes_in)[i], a.ndim(), "median");
      for (int seen : axes) {
        if (seen == ax) throw std::invalid_argument("[median] Received duplicate axis.");
      }
      axes.push_back(ax);
    }
  } else {
    for (int d = 0; d < a.ndim(); ++d) axes.push_back(d);
  }
  // Kept axes first (in order), reduced axes last, flattened into one row.
  std::vector<bool> reduced(a.ndim(), false);
  for (int ax : axes) reduced[ax] = true;
  std::vector<int> perm;
  Shape kept_shape, keep_dims_shape;
  ShapeElem m = 1;
  for (int d = 0; d < a.ndim(); ++d) {
    if (reduced[d]) {
      m *= a.shape(d);
      keep_dims_shape.push_back(1);
    } else {
      perm.push_back(d);
      kept_shape.push_back(a.shape(d));
      keep_dims_shape.push_back(a.shape(d));
    }
  }
  if (m == 0) throw std::invalid_argument("[median] Cannot take median along empty axis.");
  for (int d = 0; d < a.ndim(); ++d) {
    if (reduced[d]) perm.push_back(d);
  }
  Shape rows_shape = kept_shape;
  rows_shape.push_back(m);
  const Dtype dt = to_float_dtype(a.dtype());
  array x = reshape(transpose(astype(a, dt, s), perm, s), rows_shape, s);
  array sorted = sort(x, -1, s);
  const int last = static_cast<int>(rows_shape.size()) - 1;
  array mid = slice_axis(sorted, last, (m - 1) / 2, 1, s);
  // Even count: the mean of the two middle values, in the dtype itself (as
  // MLX: float16 may overflow to inf there).
  if (m % 2 == 0) mid = divide(add(mid, slice_axis(sorted, last, m / 2, 1, s), s), array(2.0, dt), s);
  // NaNs sort last: a row holds one exactly when its last element is NaN.
  array has_nan = isnan(slice_axis(sorted, last, m - 1, 1, s), s);
  mid = where(has_nan, astype(array(std::numeric_limits<float>::quiet_NaN()), dt, s), mid, s);
  return reshape(mid, keepdims ? keep_dims_shape : kept_shape, s);
}

array searchsorted(const array& sorted_sequence, const array& values, const std::string& side, SD s) {
  if (sorted_sequence.ndim() != 1) {
    throw std::invalid_argument("[searchsorted] The sorted sequence must be 1-D but has " +
                                std::to_string(sorted_sequence.ndim()) + " dimensions.");
  }
  if (side != "left" && side != "right") {
    throw std::invalid_argument("[searchsorted] Invalid side '" + side + "'. Expected 'left' or 'right'.");
  }
  const ShapeElem n = sorted_sequence.size(), m = values.size();
  if (n == 0 || m == 0) return zeros(values.shape(), Dtype::uint32, s);
  const Dtype dt = promote_types(sorted_sequence.dtype(), values.dtype());
  array seq = astype(sorted_sequence, dt, s);
  array vals = astype(reshape(values, {-1}, s), dt, s);
  // One stable sort of the values merged with the sequence, under the sort
  // order (NaNs last, equal to each other). Put first, values land before
  // the sequence's equal elements ("left"); put after, behind them ("right").
  // Each value's answer is the number of sequence elements sorted before it.
  const bool left = side == "left";
  array merged = left ? concatenate({vals, seq}, 0, s) : concatenate({seq, vals}, 0, s);
  array order = argsort(merged, 0, s);
  const array first_seq(static_cast<uint32_t>(left ? m : 0)), end_seq(static_cast<uint32_t>(left ? m + n : n));
  array is_seq = logical_and(greater_equal(order, first_seq, s), less(order, end_seq, s), s);
  array seq_before = cumsum(astype(is_seq, Dtype::uint32, s), 0, false, false, s);
  // Back to merged order, then the values' part.
  array by_input = put_along_axis(zeros({n + m}, Dtype::uint32, s), order, seq_before, 0, s);
  return reshape(slice_axis(by_input, 0, left ? 0 : n, m, s), values.shape(), s);
}

UniqueResult unique(const array& a, int size, const std::optional<array>& fill_value, SD s) {
  if (size < 0) throw std::invalid_argument("[unique] Received negative size " + std::to_string(size) + ".");
  if (fill_value && fill_value->size() != 1) {
    throw std::invalid_argument("[unique] Fill value must have one element, but got shape " +
                                shape_to_string(fill_value->shape()) + ".");
  }
  const ShapeElem n = a.size();
  if (n == 0 && size > 0 && !fill_value) {
    throw std::invalid_argument("[unique] A fill value is required for an empty input with a non-zero size.");
  }
  const Shape out_shape{size};
  if (n == 0) {
    array fill = size > 0 ? astype(reshape(*fill_value, {}, s), a.dtype(), s) : zeros({}, a.dtype(), s);
    return {full(out_shape, fill, a.dtype(), s), zeros(out_shape, Dtype::uint32, s),
            zeros(a.shape(), Dtype::uint32, s), zeros(out_shape, Dtype::int32, s)};
  }
  array flat = reshape(a, {-1}, s);
  array order = argsort(flat, 0, s);
  array sorted = take(flat, order, 0, s);
  // A group starts where the value differs from the one before: NaN != NaN,
  // so every NaN is its own group (as MLX), and -0.0 joins 0.0.
  array differs = not_equal(slice_axis(sorted, 0, 1, n - 1, s), slice_axis(sorted, 0, 0, n - 1, s), s);
  array starts_group = concatenate({ones({1}, Dtype::bool_, s), differs}, 0, s);
  array group = subtract(cumsum(astype(starts_group, Dtype::int32, s), 0, false, true, s), array(1), s);
  // Group sizes; groups past `size` fall outside and are dropped (a scatter
  // into no slots at all is refused, so size 0 skips it).
  array counts = zeros(out_shape, Dtype::int32, s);
  if (size > 0) counts = scatter_add_along_axis(counts, group, ones({n}, Dtype::int32, s), 0, s);
  // Each slot's first position in sorted order; padding slots point at 0,
  // so they repeat the first unique element and its index.
  array present = greater(counts, array(0), s);
  array first = where(present, cumsum(counts, 0, false, false, s), array(0), s);
  array values = take(sorted, first, 0, s);
  if (fill_value) values = where(present, values, astype(reshape(*fill_value, {}, s), a.dtype(), s), s);
  array index = take(order, first, 0, s);
  // Elements of dropped groups point at the last slot.
  array slot = astype(minimum(group, array(std::max(size - 1, 0)), s), Dtype::uint32, s);
  array inverse = put_along_axis(zeros({n}, Dtype::uint32, s), order, slot, 0, s);
  return {values, index, reshape(inverse, a.shape(), s), counts};
}

namespace random {

array permutation(int n, const std::optional<array>& key, SD s) {
  // Sorting independent random words gives every order the same chance
  // (ties, rare, keep their order). As MLX: 32-bit words, uint32 result.
  return argsort(bits({n}, 4, key, s), 0, s);
}

array permutation(const array& x, int axis, const std::optional<array>& key, SD s) {
  if (x.ndim() == 0) throw std::out_of_range("[permutation] Cannot permute a 0-d array: it has no axis.");
  const int ax = normalize_axis(axis, x.ndim(), "permutation");
  return take(x, permutation(static_cast<int>(x.shape(ax)), key, s), ax, s);
}

}  // namespace random

}  // namespace alloy

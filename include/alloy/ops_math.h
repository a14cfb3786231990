// MLX's small math, dtype utilities, scans/counts, windows and views that
// alloy/ops.h does not declare. Most are composites of the ops there.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "alloy/ops.h"

namespace alloy {

// ---- elementwise
array degrees(const array& a, SD s = {});  // integers compute in float32
array radians(const array& a, SD s = {});
array trunc(const array& a, SD s = {});     // towards zero; integers and bool unchanged
array positive(const array& a, SD s = {});  // unary plus
array logical_xor(const array& a, const array& b, SD s = {});
// {a // b, a % b}.
std::vector<array> divmod(const array& a, const array& b, SD s = {});
array isposinf(const array& a, SD s = {});
array isneginf(const array& a, SD s = {});
// NaN -> nan, +inf -> posinf (default: the dtype's max), -inf -> neginf
// (default: the dtype's lowest). Integers and bool pass through.
array nan_to_num(const array& a, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt, SD s = {});

// ---- dtype utilities
// Whether promoting `from` with `to` gives `to` back (MLX's rule).
bool can_cast(Dtype from, Dtype to);
// Promotion of all the dtypes; throws std::invalid_argument when empty.
Dtype result_type(const std::vector<Dtype>& dtypes);

// ---- scans and counts
array logcumsumexp(const array& a, int axis, bool reverse = false, bool inclusive = true, SD s = {});
array logcumsumexp(const array& a, bool reverse = false, bool inclusive = true, SD s = {});  // flattened
array count_nonzero(const array& a, const Axes& axes, bool keepdims = false, SD s = {});
array count_nonzero(const array& a, bool keepdims = false, SD s = {});
std::pair<array, array> minmax(const array& a, const Axes& axes, bool keepdims = false, SD s = {});
std::pair<array, array> minmax(const array& a, bool keepdims = false, SD s = {});

// ---- windows (float32, symmetric; empty for M < 1)
array hamming(int M, SD s = {});
array hanning(int M, SD s = {});
array bartlett(int M, SD s = {});
array blackman(int M, SD s = {});

// ---- views
// The same bytes as another dtype; the last axis grows or shrinks by the
// ratio of the item sizes.
array view(const array& a, Dtype dtype, SD s = {});
// A strided view of `a`'s elements in row-major order, starting `offset`
// elements in. Nothing is checked against the data's extent (as MLX).
array as_strided(const array& a, Shape shape, Strides strides, size_t offset = 0, SD s = {});

}  // namespace alloy

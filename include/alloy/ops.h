// Ops: MLX's names and semantics. Each validates its arguments, infers the
// output shape and dtype, and builds a graph node; nothing computes here.
#pragma once

#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy {

using SD = StreamOrDevice;

// ---- creation
array zeros(const Shape& shape, Dtype dtype = float32, SD s = {});
array ones(const Shape& shape, Dtype dtype = float32, SD s = {});
array full(const Shape& shape, const array& value, std::optional<Dtype> dtype = std::nullopt, SD s = {});
array zeros_like(const array& a, SD s = {});
array ones_like(const array& a, SD s = {});
array full_like(const array& a, const array& value, SD s = {});
array arange(double start, double stop, double step, Dtype dtype, SD s = {});
array arange(double start, double stop, double step = 1.0, SD s = {});  // int32 when all are integers
array arange(double stop, SD s = {});
array linspace(double start, double stop, int num = 50, Dtype dtype = float32, SD s = {});
// endpoint false: num points spaced so that stop would be the next (MLX's and numpy's endpoint).
array linspace(double start, double stop, int num, bool endpoint, Dtype dtype = float32, SD s = {});
array eye(int n, int m = -1, int k = 0, Dtype dtype = float32, SD s = {});
array identity(int n, Dtype dtype = float32, SD s = {});

// ---- type and layout
array astype(const array& a, Dtype dtype, SD s = {});
array contiguous(const array& a, bool allow_col_major = false, SD s = {});
array copy(const array& a, SD s = {});
array stop_gradient(const array& a, SD s = {});

// ---- unary
#define ALLOY_UNARY_OPS(X)                                                                      \
  X(abs) X(negative) X(sign) X(exp) X(expm1) X(log) X(log1p) X(log2) X(log10) X(sin) X(cos)    \
  X(tan) X(arcsin) X(arccos) X(arctan) X(sinh) X(cosh) X(tanh) X(arcsinh) X(arccosh)          \
  X(arctanh) X(sqrt) X(rsqrt) X(square) X(reciprocal) X(floor) X(ceil) X(sigmoid) X(erf)       \
  X(erfinv) X(logical_not) X(isnan) X(isinf) X(isfinite) X(bitwise_invert) X(real) X(imag)     \
  X(conjugate)
#define ALLOY_DECLARE_UNARY(name) array name(const array& a, SD s = {});
ALLOY_UNARY_OPS(ALLOY_DECLARE_UNARY)
#undef ALLOY_DECLARE_UNARY
array round(const array& a, int decimals = 0, SD s = {});

// ---- binary, with broadcasting
#define ALLOY_BINARY_OPS(X)                                                                     \
  X(add) X(subtract) X(multiply) X(divide) X(floor_divide) X(remainder) X(power) X(maximum)    \
  X(minimum) X(equal) X(not_equal) X(less) X(less_equal) X(greater) X(greater_equal)          \
  X(logical_and) X(logical_or) X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(left_shift)      \
  X(right_shift) X(arctan2) X(logaddexp)
#define ALLOY_DECLARE_BINARY(name) array name(const array& a, const array& b, SD s = {});
ALLOY_BINARY_OPS(ALLOY_DECLARE_BINARY)
#undef ALLOY_DECLARE_BINARY

array operator+(const array& a, const array& b);
array operator-(const array& a, const array& b);
array operator*(const array& a, const array& b);
array operator/(const array& a, const array& b);
array operator-(const array& a);
array operator<(const array& a, const array& b);
array operator<=(const array& a, const array& b);
array operator>(const array& a, const array& b);
array operator>=(const array& a, const array& b);
array operator&&(const array& a, const array& b);
array operator||(const array& a, const array& b);
array operator!(const array& a);
template <typename T>
array operator+(const array& a, T b) { return a + array(b, a.dtype()); }
template <typename T>
array operator*(const array& a, T b) { return a * array(b, a.dtype()); }
template <typename T>
array operator-(const array& a, T b) { return a - array(b, a.dtype()); }
template <typename T>
array operator/(const array& a, T b) { return a / array(b, a.dtype()); }

array where(const array& condition, const array& x, const array& y, SD s = {});
array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max, SD s = {});

bool allclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false, SD s = {});
array isclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false, SD s = {});
bool array_equal(const array& a, const array& b, bool equal_nan = false, SD s = {});

// ---- reductions (axes may be negative; empty optional = all axes)
using Axes = std::vector<int>;
#define ALLOY_REDUCTION_OPS(X) X(sum) X(mean) X(prod) X(max) X(min) X(all) X(any) X(logsumexp)
#define ALLOY_DECLARE_REDUCTION(name)                                        \
  array name(const array& a, const Axes& axes, bool keepdims = false, SD s = {}); \
  array name(const array& a, bool keepdims = false, SD s = {});
ALLOY_REDUCTION_OPS(ALLOY_DECLARE_REDUCTION)
#undef ALLOY_DECLARE_REDUCTION
array var(const array& a, const Axes& axes, bool keepdims = false, int ddof = 0, SD s = {});
array var(const array& a, bool keepdims = false, int ddof = 0, SD s = {});
array std(const array& a, const Axes& axes, bool keepdims = false, int ddof = 0, SD s = {});
array std(const array& a, bool keepdims = false, int ddof = 0, SD s = {});
array argmax(const array& a, int axis, bool keepdims = false, SD s = {});
array argmax(const array& a, bool keepdims = false, SD s = {});
array argmin(const array& a, int axis, bool keepdims = false, SD s = {});
array argmin(const array& a, bool keepdims = false, SD s = {});
array softmax(const array& a, const Axes& axes, bool precise = false, SD s = {});
array softmax(const array& a, bool precise = false, SD s = {});
array cumsum(const array& a, int axis, bool reverse = false, bool inclusive = true, SD s = {});
array cumsum(const array& a, bool reverse = false, bool inclusive = true, SD s = {});  // flattened
array cumprod(const array& a, int axis, bool reverse = false, bool inclusive = true, SD s = {});
array cummax(const array& a, int axis, bool reverse = false, bool inclusive = true, SD s = {});
array cummin(const array& a, int axis, bool reverse = false, bool inclusive = true, SD s = {});

// ---- shape
array reshape(const array& a, Shape shape, SD s = {});  // one -1 allowed
array flatten(const array& a, int start_axis = 0, int end_axis = -1, SD s = {});
array transpose(const array& a, std::vector<int> axes, SD s = {});
array transpose(const array& a, SD s = {});
array swapaxes(const array& a, int axis1, int axis2, SD s = {});
array moveaxis(const array& a, int source, int destination, SD s = {});
array expand_dims(const array& a, const std::vector<int>& axes, SD s = {});
array expand_dims(const array& a, int axis, SD s = {});
array squeeze(const array& a, const std::vector<int>& axes, SD s = {});
array squeeze(const array& a, SD s = {});
array broadcast_to(const array& a, const Shape& shape, SD s = {});
std::vector<array> broadcast_arrays(const std::vector<array>& inputs, SD s = {});
Shape broadcast_shapes(const Shape& a, const Shape& b);
array concatenate(const std::vector<array>& arrays, int axis = 0, SD s = {});
array concatenate_flat(const std::vector<array>& arrays, SD s = {});  // axis=None
array stack(const std::vector<array>& arrays, int axis = 0, SD s = {});
std::vector<array> split(const array& a, int num_splits, int axis = 0, SD s = {});
std::vector<array> split(const array& a, const Shape& indices, int axis = 0, SD s = {});
array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value,
          const std::string& mode = "constant", SD s = {});
array tile(const array& a, std::vector<int> reps, SD s = {});
array repeat(const array& a, int repeats, int axis, SD s = {});
array repeat(const array& a, int repeats, SD s = {});  // flattened

// ---- slicing and indexing
// Basic slicing: start/stop/step per axis, already normalised by the caller
// (stop may be -1 - size for a negative step running past the start).
array slice(const array& a, Shape start, Shape stop, Shape strides, SD s = {});
array slice_update(const array& dst, const array& update, Shape start, Shape stop, Shape strides, SD s = {});
array take(const array& a, const array& indices, int axis, SD s = {});
array take(const array& a, const array& indices, SD s = {});  // flattened
array take_along_axis(const array& a, const array& indices, int axis, SD s = {});
array put_along_axis(const array& a, const array& indices, const array& values, int axis, SD s = {});
// Advanced indexing: `indices` index axes `axes` of `a`; they broadcast together.
// slice_sizes: per axis of `a`, 1 for indexed axes, the full size otherwise.
array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, SD s = {});
enum class ScatterReduce { none, add, prod, max, min };
array scatter(const array& a, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes, ScatterReduce reduce = ScatterReduce::none, SD s = {});

// ---- linear algebra
array matmul(const array& a, const array& b, SD s = {});

}  // namespace alloy

// Reductions: sum prod max min all any (Reduce primitive), argmax/argmin
// (ArgReduce), softmax and logsumexp over trailing axes (Softmax, LogSumExp),
// var over trailing or leading axes (Variance), and the composites mean, std
// and var, softmax, logsumexp over other axes.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "ops/op_utils.h"
#include "primitives/reduce.h"
#include "primitives/softmax.h"

namespace alloy {

namespace {

Axes all_axes(const array& a) {
  Axes ax(a.ndim());
  std::iota(ax.begin(), ax.end(), 0);
  return ax;
}

Shape reduced_shape(const Shape& shape, const std::vector<int>& axes, bool keepdims) {
  Shape out;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    bool red = std::binary_search(axes.begin(), axes.end(), d);
    if (!red) out.push_back(shape[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

// Number of elements each output of a reduction over `axes` combines.
double reduced_count(const array& a, const std::vector<int>& axes) {
  double n = 1;
  for (int ax : axes) n *= a.shape()[ax];
  return n;
}

// Whether `axes` (sorted) are the last axes.size() axes of an ndim array.
bool are_trailing_axes(const std::vector<int>& axes, int ndim) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != ndim - static_cast<int>(axes.size() - i)) return false;
  }
  return true;
}

// `x` as a matrix: one row per position of its leading axes, holding the
// `trailing` last axes.
array flatten_to_rows(const array& x, size_t trailing, Stream s) {
  ShapeElem outer = 1, inner = 1;
  for (int d = 0; d < x.ndim(); ++d) (d < x.ndim() - static_cast<int>(trailing) ? outer : inner) *= x.shape()[d];
  return reshape(x, {outer, inner}, s);
}

// Whether `axes` (sorted) are the first axes.size() axes.
bool are_leading_axes(const std::vector<int>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != static_cast<int>(i)) return false;
  }
  return true;
}

// `x` as a matrix: one row per position of its `leading` first axes.
array flatten_to_columns(const array& x, size_t leading, Stream s) {
  ShapeElem outer = 1, inner = 1;
  for (int d = 0; d < x.ndim(); ++d) (d < static_cast<int>(leading) ? outer : inner) *= x.shape()[d];
  return reshape(x, {outer, inner}, s);
}

array reduce_node(ReduceOp op, const char* name, const array& a, const Axes& axes_in, bool keepdims, SD s) {
  std::vector<int> axes = normalize_axes(axes_in, a.ndim(), name);
  if (!(reduce_info(op).kinds & math::kind_bit(a.dtype()))) {
    throw std::invalid_argument(std::string("[") + name + "] not supported for inputs of dtype " +
                                dtype_name(a.dtype()) + ".");
  }
  if (op == ReduceOp::Max || op == ReduceOp::Min) {
    // No identity: an empty reduced axis has no answer. An empty output
    // (another axis empty) is fine, as in MLX.
    for (int axis : axes) {
      if (a.shape()[axis] == 0) {
        throw std::invalid_argument(std::string("[") + name + "] cannot reduce over axis " + std::to_string(axis) +
                                    " of size 0 (shape " + shape_to_string(a.shape()) +
                                    "): the operation has no identity.");
      }
    }
  }
  Dtype out = reduce_out_dtype(op, a.dtype());
  // Nothing reduced (a 0-d input, or axis=[]): MLX hands the input back as it
  // is, without sum's and prod's promotion (a bool stays bool); all and any
  // still answer in bool.
  if (axes.empty()) return (op == ReduceOp::And || op == ReduceOp::Or) ? astype(a, out, s) : a;
  return array(reduced_shape(a.shape(), axes, keepdims), out, std::make_shared<Reduce>(to_stream(s), op, axes, keepdims),
               {a});
}

}  // namespace

#define ALLOY_REDUCE_OP(fn, code)                                              \
  array fn(const array& a, const Axes& axes, bool keepdims, SD s) {            \
    return reduce_node(ReduceOp::code, #fn, a, axes, keepdims, s);             \
  }                                                                            \
  array fn(const array& a, bool keepdims, SD s) { return fn(a, all_axes(a), keepdims, s); }
ALLOY_REDUCE_OP(sum, Sum)
ALLOY_REDUCE_OP(prod, Prod)
ALLOY_REDUCE_OP(max, Max)
ALLOY_REDUCE_OP(min, Min)
ALLOY_REDUCE_OP(all, And)
ALLOY_REDUCE_OP(any, Or)
#undef ALLOY_REDUCE_OP

// Divides by a count: exact division in the dtype, except 16-bit floats,
// where the count itself may not be representable (65504 is their maximum).
static array divide_by_count(const array& x, double n, SD s) {
  Dtype d = x.dtype();
  if (d == Dtype::float16 || d == Dtype::bfloat16) return multiply(x, array(1.0 / n, d), s);
  return divide(x, array(n, is_complex(d) ? Dtype::float32 : d), s);
}

array mean(const array& a, const Axes& axes_in, bool keepdims, SD s) {
  std::vector<int> axes = normalize_axes(axes_in, a.ndim(), "mean");
  Dtype d = to_float_dtype(a.dtype());
  return divide_by_count(sum(astype(a, d, s), axes, keepdims, s), reduced_count(a, axes), s);
}
array mean(const array& a, bool keepdims, SD s) { return mean(a, all_axes(a), keepdims, s); }

array var(const array& a, const Axes& axes_in, bool keepdims, int ddof, SD s) {
  std::vector<int> axes = normalize_axes(axes_in, a.ndim(), "var");
  Dtype d = to_float_dtype(a.dtype());
  array x = astype(a, d, s);
  // Every element into one value: one row, whichever axes.
  const bool all = reduced_count(x, axes) == static_cast<double>(x.size());
  const bool rows = all || are_trailing_axes(axes, x.ndim()), columns = !rows && are_leading_axes(axes);
  if (is_floating(d) && !axes.empty() && x.size() > 0 && (rows || columns)) {
    // One node, one pass over the input (primitives/reduce.h): rows of the
    // trailing axes, or columns of the leading ones.
    Stream st = to_stream(s);
    array m = rows ? flatten_to_rows(x, all ? x.ndim() : axes.size(), st) : flatten_to_columns(x, axes.size(), st);
    const int axis = rows ? 1 : 0;
    Shape out_shape = m.shape();
    out_shape[axis] = 1;
    array v(out_shape, d, std::make_shared<Variance>(st, axis, ddof), {m});
    return reshape(v, reduced_shape(x.shape(), axes, keepdims), st);
  }
  // Two passes (deviations from the mean), which keeps float32 accurate
  // where E[x^2] - E[x]^2 would cancel.
  array dev = subtract(x, mean(x, axes, true, s), s);
  array sq = is_complex(d) ? square(abs(dev, s), s) : square(dev, s);
  double n = std::max(reduced_count(a, axes) - ddof, 0.0);
  return divide_by_count(sum(sq, axes, keepdims, s), n, s);
}
array var(const array& a, bool keepdims, int ddof, SD s) { return var(a, all_axes(a), keepdims, ddof, s); }

array std(const array& a, const Axes& axes, bool keepdims, int ddof, SD s) {
  return sqrt(var(a, axes, keepdims, ddof, s), s);
}
array std(const array& a, bool keepdims, int ddof, SD s) { return std(a, all_axes(a), keepdims, ddof, s); }

array logsumexp(const array& a, const Axes& axes_in, bool keepdims, SD s) {
  // Emptiness first, as MLX checks it (ValueError even where an axis is out of range).
  if (a.size() == 0) {
    throw std::invalid_argument("[logsumexp] cannot reduce a zero-size array (shape " + shape_to_string(a.shape()) +
                                ").");
  }
  std::vector<int> axes = normalize_axes(axes_in, a.ndim(), "logsumexp");
  array x = astype(a, to_float_dtype(a.dtype()), s);
  if (axes.empty()) return x;
  if (is_floating(x.dtype()) && are_trailing_axes(axes, x.ndim())) {
    // One node over rows of the trailing axes (primitives/softmax.h).
    Stream st = to_stream(s);
    array rows = flatten_to_rows(x, axes.size(), st);
    array lse({rows.shape()[0], 1}, x.dtype(), std::make_shared<LogSumExp>(st), {rows});
    return reshape(lse, reduced_shape(x.shape(), axes, keepdims), st);
  }
  // Shift by the max for range; an infinite max would make inf - inf, so the
  // shift is 0 there (the sum of exps then gives the right inf or 0).
  array m = stop_gradient(max(x, axes, true, s), s);
  array shift = where(isinf(m, s), array(0.0f, x.dtype()), m, s);
  array out = log(sum(exp(subtract(x, shift, s), s), axes, keepdims, s), s);
  return add(out, keepdims ? shift : reshape(shift, out.shape(), s), s);
}
array logsumexp(const array& a, bool keepdims, SD s) { return logsumexp(a, all_axes(a), keepdims, s); }

array softmax(const array& a, const Axes& axes_in, bool precise, SD s) {
  // Nothing to normalise: an empty input comes back as it is, whatever the
  // axes (attention over an empty window gets here); over no axes each
  // element is its own distribution, 1, in the input's dtype. Both as MLX.
  if (a.size() == 0) return a;
  std::vector<int> axes = normalize_axes(axes_in, a.ndim(), "softmax");
  if (axes.empty()) return ones_like(a, s);
  Dtype d = to_float_dtype(a.dtype());
  array x = astype(a, d, s);
  if (is_floating(d) && are_trailing_axes(axes, x.ndim())) {
    // One node over rows of the trailing axes (primitives/softmax.h); it
    // computes in float32 and rounds once, as `precise` asks, either way.
    Stream st = to_stream(s);
    array rows = flatten_to_rows(x, axes.size(), st);
    array y(rows.shape(), d, std::make_shared<Softmax>(st), {rows});
    return reshape(y, x.shape(), st);
  }
  // precise: 16-bit inputs compute in float32 and round once at the end.
  if (precise && (d == Dtype::float16 || d == Dtype::bfloat16)) x = astype(x, Dtype::float32, s);
  array m = stop_gradient(max(x, axes, true, s), s);
  array e = exp(subtract(x, m, s), s);
  return astype(divide(e, sum(e, axes, true, s), s), d, s);
}
array softmax(const array& a, bool precise, SD s) { return softmax(a, all_axes(a), precise, s); }

namespace {
array arg_reduce_node(ArgReduceOp op, const char* name, const array& a, int axis_in, bool keepdims, SD s) {
  // Any empty input, as MLX (checked before the axis, as MLX): an empty
  // output has no position to name either.
  if (a.size() == 0) {
    throw std::invalid_argument(std::string("[") + name + "] cannot reduce a zero-size array (shape " +
                                shape_to_string(a.shape()) + ", axis " + std::to_string(axis_in) + ").");
  }
  int axis = normalize_axis(axis_in, a.ndim(), name);
  return array(reduced_shape(a.shape(), {axis}, keepdims), Dtype::uint32,
               std::make_shared<ArgReduce>(to_stream(s), op, axis, keepdims), {a});
}
array flat_arg_reduce(ArgReduceOp op, const char* name, const array& a, bool keepdims, SD s) {
  if (a.size() == 0) {
    throw std::invalid_argument(std::string("[") + name + "] cannot reduce a zero-size array (shape " +
                                shape_to_string(a.shape()) + ").");
  }
  array r = arg_reduce_node(op, name, reshape(a, {-1}, s), 0, false, s);
  return keepdims ? reshape(r, Shape(a.ndim(), 1), s) : r;
}
}  // namespace

array argmax(const array& a, int axis, bool keepdims, SD s) {
  return arg_reduce_node(ArgReduceOp::ArgMax, "argmax", a, axis, keepdims, s);
}
array argmax(const array& a, bool keepdims, SD s) {
  return flat_arg_reduce(ArgReduceOp::ArgMax, "argmax", a, keepdims, s);
}
array argmin(const array& a, int axis, bool keepdims, SD s) {
  return arg_reduce_node(ArgReduceOp::ArgMin, "argmin", a, axis, keepdims, s);
}
array argmin(const array& a, bool keepdims, SD s) {
  return flat_arg_reduce(ArgReduceOp::ArgMin, "argmin", a, keepdims, s);
}

}  // namespace alloy

// Shape ops: reshape, transpose and friends, concatenate/stack/split, pad,
// tile, repeat. Most are compositions of Reshape, Transpose, Broadcast,
// Concatenate and slicing.
#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "alloy/ops.h"
#include "ops/op_utils.h"
#include "primitives/shape.h"

namespace alloy {

array reshape(const array& a, Shape shape, SD s) {
  int infer = -1;
  size_t known = 1;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("[reshape] only one dimension can be -1, got " + shape_to_string(shape) + ".");
      infer = i;
    } else if (shape[i] < 0) {
      throw std::invalid_argument("[reshape] negative dimension in shape " + shape_to_string(shape) + ".");
    } else {
      known *= static_cast<size_t>(shape[i]);
    }
  }
  if (infer >= 0) {
    if (known == 0 || a.size() % known != 0) {
      throw std::invalid_argument("[reshape] cannot reshape an array of size " + std::to_string(a.size()) +
                                  " into shape " + shape_to_string(shape) + ".");
    }
    shape[infer] = static_cast<ShapeElem>(a.size() / known);
    known = a.size();
  }
  if (known != a.size()) {
    throw std::invalid_argument("[reshape] cannot reshape an array of size " + std::to_string(a.size()) +
                                " into shape " + shape_to_string(shape) + ".");
  }
  if (shape == a.shape()) return a;
  Shape out_shape = shape;
  return array(std::move(out_shape), a.dtype(), std::make_shared<Reshape>(to_stream(s), std::move(shape)), {a});
}

array flatten(const array& a, int start_axis, int end_axis, SD s) {
  if (a.ndim() == 0) return reshape(a, {1}, s);
  // MLX's rule: negative axes count from the end, then the start is raised
  // to 0 and the end lowered to the last axis (out-of-range axes clamp).
  const int nd = a.ndim();
  const int st = std::max(0, start_axis < 0 ? start_axis + nd : start_axis);
  const int en = std::min(nd - 1, end_axis < 0 ? end_axis + nd : end_axis);
  if (st > en) {
    throw std::invalid_argument("[flatten] start_axis " + std::to_string(start_axis) + " is after end_axis " +
                                std::to_string(end_axis) + ".");
  }
  Shape shape(a.shape().begin(), a.shape().begin() + st);
  ShapeElem merged = 1;
  for (int i = st; i <= en; ++i) merged *= a.shape(i);
  shape.push_back(merged);
  shape.insert(shape.end(), a.shape().begin() + en + 1, a.shape().end());
  return reshape(a, shape, s);
}

array transpose(const array& a, std::vector<int> axes, SD s) {
  if (static_cast<int>(axes.size()) != a.ndim()) {
    throw std::invalid_argument("[transpose] got " + std::to_string(axes.size()) + " axes for an array with " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  std::vector<int> seen(a.ndim(), 0);
  for (auto& ax : axes) {
    ax = normalize_axis(ax, a.ndim(), "transpose");
    if (seen[ax]++) throw std::invalid_argument("[transpose] repeated axis " + std::to_string(ax) + ".");
  }
  bool identity = true;
  for (int i = 0; i < a.ndim(); ++i) identity = identity && axes[i] == i;
  if (identity) return a;
  Shape shape;
  for (int ax : axes) shape.push_back(a.shape(ax));
  return array(std::move(shape), a.dtype(), std::make_shared<Transpose>(to_stream(s), std::move(axes)), {a});
}

array transpose(const array& a, SD s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return transpose(a, std::move(axes), s);
}

array swapaxes(const array& a, int axis1, int axis2, SD s) {
  int x = normalize_axis(axis1, a.ndim(), "swapaxes");
  int y = normalize_axis(axis2, a.ndim(), "swapaxes");
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[x], axes[y]);
  return transpose(a, std::move(axes), s);
}

array moveaxis(const array& a, int source, int destination, SD s) {
  int src = normalize_axis(source, a.ndim(), "moveaxis");
  int dst = normalize_axis(destination, a.ndim(), "moveaxis");
  std::vector<int> axes;
  for (int i = 0; i < a.ndim(); ++i) {
    if (i != src) axes.push_back(i);
  }
  axes.insert(axes.begin() + dst, src);
  return transpose(a, std::move(axes), s);
}

array expand_dims(const array& a, const std::vector<int>& axes, SD s) {
  const int out_nd = a.ndim() + static_cast<int>(axes.size());
  std::vector<int> norm = normalize_axes(axes, out_nd, "expand_dims");
  Shape shape;
  size_t k = 0, j = 0;
  for (int i = 0; i < out_nd; ++i) {
    if (k < norm.size() && norm[k] == i) {
      shape.push_back(1);
      ++k;
    } else {
      shape.push_back(a.shape()[j++]);
    }
  }
  return reshape(a, shape, s);
}

array expand_dims(const array& a, int axis, SD s) { return expand_dims(a, std::vector<int>{axis}, s); }

array squeeze(const array& a, const std::vector<int>& axes, SD s) {
  std::vector<int> norm = normalize_axes(axes, a.ndim(), "squeeze");
  Shape shape;
  size_t k = 0;
  for (int i = 0; i < a.ndim(); ++i) {
    if (k < norm.size() && norm[k] == i) {
      if (a.shape(i) != 1) {
        throw std::invalid_argument("[squeeze] cannot squeeze axis " + std::to_string(i) + " of size " +
                                    std::to_string(a.shape(i)) + ".");
      }
      ++k;
    } else {
      shape.push_back(a.shape(i));
    }
  }
  return reshape(a, shape, s);
}

array squeeze(const array& a, SD s) {
  std::vector<int> axes;
  for (int i = 0; i < a.ndim(); ++i) {
    if (a.shape(i) == 1) axes.push_back(i);
  }
  return squeeze(a, axes, s);
}

array concatenate(const std::vector<array>& arrays, int axis, SD s) {
  if (arrays.empty()) throw std::invalid_argument("[concatenate] no arrays to concatenate.");
  const array& first = arrays[0];
  if (first.ndim() == 0) throw std::invalid_argument("[concatenate] zero-dimensional arrays cannot be concatenated.");
  int ax = normalize_axis(axis, first.ndim(), "concatenate");
  Shape shape = first.shape();
  shape[ax] = 0;
  Dtype dtype = first.dtype();
  for (const array& a : arrays) {
    bool ok = a.ndim() == first.ndim();
    for (int i = 0; ok && i < a.ndim(); ++i) ok = i == ax || a.shape(i) == first.shape(i);
    if (!ok) {
      throw std::invalid_argument("[concatenate] all arrays must match in every dimension but axis " +
                                  std::to_string(ax) + "; got shapes " + shape_to_string(first.shape()) + " and " +
                                  shape_to_string(a.shape()) + ".");
    }
    shape[ax] += a.shape(ax);
    dtype = promote_types(dtype, a.dtype());
  }
  if (arrays.size() == 1) return astype(first, dtype, s);
  std::vector<array> inputs;
  for (const array& a : arrays) inputs.push_back(astype(a, dtype, s));
  return array(std::move(shape), dtype, std::make_shared<Concatenate>(to_stream(s), ax), std::move(inputs));
}

array concatenate_flat(const std::vector<array>& arrays, SD s) {
  std::vector<array> flat;
  for (const array& a : arrays) flat.push_back(reshape(a, {-1}, s));
  return concatenate(flat, 0, s);
}

array stack(const std::vector<array>& arrays, int axis, SD s) {
  if (arrays.empty()) throw std::invalid_argument("[stack] no arrays to stack.");
  std::vector<array> expanded;
  for (const array& a : arrays) {
    if (a.shape() != arrays[0].shape()) {
      throw std::invalid_argument("[stack] all arrays must have the same shape; got " +
                                  shape_to_string(arrays[0].shape()) + " and " + shape_to_string(a.shape()) + ".");
    }
    expanded.push_back(expand_dims(a, normalize_axis(axis, a.ndim() + 1, "stack"), s));
  }
  return concatenate(expanded, axis < 0 ? axis + arrays[0].ndim() + 1 : axis, s);
}

std::vector<array> split(const array& a, const Shape& indices, int axis, SD s) {
  int ax = normalize_axis(axis, a.ndim(), "split");
  const ShapeElem n = a.shape(ax);
  std::vector<array> out;
  ShapeElem prev = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    ShapeElem next = i < indices.size() ? indices[i] : n;
    if (next < 0) next += n;
    next = std::clamp<ShapeElem>(next, 0, n);
    ShapeElem lo = std::min(prev, n);
    ShapeElem hi = std::max(next, lo);  // numpy: a decreasing index gives an empty piece
    Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
    start[ax] = lo;
    stop[ax] = hi;
    out.push_back(slice(a, start, stop, step, s));
    prev = next;
  }
  return out;
}

std::vector<array> split(const array& a, int num_splits, int axis, SD s) {
  int ax = normalize_axis(axis, a.ndim(), "split");
  if (num_splits <= 0 || a.shape(ax) % num_splits != 0) {
    throw std::invalid_argument("[split] an axis of size " + std::to_string(a.shape(ax)) +
                                " cannot be split into " + std::to_string(num_splits) + " equal parts.");
  }
  ShapeElem part = a.shape(ax) / num_splits;
  Shape indices;
  for (int i = 1; i < num_splits; ++i) indices.push_back(i * part);
  return split(a, indices, ax, s);
}

namespace {

// Edge padding of one axis: the first/last slice repeated lo/hi times.
array pad_edge_axis(const array& a, int ax, int lo, int hi, SD s) {
  if (a.shape(ax) == 0 && (lo > 0 || hi > 0)) {
    throw std::invalid_argument("[pad] edge padding of an empty axis " + std::to_string(ax) + ".");
  }
  std::vector<array> parts;
  auto edge = [&](ShapeElem at, int count) {
    Shape start(a.ndim(), 0), stop = a.shape(), step(a.ndim(), 1);
    start[ax] = at;
    stop[ax] = at + 1;
    Shape shape = a.shape();
    shape[ax] = count;
    parts.push_back(broadcast_to(slice(a, start, stop, step, s), shape, s));
  };
  if (lo > 0) edge(0, lo);
  parts.push_back(a);
  if (hi > 0) edge(a.shape(ax) - 1, hi);
  return parts.size() == 1 ? a : concatenate(parts, ax, s);
}

// numpy's (and MLX's) mirror modes along one axis, as a gather: 'reflect'
// mirrors about the edge elements (d c b | a b c d | c b a), 'symmetric'
// repeats them (b a | a b c d | d c); pads wider than the axis keep
// mirroring.
array pad_mirror_axis(const array& a, int ax, int lo, int hi, bool symmetric, SD s) {
  if (lo == 0 && hi == 0) return a;
  const int64_t n = a.shape(ax);
  if (n == 0) {
    throw std::invalid_argument("[pad] cannot pad the empty axis " + std::to_string(ax) + " in mode '" +
                                (symmetric ? "symmetric" : "reflect") + "'.");
  }
  const int64_t period = symmetric ? 2 * n : std::max<int64_t>(2 * (n - 1), 1);
  std::vector<int32_t> index(static_cast<size_t>(n + lo + hi));
  for (int64_t i = 0; i < static_cast<int64_t>(index.size()); ++i) {
    int64_t j = ((i - lo) % period + period) % period;
    if (j >= n) j = symmetric ? period - 1 - j : period - j;
    index[static_cast<size_t>(i)] = static_cast<int32_t>(j);
  }
  array positions(index, {static_cast<ShapeElem>(index.size())}, Dtype::int32);
  return take(a, positions, ax, s);
}

}  // namespace

array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value,
          const std::string& mode, SD s) {
  std::vector<std::pair<int, int>> widths = pad_width;
  // numpy's short forms: one (lo, hi) pair for every axis.
  if (widths.size() == 1 && a.ndim() > 1) widths.assign(a.ndim(), widths[0]);
  if (static_cast<int>(widths.size()) != a.ndim()) {
    throw std::invalid_argument("[pad] got " + std::to_string(widths.size()) + " (low, high) pairs for an array with " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  for (auto [lo, hi] : widths) {
    if (lo < 0 || hi < 0) {
      throw std::invalid_argument("[pad] pad widths must be non-negative, got (" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + ").");
    }
  }
  if (mode == "constant") {
    Shape shape = a.shape();
    Shape start(a.ndim()), stop(a.ndim()), step(a.ndim(), 1);
    for (int i = 0; i < a.ndim(); ++i) {
      shape[i] += widths[i].first + widths[i].second;
      start[i] = widths[i].first;
      stop[i] = widths[i].first + a.shape(i);
    }
    array base = full(shape, astype(pad_value, a.dtype(), s), a.dtype(), s);
    return slice_update(base, a, start, stop, step, s);
  }
  if (mode == "edge") {
    array out = a;
    for (int i = 0; i < a.ndim(); ++i) out = pad_edge_axis(out, i, widths[i].first, widths[i].second, s);
    return out;
  }
  if (mode == "reflect" || mode == "symmetric") {
    array out = a;
    for (int i = 0; i < a.ndim(); ++i) {
      out = pad_mirror_axis(out, i, widths[i].first, widths[i].second, mode == "symmetric", s);
    }
    return out;
  }
  throw std::invalid_argument("[pad] unsupported mode '" + mode + "' (use 'constant', 'edge', 'reflect' or 'symmetric').");
}

array tile(const array& a, std::vector<int> reps, SD s) {
  for (int r : reps) {
    if (r < 0) throw std::invalid_argument("[tile] repetitions must be non-negative, got " + std::to_string(r) + ".");
  }
  const int nd = std::max<int>(a.ndim(), static_cast<int>(reps.size()));
  reps.insert(reps.begin(), nd - reps.size(), 1);
  Shape in_shape = a.shape();
  in_shape.insert(in_shape.begin(), nd - in_shape.size(), 1);
  // (n0, n1, ...) -> (1, n0, 1, n1, ...) -> broadcast (r0, n0, r1, n1, ...) -> merge pairs.
  Shape expanded, broadcast, merged;
  for (int i = 0; i < nd; ++i) {
    expanded.insert(expanded.end(), {1, in_shape[i]});
    broadcast.insert(broadcast.end(), {reps[i], in_shape[i]});
    merged.push_back(reps[i] * in_shape[i]);
  }
  return reshape(broadcast_to(reshape(a, expanded, s), broadcast, s), merged, s);
}

array repeat(const array& a, int repeats, int axis, SD s) {
  if (repeats < 0) {
    throw std::invalid_argument("[repeat] repeats must be non-negative, got " + std::to_string(repeats) + ".");
  }
  int ax = normalize_axis(axis, a.ndim(), "repeat");
  // (.., n, ..) -> (.., n, 1, ..) -> broadcast (.., n, repeats, ..) -> (.., n*repeats, ..).
  array e = expand_dims(a, ax + 1, s);
  Shape b = e.shape();
  b[ax + 1] = repeats;
  Shape merged = a.shape();
  merged[ax] *= repeats;
  return reshape(broadcast_to(e, b, s), merged, s);
}

array repeat(const array& a, int repeats, SD s) { return repeat(reshape(a, {-1}, s), repeats, 0, s); }

}  // namespace alloy

// Triangles and diagonals as composites (masks, slices and reshapes).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "alloy/ops_shape.h"
#include "op_utils.h"

namespace alloy {

namespace {

// (n, m) booleans, true where column <= row + k.
array tri_mask(ShapeElem n, ShapeElem m, int k, SD s) {
  array rows = reshape(arange(0, n, 1, Dtype::int32, s), {n, 1}, s);
  array cols = reshape(arange(0, m, 1, Dtype::int32, s), {1, m}, s);
  return less_equal(cols, add(rows, array(k, Dtype::int32), s), s);
}

array keep_where(const array& mask, const array& x, SD s) {
  return where(mask, x, zeros({}, x.dtype(), s), s);
}

}  // namespace

array tri(int n, std::optional<int> m, int k, Dtype dtype, SD s) {
  // Negative sizes give empty matrices (MLX's behaviour).
  const ShapeElem rows = std::max(n, 0);
  const ShapeElem cols = std::max(m.value_or(n), 0);
  return astype(tri_mask(rows, cols, k, s), dtype, s);
}

array tril(const array& x, int k, SD s) {
  if (x.ndim() < 2) throw std::invalid_argument("[tril] array must be at least 2-D");
  return keep_where(tri_mask(x.shape(-2), x.shape(-1), k, s), x, s);
}

array triu(const array& x, int k, SD s) {
  if (x.ndim() < 2) throw std::invalid_argument("[triu] array must be at least 2-D");
  // column >= row + k is the complement of column <= row + k - 1.
  return keep_where(logical_not(tri_mask(x.shape(-2), x.shape(-1), k - 1, s), s), x, s);
}

array diagonal(const array& a, int offset, int axis1, int axis2, SD s) {
  if (a.ndim() < 2) {
    throw std::invalid_argument("[diagonal] Array must have at least two dimensions, but got " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  auto norm = [&](int ax, const char* name) {
    if (ax < -a.ndim() || ax >= a.ndim()) {
      throw std::out_of_range(std::string("[diagonal] Invalid ") + name + " " + std::to_string(ax) +
                              " for array with " + std::to_string(a.ndim()) + " dimensions.");
    }
    return ax < 0 ? ax + a.ndim() : ax;
  };
  const int ax1 = norm(axis1, "axis1"), ax2 = norm(axis2, "axis2");
  if (ax1 == ax2) throw std::invalid_argument("[diagonal] axis1 and axis2 cannot be the same axis");
  // Both axes to the end, (..., n, m); the diagonal is a strided walk through
  // the (len, len) block that starts at its first element.
  std::vector<int> perm;
  for (int i = 0; i < a.ndim(); ++i)
    if (i != ax1 && i != ax2) perm.push_back(i);
  perm.push_back(ax1);
  perm.push_back(ax2);
  array t = transpose(a, perm, s);
  const int nd = t.ndim();
  const int64_t n = t.shape(nd - 2), m = t.shape(nd - 1);
  const int64_t r0 = offset < 0 ? -static_cast<int64_t>(offset) : 0;
  const int64_t c0 = offset > 0 ? offset : 0;
  const ShapeElem len = static_cast<ShapeElem>(std::max<int64_t>(0, std::min(n - r0, m - c0)));
  Shape start(nd, 0), stop = t.shape(), step(nd, 1);
  start[nd - 2] = static_cast<ShapeElem>(std::min(r0, n));
  start[nd - 1] = static_cast<ShapeElem>(std::min(c0, m));
  stop[nd - 2] = start[nd - 2] + len;
  stop[nd - 1] = start[nd - 1] + len;
  array block = slice(t, start, stop, step, s);
  Shape flat(t.shape().begin(), t.shape().end() - 2);
  flat.push_back(len * len);
  array f = reshape(block, flat, s);
  Shape fstart(nd - 1, 0), fstop = f.shape(), fstep(nd - 1, 1);
  fstep[nd - 2] = len + 1;
  return slice(f, fstart, fstop, fstep, s);
}

array diag(const array& a, int k, SD s) {
  if (a.ndim() == 2) return diagonal(a, k, 0, 1, s);
  if (a.ndim() != 1) {
    throw std::invalid_argument("[diag] array must be 1-D or 2-D, got array with " + std::to_string(a.ndim()) +
                                " dimensions.");
  }
  // The (len, len) diagonal matrix, then padded out to the k-th diagonal.
  const ShapeElem len = a.shape(0);
  array square = where(tri_mask(len, len, 0, s) && !tri_mask(len, len, -1, s),
                       broadcast_to(reshape(a, {len, 1}, s), {len, len}, s), zeros({}, a.dtype(), s), s);
  const int d = k < 0 ? -k : k;
  std::vector<std::pair<int, int>> width = k >= 0 ? std::vector<std::pair<int, int>>{{0, d}, {d, 0}}
                                                  : std::vector<std::pair<int, int>>{{d, 0}, {0, d}};
  return pad(square, width, zeros({}, a.dtype(), s), "constant", s);
}

array trace(const array& a, int offset, int axis1, int axis2, std::optional<Dtype> dtype, SD s) {
  if (a.ndim() < 2) {
    throw std::invalid_argument("[trace] Array must have at least two dimensions, but got " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  array d = diagonal(a, offset, axis1, axis2, s);
  if (dtype) d = astype(d, *dtype, s);
  return sum(d, {-1}, false, s);
}

}  // namespace alloy

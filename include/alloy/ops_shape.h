// Shape and linear-algebra ops built only from other ops (composites): they
// need no primitive, run on every device and differentiate through their parts.
// Names, defaults and errors follow MLX.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alloy/ops.h"

namespace alloy {

// ---- rank and axes
array atleast_1d(const array& a, SD s = {});
array atleast_2d(const array& a, SD s = {});
array atleast_3d(const array& a, SD s = {});
array permute_dims(const array& a, std::vector<int> axes, SD s = {});
array matrix_transpose(const array& a, SD s = {});
array unflatten(const array& a, int axis, Shape shape, SD s = {});
std::vector<array> unstack(const array& a, int axis = 0, SD s = {});
// Broadcasts any number of shapes (at least one).
Shape broadcast_shapes(const std::vector<Shape>& shapes);
std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse = false, const std::string& indexing = "xy",
                            SD s = {});

// ---- reordering
array flip(const array& a, const std::vector<int>& axes, SD s = {});
array flip(const array& a, SD s = {});  // every axis
// One shift per axis (extra shifts are ignored, as in MLX).
array roll(const array& a, const Shape& shift, const std::vector<int>& axes, SD s = {});
array roll(const array& a, int shift, SD s = {});  // flattened, then the shape restored
array diff(const array& a, int n = 1, int axis = -1, SD s = {});

// ---- triangles and diagonals
array tri(int n, std::optional<int> m = std::nullopt, int k = 0, Dtype dtype = float32, SD s = {});
array tril(const array& x, int k = 0, SD s = {});
array triu(const array& x, int k = 0, SD s = {});
array diag(const array& a, int k = 0, SD s = {});
array diagonal(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1, SD s = {});
array trace(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1, std::optional<Dtype> dtype = std::nullopt,
            SD s = {});

// ---- slices with starts known only at run time (arrays of integers)
// Starts are clamped so that the slice lies inside the array.
array slice(const array& a, const array& start_indices, std::vector<int> axes, const Shape& slice_size, SD s = {});
array slice_update(const array& a, const array& update, const array& start_indices, std::vector<int> axes, SD s = {});

// ---- products
array inner(const array& a, const array& b, SD s = {});
array outer(const array& a, const array& b, SD s = {});
array kron(const array& a, const array& b, SD s = {});
array tensordot(const array& a, const array& b, int axes = 2, SD s = {});
array tensordot(const array& a, const array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b,
                SD s = {});
array addmm(const array& c, const array& a, const array& b, float alpha = 1.0f, float beta = 1.0f, SD s = {});
array vecdot(const array& a, const array& b, int axis = -1, SD s = {});
array einsum(const std::string& subscripts, const std::vector<array>& operands, SD s = {});
// The contraction order einsum uses (pairs of positions in the shrinking
// operand list) and a report of its scaling and FLOP counts.
std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands);

}  // namespace alloy

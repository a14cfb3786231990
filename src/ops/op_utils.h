// Helpers the ops share: axis normalisation and argument checks.
#pragma once

#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/ops.h"

namespace alloy {

// Normalises a possibly negative axis; throws std::out_of_range naming `op`.
int normalize_axis(int axis, int ndim, const char* op);
// Normalises and sorts; duplicates are an error.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* op);
std::string shape_to_string(const Shape& s);
// Float dtype for ops that need one (exp on integers -> float32).
Dtype to_float_dtype(Dtype d);

// put_along_axis that adds: repeated indices accumulate; indices outside the
// axis are dropped (as every scatter drops them). For derivatives.
array scatter_add_along_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s);

}  // namespace alloy

// Nested Python containers of arrays (lists, tuples, dicts), flattened to a
// list of arrays and rebuilt, for the function transformations.
#pragma once

#include <vector>

#include <nanobind/nanobind.h>

#include "alloy/array.h"

namespace nb = nanobind;

namespace alloy::py {

// Appends every array leaf of `tree` (depth first; dict values in order).
void tree_flatten(nb::handle tree, std::vector<array>& out);
// `tree` with its array leaves replaced, in order, by leaves[pos...].
nb::object tree_unflatten(nb::handle tree, const std::vector<array>& leaves, size_t& pos);
// Converts an output that must be an array or a list/tuple of arrays.
std::vector<array> outputs_to_arrays(nb::handle out, const char* op);

}  // namespace alloy::py

// Python objects <-> arrays: scalars, nested lists, numpy, DLPack producers.
#pragma once

#include <optional>
#include <vector>

#include <nanobind/nanobind.h>

#include "alloy/array.h"
#include "dtype_caster.h"

namespace nb = nanobind;

namespace alloy::py {

// mx.array(obj, dtype): scalars, (nested) lists/tuples, numpy arrays, arrays,
// objects with __dlpack__. Throws ValueError/TypeError naming the problem.
array to_array(nb::handle obj, std::optional<Dtype> dtype = std::nullopt);

// An operand of a binary op beside the array `other`: a Python scalar is
// weakly typed and takes other's dtype where that loses nothing; anything
// else that is not an array (numpy arrays and scalars) takes other's dtype
// (MLX's rule); an array is returned as it is.
array to_array_like(nb::handle obj, const array& other);
// A Python int as `dtype`; ValueError where a dtype of under 8 bytes cannot hold it (MLX's rule).
array int_scalar_to(nb::handle obj, Dtype dtype);
bool is_python_scalar(nb::handle obj);

// `a` evaluated, in host memory and row-major: itself where it already is,
// else a host copy (the GIL is released while it evaluates).
array host_row_major(array a);
// A numpy array holding a copy of `a` (evaluates it).
nb::object to_numpy(array a, std::optional<nb::handle> np_dtype = std::nullopt);
// numpy's __array__(dtype, copy) protocol: a zero-copy, read-only view where
// the array's memory allows one, a copy where copy is None and it does not,
// ValueError for copy=False then.
nb::object array_protocol(array a, nb::handle np_dtype, nb::handle copy);
nb::object to_list(array a);
// An int as MLX takes one: a Python int, or anything else with __index__ (a
// numpy integer scalar, a 0-d integer array of either framework). nullopt for
// what is not one (a float, a sequence, a 1-d array).
std::optional<int64_t> as_index(nb::handle h);
// An int (as_index), else TypeError as MLX's signature check gives; an
// OverflowError past 32 bits.
int int_arg(nb::handle h);
// An int or a sequence of ints: axes, shifts, reps, a shape.
std::vector<int> ints_arg(nb::handle h);
Shape shape_arg(nb::handle h);
// An `axis` argument as MLX takes it: None (all axes), an int, or a sequence of ints.
std::optional<std::vector<int>> axes_arg(nb::handle axis);
nb::object to_scalar(array a);

}  // namespace alloy::py

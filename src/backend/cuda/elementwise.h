// Host side of the elementwise kernels (device/elementwise.cuh): module
// sources and the launches that pick a contiguous or a strided kernel.
#pragma once

#include <functional>
#include <string>

#include "alloy/array.h"
#include "backend/cuda/kernels.h"

namespace alloy::cuda {

// A family of map kernels: functor `F` over one input.
struct MapModule {
  std::string key;
  SourceFn source;
};
// Source of map kernel `name`: `body` defines `struct F` given `using In/Out`.
std::string map_module_source(Dtype in, Dtype out, const std::string& includes, const std::string& body,
                              const std::string& name);
// Sources of the zip (binary) and select kernels `name`.
std::string zip_module_source(Dtype t, Dtype out, const std::string& op_name, const std::string& name);
std::string select_module_source(Dtype bits, const std::string& name);
// The unary module of `op` (by its table name) from `in` to `out`.
MapModule unary_module(const std::string& op_name, Dtype in, Dtype out);
// The conversion module (In -> Out with the host's rules); same-dtype copies
// move bits through the unsigned type of the same width.
MapModule cast_module(Dtype in, Dtype out);

// out (memory at `dst`, strides `dst_strides`, dtype of the module's Out) =
// F(in) for every element of `in`'s shape.
void run_map(const MapModule& m, const array& in, void* dst, const Strides& dst_strides, size_t out_itemsize,
             CUstream stream, const char* op);
// Dense form: n elements from `src` to `dst`, both contiguous.
void run_map_dense(const MapModule& m, const void* src, void* dst, int64_t n, size_t in_itemsize,
                   size_t out_itemsize, CUstream stream);

// Copies (converting to dst's dtype) every element of `src` to memory at
// `dst` with element strides `dst_strides`; the primitives' strided copy.
void copy_into(const array& src, void* dst, Dtype dst_dtype, const Strides& dst_strides, CUstream stream,
               const char* op);
// `a` when it is row-contiguous, else a row-contiguous GPU copy (same dtype).
array row_contiguous(const array& a, CUstream stream, const char* op);
// A row-contiguous copy of `a` in a buffer of its own (the allocator's alignment), always.
array copy_row_contiguous(const array& a, CUstream stream, const char* op);

}  // namespace alloy::cuda

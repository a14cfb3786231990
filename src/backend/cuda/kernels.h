// The op kernels' module cache and launch helpers. Kernel source is
// generated per (family, op, dtypes), compiled by NVRTC once per process (and
// once per machine through the content-addressed disk cache), and its
// functions fetched by name.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "alloy/array.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device/layout.cuh"
#include "jit/nvrtc.h"

namespace alloy::cuda {

using cuda_driver::CUfunction;

// How a dtype's C++ type is spelled in kernel source ("float", "__half", ...).
const char* device_type_name(Dtype d);
// The unsigned type of the same width, which moves a dtype's bits.
Dtype bits_dtype(Dtype d);

// The NVRTC options op kernels compile with for `arch`, including the shared
// element headers (src/backend/common/*.h) as in-memory headers under their
// host include names ("backend/common/unary_ops.h").
jit::NvrtcOptions kernel_compile_options(const std::string& arch);

// Generates the source of the module holding kernel `name` (one kernel per
// module: NVRTC's optimiser and ptxas cost ~100 ms per kernel, so only what
// runs is compiled).
using SourceFn = std::function<std::string(const std::string& name)>;

// Kernel `name` of the family `family_key` (which names the generator and its
// parameters, e.g. "map/unary/Exp/float32/float32"). The first call for a
// (family, name) compiles; later ones return the loaded function. Compile
// errors throw std::runtime_error with NVRTC's log and the source.
CUfunction kernel(const std::string& family_key, const std::string& name, const SourceFn& make_source);

// The device's streaming multiprocessors (grids are sized from it).
int sm_count();

// Threads per block of the 1-D grid-stride kernels.
inline constexpr unsigned kBlock = 256;
// Blocks for a grid-stride loop over `work` items: enough to fill the device
// a few times over, never more than the work needs.
unsigned grid_blocks(int64_t work, unsigned block = kBlock);

// Launches fn<<<grid, block, shared, stream>>>(args...); every argument is
// passed by address, as cuLaunchKernel wants.
template <typename... Args>
void launch(CUfunction fn, unsigned grid, unsigned block, unsigned shared, CUstream stream, Args&... args) {
  void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
  const unsigned g[3] = {grid, 1, 1}, b[3] = {block, 1, 1};
  cuda_driver::launch(fn, g, b, shared, stream, params);
}
template <typename... Args>
void launch3(CUfunction fn, const unsigned (&grid)[3], const unsigned (&block)[3], unsigned shared, CUstream stream,
             Args&... args) {
  void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
  cuda_driver::launch(fn, grid, block, shared, stream, params);
}

// ---- layouts

// Merges dimensions that every operand walks contiguously (as the CPU
// backend does) and packs the result into a kernel parameter. Always at
// least one dimension; throws when more than kMaxDims remain.
template <int N>
StridedLayout<N> make_layout(const Shape& shape, const std::array<const Strides*, N>& strides, const char* op);

// Kernel name suffix for a strided launch: "s1".."s3" when the layout has
// that many dims and every offset fits 32 bits, else "sn" (64-bit, any dims).
template <int N>
std::string strided_suffix(const StridedLayout<N>& layout, const std::vector<size_t>& spans);

// ---- memory

// Temporary GPU memory of `n` elements for a kernel's partial results,
// freed when the array goes away (the allocator reuses a block only for
// later launches, so the stream order keeps it valid while they run).
array scratch(size_t n, Dtype d);
// Gives `out` fresh row-contiguous GPU memory.
void allocate_row_contiguous(array& out);
// Fresh GPU memory laid out like the dense array `like` (same strides).
void allocate_like(array& out, const array& like);
// True when the elements are exactly [data, data + size) in some order.
inline bool is_dense(const array& a) { return a.flags().contiguous && a.data_size() == a.size(); }
// True when `p` is aligned to `bytes`.
inline bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

inline CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

}  // namespace alloy::cuda

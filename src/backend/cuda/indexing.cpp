// GPU evaluation of Gather and Scatter (device/indexing.cuh): out-of-range
// indices are clamped by gathers and dropped by scatters, as on the CPU.
#include <stdexcept>

#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "primitives/indexing.h"

namespace alloy {

using namespace cuda;

namespace {

IndexArgs index_args(const std::vector<array>& idx, const std::vector<int>& axes, const Shape& idx_shape,
                     const Shape& target_shape, const Strides& target_strides, const Shape& block, const char* op) {
  if (static_cast<int>(idx_shape.size()) > kMaxDims || static_cast<int>(idx.size()) > kMaxDims) {
    throw std::invalid_argument(std::string("[") + op + "] the GPU kernels take at most " + std::to_string(kMaxDims) +
                                " index arrays of at most " + std::to_string(kMaxDims) + " dimensions.");
  }
  IndexArgs a{};
  a.n_idx = static_cast<int32_t>(idx.size());
  a.idx_ndim = static_cast<int32_t>(idx_shape.size());
  for (size_t d = 0; d < idx_shape.size(); ++d) a.idx_shape[d] = idx_shape[d];
  for (size_t k = 0; k < idx.size(); ++k) {
    if (!is_integral(idx[k].dtype())) {
      throw std::invalid_argument(std::string("[") + op + "] indices must be integers, got " +
                                  dtype_name(idx[k].dtype()) + ".");
    }
    a.idx[k] = idx[k].raw_data();
    for (size_t d = 0; d < idx_shape.size(); ++d) a.idx_strides[k][d] = idx[k].strides()[d];
    const int ax = axes[k];
    a.axis_size[k] = target_shape[ax];
    a.axis_limit[k] = target_shape[ax] - block[ax];
    a.axis_stride[k] = target_strides[ax];
  }
  a.n_index = static_cast<int64_t>(shape_size(idx_shape));
  a.block = static_cast<int64_t>(shape_size(block));
  return a;
}

int sm_blocks() { return sm_count() * 64; }

}  // namespace

void Gather::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  array& out = outputs[0];
  allocate_row_contiguous(out);
  std::vector<array> idx(inputs.begin() + 1, inputs.end());
  Shape idx_shape = idx.empty() ? Shape{} : idx[0].shape();
  IndexArgs args = index_args(idx, axes_, idx_shape, a.shape(), a.strides(), slice_sizes_, "gather");
  if (out.size() == 0 || args.block == 0 || args.n_index == 0) return;
  CUstream s = stream_for(stream());
  StridedLayout<1> slice = make_layout<1>(slice_sizes_, {&a.strides()}, "gather");
  const size_t item = a.itemsize();
  // Contiguous blocks whose every start is 16-byte aligned move as 16-byte words.
  bool wide = slice.ndim == 1 && slice.strides[0][0] == 1 && (args.block * item) % 16 == 0 &&
              aligned(a.raw_data(), 16) && aligned(out.raw_data(), 16);
  for (int k = 0; k < args.n_idx; ++k) wide = wide && (args.axis_stride[k] * static_cast<int64_t>(item)) % 16 == 0;
  std::string type = device_type_name(bits_dtype(a.dtype()));
  if (wide) {
    const int64_t per = 16 / static_cast<int64_t>(item);
    for (int k = 0; k < args.n_idx; ++k) args.axis_stride[k] /= per;
    args.block /= per;
    slice.shape[0] = static_cast<int32_t>(args.block);
    type = "alloy::bits128";
  }
  const Dtype it = idx.empty() ? Dtype::int32 : idx[0].dtype();
  SourceFn source = [=](const std::string& k) { return gather_source(type, it, k); };
  CUfunction fn = kernel("gather/" + type + "/" + dtype_name(it), "gather", source);
  unsigned bx = args.n_idx <= 16 ? 16 : 32;
  while (bx < 256 && bx < args.block) bx *= 2;
  const unsigned by = 256 / bx;
  const int64_t need = (args.n_index + by - 1) / by;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(need, sm_blocks()));
  const void* src = a.raw_data();
  void* dst = out.raw_data();
  launch3(fn, {blocks, 1, 1}, {bx, by, 1}, 0, s, src, dst, args, slice);
  note_pending(stream());
}

void Scatter::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const array& updates = inputs.back();
  array& out = outputs[0];
  if (is_complex(a.dtype()) && (reduce_ == ScatterReduce::max || reduce_ == ScatterReduce::min)) {
    throw std::invalid_argument("[scatter] max/min are not defined for complex64.");
  }
  allocate_row_contiguous(out);
  CUstream s = stream_for(stream());
  copy_into(a, out.raw_data(), out.dtype(), out.strides(), s, "scatter");
  note_pending(stream());
  std::vector<array> idx(inputs.begin() + 1, inputs.end() - 1);
  const int nd = a.ndim();
  const int idx_nd = updates.ndim() - nd;
  Shape idx_shape(updates.shape().begin(), updates.shape().begin() + idx_nd);
  Shape block(updates.shape().begin() + idx_nd, updates.shape().end());
  IndexArgs args = index_args(idx, axes_, idx_shape, a.shape(), out.strides(), block, "scatter");
  const int64_t n = static_cast<int64_t>(updates.size());
  if (n == 0) return;
  Strides block_out(updates.ndim(), 0);
  for (int d = 0; d < nd; ++d) block_out[idx_nd + d] = out.strides()[d];
  StridedLayout<2> upd = make_layout<2>(updates.shape(), {&updates.strides(), &block_out}, "scatter");
  const int mode = static_cast<int>(reduce_);
  // Stores move bits; combining modes need the real type.
  const Dtype t = reduce_ == ScatterReduce::none ? bits_dtype(a.dtype()) : a.dtype();
  const Dtype it = idx.empty() ? Dtype::int32 : idx[0].dtype();
  SourceFn source = [=](const std::string& k) { return scatter_source(mode, t, it, k); };
  CUfunction fn = kernel("scatter/" + std::to_string(mode) + "/" + dtype_name(t) + "/" + dtype_name(it), "scatter",
                         source);
  const void* src = updates.raw_data();
  void* dst = out.raw_data();
  launch(fn, grid_blocks(n), kBlock, 0, s, src, dst, args, upd, n);
}

}  // namespace alloy

// GPU evaluation of FFT with cuFFT: one batched 1-D transform per axis
// (the transforms along different axes commute; an rfft does its halving
// axis first, an irfft last). Each pass copies the array with the axis moved
// last into a dense buffer (cuFFT's simple layout), runs the plan, and hands
// on a view back in the original axis order; the final view is copied into
// the output. Without cuFFT the input goes to the host, the pocketfft path runs
// there and the result comes back: slower, never wrong.
#include "alloy/allocator.h"
#include "backend/cuda/cufft.h"
#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernels.h"
#include "primitives/fft.h"

namespace alloy {

using namespace cuda;

namespace {

// `a` with `axis` moved last, as a view (no copy).
array axis_last(const array& a, int axis) {
  Shape shape;
  Strides strides;
  for (int d = 0; d < a.ndim(); ++d) {
    if (d == axis) continue;
    shape.push_back(a.shape(d));
    strides.push_back(a.strides()[d]);
  }
  shape.push_back(a.shape(axis));
  strides.push_back(a.strides()[axis]);
  return array(a.data_shared_ptr(), shape, strides, a.dtype(), a.offset());
}

// The dense `rows` (axis last) seen in the original order again.
array axis_back(const array& rows, int axis) {
  const int nd = rows.ndim();
  Shape shape(nd);
  Strides strides(nd);
  for (int d = 0, k = 0; d < nd; ++d) {
    const int src = d == axis ? nd - 1 : k++;
    shape[d] = rows.shape(src);
    strides[d] = rows.strides()[src];
  }
  return array(rows.data_shared_ptr(), shape, strides, rows.dtype(), rows.offset());
}

array dense_gpu(const Shape& shape, Dtype dtype) {
  array out(std::make_shared<Data>(allocator(Device(Device::gpu)).malloc(shape_size(shape) * size_of(dtype))), shape,
            row_major_strides(shape), dtype);
  return out;
}

// One batched 1-D transform of logical length n along `axis`.
array pass(const array& x, int axis, cufft::Type type, bool inverse, int64_t n, CUstream s) {
  array rows = axis_last(x, axis);
  // C2R overwrites its input and R2C is not documented to preserve it in
  // every configuration, so both always get a private copy; C2C reads the
  // input in place when it is already dense.
  if (type != cufft::C2C || !rows.flags().row_contiguous) {
    array copy = dense_gpu(rows.shape(), rows.dtype());
    copy_into(rows, copy.raw_data(), rows.dtype(), copy.strides(), s, "fft");
    rows = copy;
  }
  Shape out_shape = rows.shape();
  out_shape.back() = type == cufft::R2C ? n / 2 + 1 : n;
  array out = dense_gpu(out_shape, type == cufft::C2R ? Dtype::float32 : Dtype::complex64);
  const int64_t row_len = rows.shape().back();
  const int64_t batch = row_len == 0 ? 0 : static_cast<int64_t>(rows.size()) / row_len;
  if (batch > 0) cufft::execute(s, type, n, batch, inverse, rows.raw_data(), out.raw_data());
  return axis_back(out, axis);
}

}  // namespace

void FFT::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  CUstream s = stream_for(stream());
  // A scale inside the transform is the CPU ops' form (on a GPU stream they
  // scale afterwards). Such a node reaches the GPU when a function exported
  // on the CPU is imported and called with the GPU as default: it runs on
  // the host path, which applies it (tests/python/test_mlx_export.py).
  if (!cufft::available() || scale_ != 1.0f) {
    // Host fallback: pocketfft on a host copy, then one copy of the result back.
    std::vector<array> host_in{to_host(inputs[0])};
    // A host array of the output's shape; eval_cpu gives it fresh memory.
    std::vector<array> host_out{array(std::make_shared<Data>(allocator(Device(Device::cpu)).malloc(out.nbytes())),
                                      out.shape(), row_major_strides(out.shape()), out.dtype())};
    eval_cpu(host_in, host_out);
    allocate_row_contiguous(out);
    if (out.nbytes()) {
      check(cuda_driver::api().cuMemcpyHtoDAsync(dptr(out.raw_data()), host_out[0].raw_data(), out.nbytes(), s),
            "fft", "cuMemcpyHtoDAsync");
      // The host buffer dies with this scope: wait for the copy.
      check(cuda_driver::api().cuStreamSynchronize(s), "fft", "cuStreamSynchronize");
    }
    return;
  }
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  array x = inputs[0];
  const int last = axes_.back();
  if (!real_) {
    for (int ax : axes_) x = pass(x, ax, cufft::C2C, inverse_, x.shape(ax), s);
  } else if (!inverse_) {
    x = pass(x, last, cufft::R2C, false, x.shape(last), s);
    for (int ax : axes_) {
      if (ax != last) x = pass(x, ax, cufft::C2C, false, x.shape(ax), s);
    }
  } else {
    for (int ax : axes_) {
      if (ax != last) x = pass(x, ax, cufft::C2C, true, x.shape(ax), s);
    }
    x = pass(x, last, cufft::C2R, true, out.shape(last), s);
  }
  copy_into(x, out.raw_data(), out.dtype(), out.strides(), s, "fft");
  note_pending(stream());
}

}  // namespace alloy

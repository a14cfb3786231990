// CPU evaluation of FFT with pocketfft (the header-only library MLX's CPU
// backend uses, so results match MLX's to the bit where the plans agree,
// signed zeros included). One call covers every transformed axis and every
// batch index, reading the input through its own byte strides (no copy for
// transposed, sliced, reversed or broadcast inputs).
//
// pocketfft runs single-threaded here: Alloy's CPU scheduler owns the cores.
// Its plan cache (16 lengths per kind) is guarded by its own mutex.
#define POCKETFFT_NO_MULTITHREADING
#define POCKETFFT_CACHE_SIZE 16
#include <pocketfft_hdronly.h>

#include <complex>
#include <stdexcept>
#include <string>

#include "backend/cpu/elementwise_loops.h"
#include "primitives/fft.h"

namespace alloy {

namespace {

pocketfft::shape_t shape_of(const Shape& shape) { return pocketfft::shape_t(shape.begin(), shape.end()); }

// Element strides to the byte strides pocketfft walks.
pocketfft::stride_t byte_strides(const array& a) {
  pocketfft::stride_t s;
  s.reserve(a.ndim());
  for (auto st : a.strides()) s.push_back(static_cast<ptrdiff_t>(st) * static_cast<ptrdiff_t>(a.itemsize()));
  return s;
}

}  // namespace

void FFT::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  if (out.size() == 0) return;
  const array& in = inputs[0];
  const pocketfft::shape_t axes(axes_.begin(), axes_.end());
  try {
    if (!real_) {
      pocketfft::c2c<float>(shape_of(out.shape()), byte_strides(in), byte_strides(out), axes, !inverse_,
                            in.data<std::complex<float>>(), out.data<std::complex<float>>(), scale_);
    } else if (!inverse_) {
      // rfft: the real transform runs along the last of `axes`, complex ones
      // along the others.
      pocketfft::r2c<float>(shape_of(in.shape()), byte_strides(in), byte_strides(out), axes, true,
                            in.data<float>(), out.data<std::complex<float>>(), scale_);
    } else {
      // irfft: the output's shape gives n; the input holds n / 2 + 1 along
      // the last axis. pocketfft leaves its input untouched.
      pocketfft::c2r<float>(shape_of(out.shape()), byte_strides(in), byte_strides(out), axes, false,
                            in.data<std::complex<float>>(), out.data<float>(), scale_);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("[fft] pocketfft failed: ") + e.what());
  }
}

}  // namespace alloy

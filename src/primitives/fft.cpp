// Derivatives of the FFT. Every variant is linear, so its jvp is the same
// transform of the tangent, and its vjp carries the same real scale. The
// vjps follow MLX's convention for complex cotangents (the conjugate
// transpose of the linear map), checked against mlx.core by
// tests/python/test_mlx_fft.py:
//   c2c: the opposite-direction c2c of the cotangent;
//   rfft: the real part of the inverse c2c of the cotangent zero-padded back
//     to the input's length;
//   irfft: the rfft of the real cotangent with the bins that stand for two
//     (every bin but 0 and, for even n, n/2) doubled, as MLX does.
#include "primitives/fft.h"

#include "alloy/ops.h"

namespace alloy {

array fft_node(const array& in, const std::vector<int>& axes, bool inverse, bool real, Stream s, int irfft_n,
               float scale) {
  Shape out_shape = in.shape();
  Dtype out_dtype = Dtype::complex64;
  if (real) {
    const int last = axes.back();
    if (inverse) {
      out_shape[last] = irfft_n;
      out_dtype = Dtype::float32;
    } else {
      out_shape[last] = in.shape(last) / 2 + 1;
    }
  }
  return array(out_shape, out_dtype, std::make_shared<FFT>(s, axes, inverse, real, real && inverse ? irfft_n : 0, scale),
               {in});
}

std::vector<array> FFT::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const array& in = primals[0];
  const array& ct = cotangents[0];
  if (!real_) return {fft_node(ct, axes_, !inverse_, false, stream(), 0, scale_)};
  const int last = axes_.back();
  if (!inverse_) {
    // Zero-pad the half spectrum back to the input's length along `last`.
    std::vector<std::pair<int, int>> widths(ct.ndim(), {0, 0});
    widths[last].second = static_cast<int>(in.shape(last) - ct.shape(last));
    array full = pad(ct, widths, zeros({}, Dtype::complex64, stream()), "constant", stream());
    return {alloy::real(fft_node(full, axes_, true, false, stream(), 0, scale_), stream())};
  }
  const int n = static_cast<int>(outputs[0].shape(last));
  const int bins = static_cast<int>(in.shape(last));
  array spectrum = fft_node(ct, axes_, false, true, stream(), 0, scale_);
  // Weights along `last`: 1 for bin 0 and (even n) bin n/2, else 2.
  Shape wshape(in.ndim(), 1);
  wshape[last] = bins;
  array k = astype(arange(0.0, static_cast<double>(bins), 1.0, stream()), Dtype::int32, stream());
  array single = logical_or(equal(k, array(0), stream()), equal(multiply(k, array(2), stream()), array(n), stream()),
                            stream());
  array weight = reshape(where(single, array(1.0f), array(2.0f), stream()), wshape, stream());
  return {multiply(spectrum, astype(weight, Dtype::complex64, stream()), stream())};
}

std::vector<array> FFT::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>& argnums) {
  // The tangent has the primal's dtype, which the op already fixed.
  return {fft_node(tangents[0], axes_, inverse_, real_, stream(), irfft_n_, scale_)};
}

}  // namespace alloy

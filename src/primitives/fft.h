// FFT: one discrete Fourier transform over `axes` (normalised, distinct, in
// the caller's order), times `scale`. The ops (src/ops/fft.cpp) crop or pad
// the input beforehand. `scale` is pocketfft's factor, which it applies inside
// the transform (in the first pass of an n-D complex one): the CPU ops put an
// inverse's 1/n there, as MLX's CPU backend does, so their results agree to
// the bit. GPU ops leave it 1 and scale afterwards.
//   complex -> complex (real = false): complex64 in and out, same shape;
//     inverse flips the sign of the exponent.
//   real forward (rfft): float32 in, complex64 out, the last of `axes`
//     shortened to n/2 + 1 (the rest is the conjugate mirror).
//   real inverse (irfft): complex64 in with n/2 + 1 there, float32 out whose
//     shape (fixed by the op) gives n.
#pragma once

#include <tuple>

#include <vector>

#include "alloy/primitive.h"

namespace alloy {

class FFT : public Primitive {
 public:
  // The fields that rebuild it (export_function).
  auto state() const { return std::tie(axes_, inverse_, real_, irfft_n_, scale_); }
  // irfft_n: an irfft's real length along the last axis (its jvp needs it).
  FFT(Stream s, std::vector<int> axes, bool inverse, bool real, int irfft_n = 0, float scale = 1.0f)
      : Primitive(s), axes_(std::move(axes)), inverse_(inverse), real_(real), irfft_n_(irfft_n), scale_(scale) {}
  const char* name() const override { return "fft"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                         const std::vector<int>& argnums, const std::vector<array>& outputs) override;
  std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                         const std::vector<int>& argnums) override;
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const FFT*>(&other);
    return o && o->axes_ == axes_ && o->inverse_ == inverse_ && o->real_ == real_ && o->irfft_n_ == irfft_n_ &&
           o->scale_ == scale_;
  }

  const std::vector<int>& axes() const { return axes_; }
  bool is_inverse() const { return inverse_; }
  bool is_real() const { return real_; }
  float scale() const { return scale_; }

 private:
  std::vector<int> axes_;
  bool inverse_;
  bool real_;
  int irfft_n_;
  float scale_;
};

// A node of FFT over `in` (already complex64, or float32 for rfft), with the
// output shape the kind implies; an irfft names its real length n.
array fft_node(const array& in, const std::vector<int>& axes, bool inverse, bool real, Stream s, int irfft_n = 0,
               float scale = 1.0f);

}  // namespace alloy

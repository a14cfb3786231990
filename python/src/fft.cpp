// mx.fft: the transforms, frequencies and shifts of mlx.core.fft 0.32.4, with
// its signatures (every argument may be named; `stream` last). stft and
// istft are composites (src/ops/stft.cpp).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "alloy/fft.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

using OptInts = std::optional<std::vector<int>>;

// `axes` of fftshift: an int, a sequence of ints, or None.
using py::axes_arg;

using OneD = array (*)(const array&, std::optional<int>, int, const std::string&, StreamOrDevice);
using ND = array (*)(const array&, const fft::OptShape&, const fft::OptShape&, const std::string&, StreamOrDevice);

void def_one_d(nb::module_& m, const char* name, OneD f, const char* doc) {
  m.def(
      name, [f](const array& a, std::optional<int> n, int axis, const std::string& norm, StreamOrDevice s) {
        return f(a, n, axis, norm, s);
      },
      "a"_a, "n"_a.none() = nb::none(), "axis"_a = -1, "norm"_a = "backward", "stream"_a = nb::none(), doc);
}

void def_n_d(nb::module_& m, const char* name, ND f, OptInts default_axes, const char* doc) {
  nb::object axes_default = default_axes ? nb::cast(*default_axes) : nb::none();
  m.def(
      name, [f](const array& a, OptInts s, OptInts axes, const std::string& norm, StreamOrDevice sd) {
        return f(a, s, axes, norm, sd);
      },
      "a"_a, "s"_a.none() = nb::none(), "axes"_a.none() = axes_default, "norm"_a = "backward",
      "stream"_a = nb::none(), doc);
}

}  // namespace

void init_fft(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("fft", "Discrete Fourier transforms (pocketfft on the CPU, cuFFT on the GPU).");
  def_one_d(m, "fft", fft::fft, "One-dimensional discrete Fourier transform along axis (complex64).");
  def_one_d(m, "ifft", fft::ifft, "One-dimensional inverse discrete Fourier transform along axis (complex64).");
  def_one_d(m, "rfft", fft::rfft,
            "Fourier transform of a real signal along axis: the n // 2 + 1 non-negative frequencies.");
  def_one_d(m, "irfft", fft::irfft,
            "Inverse of rfft along axis: a float32 signal of length n (default 2 * (bins - 1)).");
  const OptInts last_two = std::vector<int>{-2, -1};
  def_n_d(m, "fft2", fft::fftn, last_two, "Two-dimensional discrete Fourier transform (default: the last two axes).");
  def_n_d(m, "ifft2", fft::ifftn, last_two, "Two-dimensional inverse discrete Fourier transform.");
  def_n_d(m, "rfft2", fft::rfftn, last_two, "Two-dimensional real discrete Fourier transform.");
  def_n_d(m, "irfft2", fft::irfftn, last_two, "Inverse of rfft2.");
  def_n_d(m, "fftn", fft::fftn, std::nullopt, "N-dimensional discrete Fourier transform (default: every axis).");
  def_n_d(m, "ifftn", fft::ifftn, std::nullopt, "N-dimensional inverse discrete Fourier transform.");
  def_n_d(m, "rfftn", fft::rfftn, std::nullopt,
          "N-dimensional real discrete Fourier transform; the last axis keeps n // 2 + 1 frequencies.");
  def_n_d(m, "irfftn", fft::irfftn, std::nullopt, "Inverse of rfftn (float32).");
  m.def("fftfreq", [](int n, double d, StreamOrDevice s) { return fft::fftfreq(n, d, s); }, "n"_a, "d"_a = 1.0,
        "stream"_a = nb::none(), "Sample frequencies of an n-point transform with sample spacing d (float32).");
  m.def("rfftfreq", [](int n, double d, StreamOrDevice s) { return fft::rfftfreq(n, d, s); }, "n"_a, "d"_a = 1.0,
        "stream"_a = nb::none(), "The n // 2 + 1 non-negative sample frequencies of rfft (float32).");
  m.def("fftshift", [](const array& a, nb::handle axes, StreamOrDevice s) { return fft::fftshift(a, axes_arg(axes), s); },
        "a"_a, "axes"_a.none() = nb::none(), "stream"_a = nb::none(),
        "Rolls the zero frequency to the centre along axes (default: every axis).");
  m.def("ifftshift", [](const array& a, nb::handle axes, StreamOrDevice s) { return fft::ifftshift(a, axes_arg(axes), s); },
        "a"_a, "axes"_a.none() = nb::none(), "stream"_a = nb::none(), "Undoes fftshift along axes.");
  m.def(
      "stft",
      [](const array& x, int n_fft, std::optional<int> hop_length, std::optional<int> win_length,
         std::optional<array> window, bool center, const std::string& pad_mode, const std::string& norm,
         std::optional<bool> onesided, StreamOrDevice s) {
        return fft::stft(x, n_fft, hop_length, win_length, window, center, pad_mode, norm, onesided, s);
      },
      "x"_a, "n_fft"_a = 2048, "hop_length"_a.none() = nb::none(), "win_length"_a.none() = nb::none(),
      "window"_a.none() = nb::none(), "center"_a = true, "pad_mode"_a = "reflect", "norm"_a = "backward",
      "onesided"_a.none() = nb::none(), "stream"_a = nb::none(),
      "Short-time Fourier transform of the last axis: shape (..., n_freq, n_frames), complex64.");
  m.def(
      "istft",
      [](const array& stft_matrix, std::optional<int> n_fft, std::optional<int> hop_length,
         std::optional<int> win_length, std::optional<array> window, bool center, const std::string& norm,
         std::optional<bool> onesided, std::optional<int> length, StreamOrDevice s) {
        return fft::istft(stft_matrix, n_fft, hop_length, win_length, window, center, norm, onesided, length, s);
      },
      "stft_matrix"_a, "n_fft"_a.none() = nb::none(), "hop_length"_a.none() = nb::none(),
      "win_length"_a.none() = nb::none(), "window"_a.none() = nb::none(), "center"_a = true, "norm"_a = "backward",
      "onesided"_a.none() = nb::none(), "length"_a.none() = nb::none(), "stream"_a = nb::none(),
      "Inverse of stft: overlap-added windowed frames over the squared-window envelope (float32).");
}

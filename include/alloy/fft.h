// Fourier transforms (as mlx.core.fft). Complex results are complex64, real
// ones float32; inputs of other dtypes are cast first. `n` / `s` crop or
// zero-pad the input along the transformed axes; `norm` is "backward" (scale
// the inverse by 1/n), "ortho" (both by 1/sqrt(n)) or "forward" (the forward
// by 1/n).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy::fft {

// One-dimensional transforms along `axis`.
array fft(const array& a, std::optional<int> n = std::nullopt, int axis = -1, const std::string& norm = "backward",
          StreamOrDevice s = {});
array ifft(const array& a, std::optional<int> n = std::nullopt, int axis = -1, const std::string& norm = "backward",
           StreamOrDevice s = {});
array rfft(const array& a, std::optional<int> n = std::nullopt, int axis = -1, const std::string& norm = "backward",
           StreamOrDevice s = {});
// n is the real output's length (default 2 * (in - 1)).
array irfft(const array& a, std::optional<int> n = std::nullopt, int axis = -1, const std::string& norm = "backward",
            StreamOrDevice s = {});

// N-dimensional transforms. axes = nullopt: every axis (s must then be
// nullopt too); s = nullopt: the input's sizes along axes.
using OptShape = std::optional<std::vector<int>>;
array fftn(const array& a, const OptShape& s = std::nullopt, const OptShape& axes = std::nullopt,
           const std::string& norm = "backward", StreamOrDevice sd = {});
array ifftn(const array& a, const OptShape& s = std::nullopt, const OptShape& axes = std::nullopt,
            const std::string& norm = "backward", StreamOrDevice sd = {});
array rfftn(const array& a, const OptShape& s = std::nullopt, const OptShape& axes = std::nullopt,
            const std::string& norm = "backward", StreamOrDevice sd = {});
array irfftn(const array& a, const OptShape& s = std::nullopt, const OptShape& axes = std::nullopt,
             const std::string& norm = "backward", StreamOrDevice sd = {});

// Sample frequencies of an n-point transform with spacing d (float32).
array fftfreq(int n, double d = 1.0, StreamOrDevice s = {});
array rfftfreq(int n, double d = 1.0, StreamOrDevice s = {});
// Rolls the zero frequency to the centre (and back); axes = nullopt: all.
array fftshift(const array& a, const OptShape& axes = std::nullopt, StreamOrDevice s = {});
array ifftshift(const array& a, const OptShape& axes = std::nullopt, StreamOrDevice s = {});

// Short-time transform: frames of n_fft samples every hop_length (default
// n_fft / 4) along the last axis, times `window` (default ones(win_length),
// win_length defaulting to n_fft) centred in n_fft; shape (..., n_freq,
// n_frames). center pads n_fft / 2 on both ends with pad_mode "reflect",
// "constant" or "edge". onesided defaults to true for real input.
array stft(const array& x, int n_fft = 2048, std::optional<int> hop_length = std::nullopt,
           std::optional<int> win_length = std::nullopt, const std::optional<array>& window = std::nullopt,
           bool center = true, const std::string& pad_mode = "reflect", const std::string& norm = "backward",
           std::optional<bool> onesided = std::nullopt, StreamOrDevice s = {});
// Overlap-adds the windowed inverse transforms of the frames, divided by the
// summed squared window; n_fft defaults to 2 * (n_freq - 1) (onesided) or
// n_freq; `length` trims or zero-pads the float32 result.
array istft(const array& stft_matrix, std::optional<int> n_fft = std::nullopt,
            std::optional<int> hop_length = std::nullopt, std::optional<int> win_length = std::nullopt,
            const std::optional<array>& window = std::nullopt, bool center = true,
            const std::string& norm = "backward", std::optional<bool> onesided = std::nullopt,
            std::optional<int> length = std::nullopt, StreamOrDevice s = {});

}  // namespace alloy::fft

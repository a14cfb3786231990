// stft and istft: composites of a gather (framing, with the centre padding
// folded into the gathered indices), fft/rfft, and a scatter-add (overlap-add),
// so both devices and every derivative come for free.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloy/fft.h"
#include "alloy/ops.h"
#include "ops/op_utils.h"

namespace alloy::fft {

namespace {

void check_norm(const std::string& norm, const char* op) {
  if (norm != "backward" && norm != "ortho" && norm != "forward") {
    throw std::invalid_argument(std::string("[") + op +
                                "] Invalid norm. Expected one of {'backward', 'ortho', 'forward'}.");
  }
}

// The window as n_fft float32 taps: `window` (or ones(win_length)) centred
// between zeros.
array padded_window(int n_fft, std::optional<int> win_length, const std::optional<array>& window, const char* op,
                    SD s) {
  array w = zeros({0}, Dtype::float32, s);
  if (window) {
    if (window->ndim() != 1) throw std::invalid_argument(std::string("[") + op + "] window must be a one-dimensional array.");
    w = astype(*window, Dtype::float32, s);
  } else {
    const int len = win_length.value_or(n_fft);
    if (len < 0) throw std::invalid_argument(std::string("[") + op + "] win_length must not be negative.");
    w = ones({len}, Dtype::float32, s);
  }
  const int len = static_cast<int>(w.shape(0));
  if (len > n_fft) throw std::invalid_argument(std::string("[") + op + "] window length must not exceed n_fft.");
  const int left = (n_fft - len) / 2;
  if (len == n_fft) return w;
  return pad(w, {{left, n_fft - len - left}}, zeros({}, Dtype::float32, s), "constant", s);
}

int hop_of(std::optional<int> hop_length, int n_fft, const char* op) {
  const int hop = hop_length.value_or(n_fft / 4);
  if (hop <= 0) throw std::invalid_argument(std::string("[") + op + "] hop_length must be positive.");
  return hop;
}

// Index of padded position i (in [-p, len + p)) in the unpadded signal, as
// numpy's "reflect" (mirrored without repeating the edge, as often as
// needed) or "edge"; -1 for "constant" padding.
int64_t source_index(int64_t i, int64_t len, const std::string& mode) {
  if (i >= 0 && i < len) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : len - 1;
  if (len == 1) return 0;
  const int64_t period = 2 * (len - 1);
  int64_t m = i % period;
  if (m < 0) m += period;
  return m < len ? m : period - m;
}

}  // namespace

array stft(const array& x_in, int n_fft, std::optional<int> hop_length, std::optional<int> win_length,
           const std::optional<array>& window, bool center, const std::string& pad_mode, const std::string& norm,
           std::optional<bool> onesided, SD s) {
  if (x_in.ndim() < 1) throw std::invalid_argument("[stft] Input must have at least one dimension.");
  if (n_fft <= 0) throw std::invalid_argument("[stft] n_fft must be positive.");
  const int hop = hop_of(hop_length, n_fft, "stft");
  check_norm(norm, "stft");
  if (center && pad_mode != "reflect" && pad_mode != "constant" && pad_mode != "edge") {
    throw std::invalid_argument("[stft] Invalid padding mode (" + pad_mode + "); expected 'reflect', 'constant' or 'edge'.");
  }
  array w = padded_window(n_fft, win_length, window, "stft", s);
  const bool complex_in = x_in.dtype() == Dtype::complex64;
  array x = astype(x_in, complex_in ? Dtype::complex64 : Dtype::float32, s);
  const int64_t len = x.shape(-1);
  if (len == 0) throw std::invalid_argument("[stft] Input must not be empty.");
  const int64_t p = center ? n_fft / 2 : 0;
  const int64_t padded = len + 2 * p;
  if (padded < n_fft) throw std::invalid_argument("[stft] Input is too short for the given n_fft.");
  const int64_t frames = 1 + (padded - n_fft) / hop;
  // Constant padding gathers from one zero appended at index len.
  const bool zero_pad = center && pad_mode == "constant";
  if (zero_pad) {
    std::vector<std::pair<int, int>> widths(x.ndim(), {0, 0});
    widths.back().second = 1;
    x = pad(x, widths, zeros({}, x.dtype(), s), "constant", s);
  }
  std::vector<int32_t> idx(static_cast<size_t>(frames * n_fft));
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t j = 0; j < n_fft; ++j) {
      const int64_t src = source_index(f * hop + j - p, len, pad_mode);
      idx[f * n_fft + j] = static_cast<int32_t>(src < 0 ? len : src);
    }
  }
  array framed = take(x, array(idx, {frames, n_fft}, Dtype::int32), x.ndim() - 1, s);  // (..., frames, n_fft)
  framed = multiply(framed, w, s);
  const bool half = onesided.value_or(!complex_in);
  array spectrum = half ? rfft(framed, n_fft, -1, norm, s) : fft(framed, n_fft, -1, norm, s);
  return swapaxes(spectrum, -1, -2, s);
}

array istft(const array& stft_matrix, std::optional<int> n_fft_in, std::optional<int> hop_length,
            std::optional<int> win_length, const std::optional<array>& window, bool center, const std::string& norm,
            std::optional<bool> onesided_in, std::optional<int> length, SD s) {
  if (stft_matrix.ndim() < 2) throw std::invalid_argument("[istft] Input must have at least two dimensions (freq, frames).");
  const bool onesided = onesided_in.value_or(true);
  const int n_freq = static_cast<int>(stft_matrix.shape(-2));
  const int64_t frames = stft_matrix.shape(-1);
  const int n_fft = n_fft_in.value_or(onesided ? 2 * (n_freq - 1) : n_freq);
  if (n_fft <= 0) throw std::invalid_argument("[istft] n_fft must be positive.");
  const int hop = hop_of(hop_length, n_fft, "istft");
  check_norm(norm, "istft");
  if (frames == 0) throw std::invalid_argument("[istft] Input has no frames.");
  array w = padded_window(n_fft, win_length, window, "istft", s);
  array spectra = swapaxes(stft_matrix, -1, -2, s);  // (..., frames, n_freq)
  array framed = onesided ? irfft(spectra, n_fft, -1, norm, s) : real(ifft(spectra, n_fft, -1, norm, s), s);
  framed = multiply(framed, w, s);
  // Overlap-add: sample j of frame f lands at f * hop + j.
  const int64_t total = n_fft + hop * (frames - 1);
  std::vector<int32_t> idx(static_cast<size_t>(frames * n_fft));
  for (int64_t f = 0; f < frames; ++f) {
    for (int64_t j = 0; j < n_fft; ++j) idx[f * n_fft + j] = static_cast<int32_t>(f * hop + j);
  }
  array positions = array(idx, {frames * n_fft}, Dtype::int32);
  Shape batch(framed.shape().begin(), framed.shape().end() - 2);
  Shape flat_shape = batch, out_shape = batch;
  flat_shape.push_back(frames * n_fft);
  out_shape.push_back(total);
  const int last = static_cast<int>(batch.size());
  array values = reshape(framed, flat_shape, s);
  array signal = scatter_add_along_axis(zeros(out_shape, Dtype::float32, s), broadcast_to(positions, flat_shape, s),
                                        values, last, s);
  // The squared-window envelope; where no window reaches, nothing is divided.
  array envelope = scatter_add_along_axis(zeros({total}, Dtype::float32, s), positions,
                                          reshape(broadcast_to(square(w, s), {frames, n_fft}, s), {-1}, s), 0, s);
  array reaches = greater(envelope, array(1e-11f), s);
  signal = divide(signal, where(reaches, envelope, array(1.0f), s), s);
  const int64_t start = center ? n_fft / 2 : 0;
  int64_t stop = length ? start + std::max(*length, 0) : (center ? total - n_fft / 2 : total);
  stop = std::max(start, std::min(stop, total));
  const int64_t kept = std::max<int64_t>(stop - start, 0);
  Shape lo(out_shape.size(), 0), hi = out_shape;
  lo.back() = std::min(start, total);
  hi.back() = lo.back() + kept;
  signal = slice(signal, lo, hi, Shape(out_shape.size(), 1), s);
  if (length && kept < *length) {
    std::vector<std::pair<int, int>> widths(out_shape.size(), {0, 0});
    widths.back().second = static_cast<int>(*length - kept);
    signal = pad(signal, widths, zeros({}, Dtype::float32, s), "constant", s);
  }
  return signal;
}

}  // namespace alloy::fft

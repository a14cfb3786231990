// mx.fft ops. Each transform crops/zero-pads the input to the requested
// sizes, casts it (complex64; float32 for rfft), builds one FFT node
// (src/primitives/fft.h) and applies the norm's scale.
// fftfreq, rfftfreq, fftshift and ifftshift are composites.
#include "alloy/fft.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/ops_shape.h"
#include "ops/op_utils.h"
#include "primitives/fft.h"

namespace alloy::fft {

namespace {

std::string join(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

// How a transform of `count` points is scaled for `norm`: `inside`, the FFT
// node's own factor, then `after`, a multiply of its result (1: none).
struct Scaling {
  float inside = 1.0f;
  double after = 1.0;
};

// `in_transform`: the node may scale inside (the CPU's pocketfft). There an
// inverse takes its 1/n inside and the other norms rescale that result, as
// MLX's CPU backend does, so the numbers agree with MLX's to the bit.
Scaling scaling_of(const std::string& norm, bool inverse, double count, bool in_transform, const char* op) {
  if (norm != "backward" && norm != "ortho" && norm != "forward") {
    throw std::invalid_argument(std::string("[") + op +
                                "] Invalid norm. Expected one of {'backward', 'ortho', 'forward'}.");
  }
  if (inverse && in_transform) {
    return {1.0f / static_cast<float>(count), norm == "backward" ? 1.0 : norm == "ortho" ? std::sqrt(count) : count};
  }
  if (norm == "ortho") return {1.0f, 1.0 / std::sqrt(count)};
  return {1.0f, (norm == "backward") == inverse ? 1.0 / count : 1.0};
}

// `axes` as given (possibly negative) and the transform size along each.
array transform(const array& a, std::vector<int> n, const std::vector<int>& axes, bool real, bool inverse,
                const std::string& norm, const char* op, SD sd) {
  // Checked first so a bad norm fails the same way whatever the shapes.
  scaling_of(norm, inverse, 1.0, false, op);
  if (n.size() != axes.size()) throw std::invalid_argument("[fftn] Shape and axes have different sizes.");
  if (axes.empty()) return a;
  std::vector<int> ax;
  for (int axis : axes) ax.push_back(axis < 0 ? axis + a.ndim() : axis);
  std::vector<int> sorted = ax;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw std::invalid_argument("[fftn] Duplicated axis received (" + join(axes) + ")");
  }
  if (sorted.front() < 0 || sorted.back() >= a.ndim()) {
    throw std::out_of_range("[fftn] Invalid axis received (" + join(axes) + ") for array with " +
                                std::to_string(a.ndim()) + " dimensions.");
  }
  for (int v : n) {
    if (v <= 0) throw std::invalid_argument("[fftn] Invalid FFT output size requested (" + join(n) + ")");
  }
  // The input's extent along each axis: n, or n/2 + 1 bins along the last
  // axis of an irfft.
  Shape want = a.shape();
  for (size_t i = 0; i < ax.size(); ++i) want[ax[i]] = n[i];
  if (real && inverse) want[ax.back()] = n.back() / 2 + 1;
  array in = a;
  Shape stop = a.shape();
  bool crop = false, grow = false;
  std::vector<std::pair<int, int>> widths(a.ndim(), {0, 0});
  for (int d = 0; d < a.ndim(); ++d) {
    if (want[d] < a.shape(d)) {
      stop[d] = want[d];
      crop = true;
    } else if (want[d] > a.shape(d)) {
      widths[d].second = static_cast<int>(want[d] - a.shape(d));
      grow = true;
    }
  }
  if (crop) in = slice(in, Shape(a.ndim(), 0), stop, Shape(a.ndim(), 1), sd);
  const Dtype in_dtype = real && !inverse ? Dtype::float32 : Dtype::complex64;
  in = astype(in, in_dtype, sd);
  if (grow) in = pad(in, widths, zeros({}, in_dtype, sd), "constant", sd);
  double count = 1.0;
  for (int v : n) count *= v;
  const Stream stream = to_stream(sd);
  const Scaling scaling = scaling_of(norm, inverse, count, stream.device.type == Device::cpu, op);
  array out = fft_node(in, ax, inverse, real, stream, real && inverse ? n.back() : 0, scaling.inside);
  if (scaling.after == 1.0) return out;
  return multiply(out, array(static_cast<float>(scaling.after)), sd);
}

// Default sizes: the input's along `axes` (an irfft's last: 2 * (bins - 1)).
// A bad axis fails here with IndexError, as MLX's shape lookup does.
std::vector<int> sizes_along(const array& a, const std::vector<int>& axes, bool irfft, const char* op) {
  std::vector<int> n;
  for (int axis : axes) n.push_back(static_cast<int>(a.shape(normalize_axis(axis, a.ndim(), op))));
  if (irfft && !n.empty()) n.back() = (n.back() - 1) * 2;
  return n;
}

array one_d(const array& a, std::optional<int> n, int axis, bool real, bool inverse, const std::string& norm,
            const char* op, SD sd) {
  std::vector<int> sizes = n ? std::vector<int>{*n} : sizes_along(a, {axis}, real && inverse, op);
  return transform(a, sizes, {axis}, real, inverse, norm, op, sd);
}

array n_d(const array& a, const OptShape& s, const OptShape& axes_in, bool real, bool inverse,
          const std::string& norm, const char* op, SD sd) {
  std::vector<int> axes;
  if (axes_in) {
    axes = *axes_in;
  } else {
    if (s) throw std::invalid_argument("[fftn] `axes` should not be `None` if `s` is not `None`.");
    for (int d = 0; d < a.ndim(); ++d) axes.push_back(d);
  }
  std::vector<int> sizes = s ? *s : sizes_along(a, axes, real && inverse, op);
  return transform(a, sizes, axes, real, inverse, norm, op, sd);
}

array shift(const array& a, const OptShape& axes_in, bool inverse, const char* op, SD sd) {
  std::vector<int> axes;
  if (axes_in) {
    for (int axis : *axes_in) {
      const int d = axis < 0 ? axis + a.ndim() : axis;
      if (d < 0 || d >= a.ndim()) {
        throw std::out_of_range(std::string("[") + op + "] Invalid axis " + std::to_string(axis) +
                                " for array with " + std::to_string(a.ndim()) + " dimensions.");
      }
      axes.push_back(d);
    }
  } else {
    for (int d = 0; d < a.ndim(); ++d) axes.push_back(d);
  }
  if (axes.empty()) return a;
  // fftshift rolls by floor(n/2); ifftshift undoes it with ceil(n/2).
  Shape amounts;
  for (int d : axes) amounts.push_back(inverse ? a.shape(d) - a.shape(d) / 2 : a.shape(d) / 2);
  return roll(a, amounts, axes, sd);
}

}  // namespace

array fft(const array& a, std::optional<int> n, int axis, const std::string& norm, SD s) {
  return one_d(a, n, axis, false, false, norm, "fft", s);
}
array ifft(const array& a, std::optional<int> n, int axis, const std::string& norm, SD s) {
  return one_d(a, n, axis, false, true, norm, "ifft", s);
}
array rfft(const array& a, std::optional<int> n, int axis, const std::string& norm, SD s) {
  return one_d(a, n, axis, true, false, norm, "rfft", s);
}
array irfft(const array& a, std::optional<int> n, int axis, const std::string& norm, SD s) {
  return one_d(a, n, axis, true, true, norm, "irfft", s);
}

array fftn(const array& a, const OptShape& s, const OptShape& axes, const std::string& norm, SD sd) {
  return n_d(a, s, axes, false, false, norm, "fftn", sd);
}
array ifftn(const array& a, const OptShape& s, const OptShape& axes, const std::string& norm, SD sd) {
  return n_d(a, s, axes, false, true, norm, "ifftn", sd);
}
array rfftn(const array& a, const OptShape& s, const OptShape& axes, const std::string& norm, SD sd) {
  return n_d(a, s, axes, true, false, norm, "rfftn", sd);
}
array irfftn(const array& a, const OptShape& s, const OptShape& axes, const std::string& norm, SD sd) {
  return n_d(a, s, axes, true, true, norm, "irfftn", sd);
}

array fftfreq(int n, double d, SD s) {
  if (n <= 0) throw std::invalid_argument("[fftfreq] `n` must be greater than 0.");
  if (d == 0.0) throw std::invalid_argument("[fftfreq] `d` must be non-zero.");
  // 0, 1, ..., ceil(n/2) - 1, then -floor(n/2), ..., -1.
  array k = arange(0.0, static_cast<double>(n), 1.0, Dtype::int32, s);
  array signed_k = where(less(k, array((n + 1) / 2), s), k, subtract(k, array(n), s), s);
  return divide(astype(signed_k, Dtype::float32, s), array(static_cast<float>(n * d)), s);
}

array rfftfreq(int n, double d, SD s) {
  if (n <= 0) throw std::invalid_argument("[rfftfreq] `n` must be greater than 0.");
  if (d == 0.0) throw std::invalid_argument("[rfftfreq] `d` must be non-zero.");
  array k = arange(0.0, static_cast<double>(n / 2 + 1), 1.0, Dtype::float32, s);
  return divide(k, array(static_cast<float>(n * d)), s);
}

array fftshift(const array& a, const OptShape& axes, SD s) { return shift(a, axes, false, "fftshift", s); }
array ifftshift(const array& a, const OptShape& axes, SD s) { return shift(a, axes, true, "ifftshift", s); }

}  // namespace alloy::fft

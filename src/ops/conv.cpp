// Convolutions as composites of existing ops.
//
// Why a composite rather than a Conv primitive: every step below (pad, slice,
// take, transpose, reshape, matmul) already has a CPU and a CUDA backend and a
// vjp, so the convolution runs on both devices and differentiates with
// respect to input and weight with no new kernel to keep correct. The work
// lands in matmul (OpenBLAS on the CPU, cuBLAS on the GPU, float32
// accumulation for half types), which is where a direct convolution would
// spend its time too. The price is memory: the im2col patch matrix holds
// prod(kernel) copies of the (padded) input, and input dilation (transposed
// convolutions) multiplies with the inserted zeros.
//
// Steps of conv_general:
//   1. input dilation: zeros between elements (expand, pad, merge, trim);
//   2. padding: pad for positive amounts, slice for negative ones (crop);
//   3. im2col: one take per spatial axis with a (out, kernel) index table
//      o * stride + k * dilation, so the graph has O(ndim) nodes whatever
//      the kernel size, and the derivative is a scatter-add per axis;
//   4. one (batched over groups) matmul with the reshaped weight, or for
//      depthwise convolutions (one input and one output channel per group) a
//      multiply-and-sum over the kernel taps, which avoids G tiny matmuls;
//      small depthwise kernels skip step 3 and sum one strided view per tap.
#include "alloy/ops_conv.h"

#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "op_utils.h"

namespace alloy {

namespace {

std::string ints_to_string(const std::vector<int>& v) {
  std::string r = "(";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + ")";
}

void check_count(const std::vector<int>& v, int d, const char* what) {
  if (static_cast<int>(v.size()) != d) {
    throw std::invalid_argument(std::string("[conv] ") + what + " " + ints_to_string(v) + " need one entry per " +
                                "spatial dimension (" + std::to_string(d) + ").");
  }
}

void check_positive(const std::vector<int>& v, const char* what) {
  for (int x : v) {
    if (x <= 0) {
      throw std::invalid_argument(std::string("[conv] ") + what + " must be positive, got " + ints_to_string(v) +
                                  ".");
    }
  }
}

// Inserts (d - 1) zeros between consecutive elements along `ax`.
array dilate_axis(const array& x, int ax, int d, StreamOrDevice s) {
  const int len = x.shape(ax);
  if (d == 1 || len <= 1) return x;
  array y = expand_dims(x, ax + 1, s);
  std::vector<std::pair<int, int>> widths(y.ndim(), {0, 0});
  widths[ax + 1] = {0, d - 1};
  y = pad(y, widths, array(0, x.dtype()), "constant", s);
  Shape merged = x.shape();
  merged[ax] = len * d;
  y = reshape(y, merged, s);
  Shape start(y.ndim(), 0), stop = y.shape(), step(y.ndim(), 1);
  stop[ax] = (len - 1) * d + 1;  // no zeros after the last element
  return slice(y, start, stop, step, s);
}

// The (out, kernel) table of input positions o * stride + k * dilation.
array window_indices(int out, int kernel, int stride, int dilation) {
  std::vector<int32_t> idx(static_cast<size_t>(out) * kernel);
  for (int o = 0; o < out; ++o) {
    for (int k = 0; k < kernel; ++k) idx[static_cast<size_t>(o) * kernel + k] = o * stride + k * dilation;
  }
  return array(idx, Shape{out, kernel}, int32);
}

// Above this many kernel taps, depthwise convolutions gather patches
// instead of summing one view per tap (whose graph grows with the kernel).
constexpr int kMaxDepthwiseTaps = 32;

template <size_t D>
std::vector<int> to_vec(const std::array<int, D>& a) {
  return std::vector<int>(a.begin(), a.end());
}

}  // namespace

array conv_general(const array& input, const array& weight, std::vector<int> stride, std::vector<int> padding_lo,
                   std::vector<int> padding_hi, std::vector<int> kernel_dilation, std::vector<int> input_dilation,
                   int groups, bool flip, StreamOrDevice s) {
  if (!is_floating(input.dtype())) {
    throw std::invalid_argument(std::string("[conv] the input has dtype ") + dtype_name(input.dtype()) +
                                "; convolutions support floating point inputs only.");
  }
  if (input.ndim() < 3 || input.ndim() > 5) {
    throw std::invalid_argument("[conv] the input of shape " + shape_to_string(input.shape()) +
                                " must be (N, spatial..., C_in) with 1 to 3 spatial dimensions.");
  }
  const int d = input.ndim() - 2;
  if (weight.ndim() != input.ndim()) {
    throw std::invalid_argument("[conv] the weight of shape " + shape_to_string(weight.shape()) + " must have " +
                                std::to_string(input.ndim()) + " dimensions (C_out, kernel..., C_in / groups) for " +
                                std::to_string(d) + "-d convolution.");
  }
  check_count(stride, d, "strides");
  check_count(padding_lo, d, "low paddings");
  check_count(padding_hi, d, "high paddings");
  check_count(kernel_dilation, d, "kernel dilations");
  check_count(input_dilation, d, "input dilations");
  check_positive(stride, "strides");
  check_positive(kernel_dilation, "kernel dilations");
  check_positive(input_dilation, "input dilations");
  const int c_in = input.shape(-1);
  const int c_out = weight.shape(0);
  if (groups < 1) throw std::invalid_argument("[conv] groups must be positive, got " + std::to_string(groups) + ".");
  if (groups > 1 && d == 3) {
    // MLX 0.32 rejects grouped 3-D convolutions; the composite could run
    // them, but Alloy keeps MLX's contract.
    throw std::invalid_argument("[conv] groups > 1 are supported for 1-D and 2-D convolutions only.");
  }
  if (c_in % groups != 0) {
    throw std::invalid_argument("[conv] the input channels (" + std::to_string(c_in) +
                                ") must be divisible by the number of groups (" + std::to_string(groups) + ").");
  }
  if (weight.shape(-1) * groups != c_in) {
    throw std::invalid_argument("[conv] the weight of shape " + shape_to_string(weight.shape()) + " expects " +
                                std::to_string(weight.shape(-1) * groups) + " input channels with " +
                                std::to_string(groups) + " groups, but the input of shape " +
                                shape_to_string(input.shape()) + " has " + std::to_string(c_in) + ".");
  }
  if (c_out % groups != 0) {
    throw std::invalid_argument("[conv] the output channels (" + std::to_string(c_out) +
                                ") must be divisible by the number of groups (" + std::to_string(groups) + ").");
  }
  for (int i = 0; i < d; ++i) {
    if (weight.shape(1 + i) <= 0) {
      throw std::invalid_argument("[conv] the weight of shape " + shape_to_string(weight.shape()) +
                                  " has an empty kernel.");
    }
  }

  // Output sizes, checked before any node is built.
  Shape out_spatial(d), kernel(d);
  for (int i = 0; i < d; ++i) {
    const int len = input.shape(1 + i);
    const int dilated = len == 0 ? 0 : (len - 1) * input_dilation[i] + 1;
    const int padded = dilated + padding_lo[i] + padding_hi[i];
    kernel[i] = weight.shape(1 + i);
    const int span = (kernel[i] - 1) * kernel_dilation[i] + 1;
    if (padded < span) {
      throw std::invalid_argument("[conv] along spatial axis " + std::to_string(i) + " the input of shape " +
                                  shape_to_string(input.shape()) + " (padding " + std::to_string(padding_lo[i]) +
                                  ", " + std::to_string(padding_hi[i]) + ") is smaller than the kernel span " +
                                  std::to_string(span) + " of the weight of shape " +
                                  shape_to_string(weight.shape()) + ".");
    }
    out_spatial[i] = (padded - span) / stride[i] + 1;
  }

  const Dtype dtype = promote_types(input.dtype(), weight.dtype());
  array x = astype(input, dtype, s);
  array w = astype(weight, dtype, s);

  // 1-2. Input dilation, then padding (positive) and cropping (negative).
  std::vector<std::pair<int, int>> widths(x.ndim(), {0, 0});
  bool any_pad = false;
  for (int i = 0; i < d; ++i) {
    x = dilate_axis(x, 1 + i, input_dilation[i], s);
    widths[1 + i] = {std::max(padding_lo[i], 0), std::max(padding_hi[i], 0)};
    any_pad = any_pad || padding_lo[i] > 0 || padding_hi[i] > 0;
  }
  if (any_pad) x = pad(x, widths, array(0, dtype), "constant", s);
  {
    Shape start(x.ndim(), 0), stop = x.shape(), step(x.ndim(), 1);
    for (int i = 0; i < d; ++i) {
      start[1 + i] = std::max(-padding_lo[i], 0);
      stop[1 + i] -= std::max(-padding_hi[i], 0);
    }
    x = slice(x, start, stop, step, s);  // a no-op unless some padding is negative
  }
  if (flip) {
    Shape start(w.ndim(), 0), stop = w.shape(), step(w.ndim(), 1);
    for (int i = 0; i < d; ++i) {
      start[1 + i] = kernel[i] - 1;
      stop[1 + i] = -1 - kernel[i];  // past the front
      step[1 + i] = -1;
    }
    w = slice(w, start, stop, step, s);
  }

  const int n = input.shape(0);
  const int cg = c_in / groups;
  const int cog = c_out / groups;
  const int taps = std::accumulate(kernel.begin(), kernel.end(), 1, std::multiplies<int>());
  Shape out_shape{n};
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  out_shape.push_back(c_out);
  // Half types accumulate in float32, as matmul does for them.
  const Dtype acc = (dtype == float16 || dtype == bfloat16) ? float32 : dtype;

  if (cg == 1 && cog == 1 && taps <= kMaxDepthwiseTaps) {
    // 4b. Depthwise with a small kernel (Mamba's conv1d): one strided view
    // of the input per tap, scaled by that tap's per-channel weight and
    // summed. No patch matrix, and about 3x faster than im2col here.
    array wt = astype(reshape(w, {c_out, taps}, s), acc, s);
    std::optional<array> out;
    for (int t = 0; t < taps; ++t) {
      Shape start(x.ndim(), 0), stop = x.shape(), step(x.ndim(), 1);
      for (int i = d - 1, rest = t; i >= 0; --i) {  // tap t -> kernel index per axis (row-major)
        const int k = rest % kernel[i];
        rest /= kernel[i];
        start[1 + i] = k * kernel_dilation[i];
        stop[1 + i] = start[1 + i] + (out_spatial[i] - 1) * stride[i] + 1;
        step[1 + i] = stride[i];
      }
      Shape col_start{0, t}, col_stop{c_out, t + 1}, col_step{1, 1};
      array tap_w = reshape(slice(wt, col_start, col_stop, col_step, s), {c_out}, s);
      array term = multiply(astype(slice(x, start, stop, step, s), acc, s), tap_w, s);
      out = out ? add(*out, term, s) : term;
    }
    return astype(*out, dtype, s);
  }

  // 3. im2col: after the take on spatial axis i the array is
  // (N, O_0, K_0, ..., O_i, K_i, L_{i+1}, ..., C_in).
  for (int i = 0; i < d; ++i) {
    x = take(x, window_indices(out_spatial[i], kernel[i], stride[i], kernel_dilation[i]), 1 + 2 * i, s);
  }
  const int m = std::accumulate(out_spatial.begin(), out_spatial.end(), n, std::multiplies<int>());

  // Axis order (N, O..., K..., C_in) of the patches.
  std::vector<int> perm{0};
  for (int i = 0; i < d; ++i) perm.push_back(1 + 2 * i);
  for (int i = 0; i < d; ++i) perm.push_back(2 + 2 * i);
  perm.push_back(x.ndim() - 1);

  if (cg == 1 && cog == 1) {
    // 4b'. Depthwise with a large kernel: out[m, c] = sum_k patch[m, k, c] * w[c, k].
    array p = astype(reshape(transpose(x, perm, s), {m, taps, c_in}, s), acc, s);
    array wt = astype(transpose(reshape(w, {c_out, taps}, s), s), acc, s);  // (taps, C)
    array out = sum(multiply(p, wt, s), {1}, false, s);
    return reshape(astype(out, dtype, s), out_shape, s);
  }
  if (groups == 1) {
    array p = reshape(transpose(x, perm, s), {m, taps * c_in}, s);
    array wt = transpose(reshape(w, {c_out, taps * c_in}, s), s);
    return reshape(matmul(p, wt, s), out_shape, s);
  }
  // 4a. Grouped: split the channels into (groups, C_in / groups) and batch
  // the matmul over groups: (G, M, K*Cg) @ (G, K*Cg, Cout/G).
  Shape split = x.shape();
  split.back() = groups;
  split.push_back(cg);
  x = reshape(x, split, s);
  std::vector<int> gperm{x.ndim() - 2};
  gperm.insert(gperm.end(), perm.begin(), perm.end() - 1);
  gperm.push_back(x.ndim() - 1);
  array p = reshape(transpose(x, gperm, s), {groups, m, taps * cg}, s);
  array wt = transpose(reshape(w, {groups, cog, taps * cg}, s), {0, 2, 1}, s);
  array out = transpose(matmul(p, wt, s), {1, 0, 2}, s);  // (M, G, Cout/G)
  return reshape(out, out_shape, s);
}

array conv1d(const array& input, const array& weight, int stride, int padding, int dilation, int groups,
             StreamOrDevice s) {
  return conv_general(input, weight, {stride}, {padding}, {padding}, {dilation}, {1}, groups, false, s);
}

array conv2d(const array& input, const array& weight, const std::array<int, 2>& stride,
             const std::array<int, 2>& padding, const std::array<int, 2>& dilation, int groups, StreamOrDevice s) {
  return conv_general(input, weight, to_vec(stride), to_vec(padding), to_vec(padding), to_vec(dilation), {1, 1},
                      groups, false, s);
}

array conv3d(const array& input, const array& weight, const std::array<int, 3>& stride,
             const std::array<int, 3>& padding, const std::array<int, 3>& dilation, int groups, StreamOrDevice s) {
  return conv_general(input, weight, to_vec(stride), to_vec(padding), to_vec(padding), to_vec(dilation), {1, 1, 1},
                      groups, false, s);
}

// The transposed convolution is the convolution whose input is dilated by the
// stride, padded so every output position sees the kernel's full span, with
// the kernel flipped: each side gets (span - 1 - padding) and the high side
// output_padding more, so the output length is
// (L - 1) * stride - 2 * padding + span + output_padding.
array conv_transpose_general(const array& input, const array& weight, std::vector<int> stride,
                             std::vector<int> padding, std::vector<int> dilation, std::vector<int> output_padding,
                             int groups, StreamOrDevice s) {
  const int d = input.ndim() - 2;
  if (d >= 1 && weight.ndim() == input.ndim() && static_cast<int>(padding.size()) == d &&
      static_cast<int>(dilation.size()) == d && static_cast<int>(output_padding.size()) == d) {
    std::vector<int> lo(d), hi(d);
    for (int i = 0; i < d; ++i) {
      const int span = (weight.shape(1 + i) - 1) * dilation[i] + 1;
      lo[i] = span - 1 - padding[i];
      hi[i] = lo[i] + output_padding[i];
    }
    return conv_general(input, weight, std::vector<int>(d, 1), lo, hi, dilation, stride, groups, true, s);
  }
  // Mismatched ranks: let conv_general report them.
  return conv_general(input, weight, stride, padding, padding, dilation, stride, groups, true, s);
}

array conv_transpose1d(const array& input, const array& weight, int stride, int padding, int dilation,
                       int output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, {stride}, {padding}, {dilation}, {output_padding}, groups, s);
}

array conv_transpose2d(const array& input, const array& weight, const std::array<int, 2>& stride,
                       const std::array<int, 2>& padding, const std::array<int, 2>& dilation,
                       const std::array<int, 2>& output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, to_vec(stride), to_vec(padding), to_vec(dilation),
                                to_vec(output_padding), groups, s);
}

array conv_transpose3d(const array& input, const array& weight, const std::array<int, 3>& stride,
                       const std::array<int, 3>& padding, const std::array<int, 3>& dilation,
                       const std::array<int, 3>& output_padding, int groups, StreamOrDevice s) {
  return conv_transpose_general(input, weight, to_vec(stride), to_vec(padding), to_vec(dilation),
                                to_vec(output_padding), groups, s);
}

// numpy.convolve: slide the shorter array (flipped) over the longer one.
// "full" pads the long one by (short - 1) on both sides; "same" keeps the
// long one's length, centred as numpy centres it; "valid" pads nothing.
array convolve(const array& a, const array& v, const std::string& mode, StreamOrDevice s) {
  if (a.ndim() != 1 || v.ndim() != 1) {
    throw std::invalid_argument("[convolve] inputs must be 1-D, got shapes " + shape_to_string(a.shape()) + " and " +
                                shape_to_string(v.shape()) + ".");
  }
  if (a.size() == 0 || v.size() == 0) throw std::invalid_argument("[convolve] inputs cannot be empty.");
  if (mode != "full" && mode != "same" && mode != "valid") {
    throw std::invalid_argument("[convolve] mode must be 'full', 'same' or 'valid', got '" + mode + "'.");
  }
  const bool swap = v.size() > a.size();
  const array& lng = swap ? v : a;
  const array& sht = swap ? a : v;
  const int k = sht.shape(0);
  int lo = 0, hi = 0;
  if (mode == "full") {
    lo = hi = k - 1;
  } else if (mode == "same") {
    lo = k / 2;
    hi = k - 1 - lo;
  }
  const int n = lng.shape(0);
  array x = reshape(lng, {1, n, 1}, s);
  array w = reshape(sht, {1, k, 1}, s);
  array out = conv_general(x, w, {1}, {lo}, {hi}, {1}, {1}, 1, true, s);
  return reshape(out, {-1}, s);
}

}  // namespace alloy

// Convolutions under MLX's names and layouts. MLX is channels-last: inputs are
// (N, spatial..., C_in), weights (C_out, kernel spatial..., C_in / groups),
// results (N, out spatial..., C_out).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy {

// The general N-d (1 to 3 spatial axes) convolution: every per-axis argument
// holds one entry per spatial axis. Negative padding crops the input.
// input_dilation inserts (d - 1) zeros between input elements (the transposed
// convolution); flip reverses the kernel's spatial axes (true convolution
// rather than cross-correlation).
array conv_general(const array& input, const array& weight, std::vector<int> stride, std::vector<int> padding_lo,
                   std::vector<int> padding_hi, std::vector<int> kernel_dilation, std::vector<int> input_dilation,
                   int groups = 1, bool flip = false, StreamOrDevice s = {});

array conv1d(const array& input, const array& weight, int stride = 1, int padding = 0, int dilation = 1,
             int groups = 1, StreamOrDevice s = {});
array conv2d(const array& input, const array& weight, const std::array<int, 2>& stride = {1, 1},
             const std::array<int, 2>& padding = {0, 0}, const std::array<int, 2>& dilation = {1, 1}, int groups = 1,
             StreamOrDevice s = {});
array conv3d(const array& input, const array& weight, const std::array<int, 3>& stride = {1, 1, 1},
             const std::array<int, 3>& padding = {0, 0, 0}, const std::array<int, 3>& dilation = {1, 1, 1},
             int groups = 1, StreamOrDevice s = {});

// The gradient of a convolution with respect to its input, as MLX defines it:
// the weight keeps the (C_out, kernel..., C_in / groups) layout.
array conv_transpose_general(const array& input, const array& weight, std::vector<int> stride,
                             std::vector<int> padding, std::vector<int> dilation, std::vector<int> output_padding,
                             int groups = 1, StreamOrDevice s = {});
array conv_transpose1d(const array& input, const array& weight, int stride = 1, int padding = 0, int dilation = 1,
                       int output_padding = 0, int groups = 1, StreamOrDevice s = {});
array conv_transpose2d(const array& input, const array& weight, const std::array<int, 2>& stride = {1, 1},
                       const std::array<int, 2>& padding = {0, 0}, const std::array<int, 2>& dilation = {1, 1},
                       const std::array<int, 2>& output_padding = {0, 0}, int groups = 1, StreamOrDevice s = {});
array conv_transpose3d(const array& input, const array& weight, const std::array<int, 3>& stride = {1, 1, 1},
                       const std::array<int, 3>& padding = {0, 0, 0}, const std::array<int, 3>& dilation = {1, 1, 1},
                       const std::array<int, 3>& output_padding = {0, 0, 0}, int groups = 1,
                       StreamOrDevice s = {});

// numpy.convolve of two 1-D arrays; mode is "full", "same" or "valid".
array convolve(const array& a, const array& v, const std::string& mode = "full", StreamOrDevice s = {});

}  // namespace alloy

// Quantization and special matmuls (as mlx.core 0.32.4): quantize,
// dequantize, quantized_matmul, gather_qmm, gather_mm, to_fp8/from_fp8.
// Packed weights are uint32 in MLX's layout (codes as a little-endian bit
// stream per row), so checkpoints quantized by MLX load unchanged.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy {

// mode: "affine" (returns {w_q, scales, biases}), "mxfp4", "mxfp8", "nvfp4"
// (return {w_q, scales}). group_size/bits default per mode.
std::vector<array> quantize(const array& w, std::optional<int> group_size = std::nullopt,
                            std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                            const std::optional<array>& global_scale = std::nullopt, StreamOrDevice s = {});
array dequantize(const array& w, const array& scales, const std::optional<array>& biases = std::nullopt,
                 std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
                 const std::string& mode = "affine", const std::optional<array>& global_scale = std::nullopt,
                 std::optional<Dtype> dtype = std::nullopt, StreamOrDevice s = {});
// x @ dequantize(w).T (transpose) or x @ dequantize(w).
array quantized_matmul(const array& x, const array& w, const array& scales,
                       const std::optional<array>& biases = std::nullopt, bool transpose = true,
                       std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
                       const std::string& mode = "affine", StreamOrDevice s = {});
// x @ w.T with both operands rounded through an MX/NV floating format
// ("nvfp4", "mxfp8", "mxfp4"): x is quantized along its last axis on the fly,
// w is used as given when packed (uint32, with scales) or quantized on the
// fly. The result has x's dtype. Gradients (w given unpacked) are qqmm's of
// the cotangent, as MLX defines them. Global scales: nvfp4 only, both or none.
array qqmm(const array& x, const array& w, const std::optional<array>& scales = std::nullopt,
           std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
           const std::string& mode = "nvfp4", const std::optional<array>& global_scale_x = std::nullopt,
           const std::optional<array>& global_scale_w = std::nullopt, StreamOrDevice s = {});
// qqmm over batch entries of x (..., M, K) and w (..., N, K) picked by flat indices.
array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales = std::nullopt,
                  const std::optional<array>& lhs_indices = std::nullopt,
                  const std::optional<array>& rhs_indices = std::nullopt, std::optional<int> group_size = std::nullopt,
                  std::optional<int> bits = std::nullopt, const std::string& mode = "nvfp4",
                  const std::optional<array>& global_scale_x = std::nullopt,
                  const std::optional<array>& global_scale_w = std::nullopt, bool sorted_indices = false,
                  StreamOrDevice s = {});
// Batched matmul whose operands' batch entries are picked by flat indices.
array gather_mm(const array& a, const array& b, const std::optional<array>& lhs_indices = std::nullopt,
                const std::optional<array>& rhs_indices = std::nullopt, bool sorted_indices = false,
                StreamOrDevice s = {});
array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                 const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
                 bool transpose = true, std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 bool sorted_indices = false, StreamOrDevice s = {});

// out[s] = a[:, start:end] @ b[start:end, :] for each segment s = (start, end)
// in the last axis of segments; result shape segments.shape[:-1] + (M, N).
array segmented_mm(const array& a, const array& b, const array& segments, StreamOrDevice s = {});
// a @ b with block_size x block_size blocks of a, b and the output masked: a
// bool mask drops a block (even its inf/NaN), another mask scales it.
array block_masked_mm(const array& a, const array& b, int block_size = 64,
                      const std::optional<array>& mask_out = std::nullopt,
                      const std::optional<array>& mask_lhs = std::nullopt,
                      const std::optional<array>& mask_rhs = std::nullopt, StreamOrDevice s = {});

// OCP fp8 e4m3 codes (uint8) of x, rounded to nearest even, saturating at 448.
array to_fp8(const array& x, StreamOrDevice s = {});
array from_fp8(const array& x, Dtype dtype = bfloat16, StreamOrDevice s = {});

// Walsh-Hadamard transform along the last axis (Sylvester order), times
// scale (default 1/sqrt(n)); rotations like this spread outliers before
// quantizing. n must be a power of two (MLX also takes 12, 20 or 28 times one).
array hadamard_transform(const array& a, std::optional<float> scale = std::nullopt, StreamOrDevice s = {});

}  // namespace alloy

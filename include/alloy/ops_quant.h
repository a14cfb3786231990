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
// Batched matmul whose operands' batch entries are picked by flat indices.
array gather_mm(const array& a, const array& b, const std::optional<array>& lhs_indices = std::nullopt,
                const std::optional<array>& rhs_indices = std::nullopt, bool sorted_indices = false,
                StreamOrDevice s = {});
array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                 const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
                 bool transpose = true, std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 bool sorted_indices = false, StreamOrDevice s = {});

// OCP fp8 e4m3 codes (uint8) of x, rounded to nearest even, saturating at 448.
array to_fp8(const array& x, StreamOrDevice s = {});
array from_fp8(const array& x, Dtype dtype = bfloat16, StreamOrDevice s = {});

// Walsh-Hadamard transform along the last axis (Sylvester order), times
// scale (default 1/sqrt(n)); rotations like this spread outliers before
// quantizing. n must be a power of two (MLX also takes 12, 20 or 28 times one).
array hadamard_transform(const array& a, std::optional<float> scale = std::nullopt, StreamOrDevice s = {});

}  // namespace alloy

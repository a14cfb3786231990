// The WWDC26 session "Optimize custom machine learning operations with Metal
// tensors" (seed document 004), snippets "MSL type aliases for an MXFP8
// tensor handle" and "Slice tensors and run a quantized matmul", assembled
// into one kernel: C = A * B^T with A (M x K) and B (N x K) in MXFP8 (E4M3
// codes, one E8M0 scale per 32 elements along K), C (M x N) half. One
// TILEM x TILEN tile of C per threadgroup of four SIMD groups.
//
// Two lines differ from the slide (see README.md): a scaled right operand
// must be transposed (its extents are (K, N), so its scale blocks run along
// K), which Apple's compiler requires, so the descriptor says
// transpose_right = true and B's tile is sliced along its dimension 1.
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

constant int TILEM = 64;
constant int TILEN = 32;

using scales_plane = tensor_blockwise<tensor_plane_scales,
                                      device metal_fp8_ue8m0_format,
                                      32, 1>;

using mxfp8_tensor = tensor<device metal_fp8_e4m3_format,
                            dextents<int, 2>,
                            tensor_handle,
                            scales_plane>;

kernel void matmul(mxfp8_tensor matrixA [[buffer(0)]],
                   mxfp8_tensor matrixB [[buffer(1)]],
                   tensor<device half, dextents<int, 2>> matrixC [[buffer(2)]],
                   uint2 tgid [[threadgroup_position_in_grid]])
{
    // Slice the tensors to extract the relevant tile
    auto tA = matrixA.slice(0, tgid.y * TILEM);
    auto tB = matrixB.slice(0, tgid.x * TILEN);
    auto tC = matrixC.slice(tgid.x * TILEN, tgid.y * TILEM);

    // Set up the matmul descriptor
    constexpr auto descriptor = matmul2d_descriptor(TILEM,                  // M
                                                    TILEN,                  // N
                                                    dynamic_length_v<int>,  // K
                                                    false,   // Left matrix transposed
                                                    true);   // Right matrix transposed

    matmul2d<descriptor, execution_simdgroups<4>> op;

    // Run the op — TensorOps handles dequantization automatically
    op.run(tA, tB, tC);
}

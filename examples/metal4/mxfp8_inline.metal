// The seed's "Declare an inline MXFP8 tensor on the stack": the same matmul
// with A and B made in the kernel from their buffers (data and scales as
// plain pointers), K from a constant, and a float destination. The buffers
// are `device const` (the kernel reads them; the slide does not show their
// declarations), so the inline tensor's elements are const too.
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

constant int TILEM = 32;
constant int TILEN = 32;

using scales_plane = tensor_blockwise<tensor_plane_scales,
                                      device metal_fp8_ue8m0_format,
                                      32, 1>;

using mxfp8_tensor_inline = tensor<device const metal_fp8_e4m3_format,
                                   dextents<int, 2>,
                                   tensor_inline,
                                   scales_plane>;

kernel void matmul_inline(device const metal_fp8_e4m3_format* dataBufferA [[buffer(0)]],
                          device const metal_fp8_ue8m0_format* scalesBufferA [[buffer(1)]],
                          device const metal_fp8_e4m3_format* dataBufferB [[buffer(2)]],
                          device const metal_fp8_ue8m0_format* scalesBufferB [[buffer(3)]],
                          device float* bufferC [[buffer(4)]],
                          constant int& M [[buffer(5)]],
                          constant int& N [[buffer(6)]],
                          constant int& K [[buffer(7)]],
                          uint2 tgid [[threadgroup_position_in_grid]])
{
    // Construct tensor on the stack from buffer pointers
    mxfp8_tensor_inline matrixA(dataBufferA,
                                 dextents<int, 2>(K, M),
                                 array<int, 2>({ 1, K }),
                                 scales_plane(scalesBufferA));
    mxfp8_tensor_inline matrixB(dataBufferB,
                                 dextents<int, 2>(K, N),
                                 array<int, 2>({ 1, K }),
                                 scales_plane(scalesBufferB));
    tensor<device float, dextents<int, 2>, tensor_inline> matrixC(bufferC, dextents<int, 2>(N, M));

    auto tA = matrixA.slice(0, tgid.y * TILEM);
    auto tB = matrixB.slice(0, tgid.x * TILEN);
    auto tC = matrixC.slice(tgid.x * TILEN, tgid.y * TILEM);

    constexpr auto descriptor = matmul2d_descriptor(TILEM, TILEN, dynamic_length_v<int>, false, true);
    matmul2d<descriptor, execution_simdgroups<4>> op;
    op.run(tA, tB, tC);
}

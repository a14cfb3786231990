// The WWDC26 session's attention snippets (seed document 004): "Set up
// simdgroup-scoped QxK multiplication", "Compute row-wise reduction for
// SoftMax", "Compute element-wise SoftMax with map_iterator" and "Reuse
// cooperative tensor as matmul input", completed into a flash-attention
// forward pass: O = softmax(scale * Q K^T) V for each head, with the running
// row max and row sum of the online softmax, over blocks of BK keys.
//
// Q, K, V: (heads, S, D) half, row-major; O: (heads, S, D) float. Each SIMD
// group owns ROWS_PER_SIMD query rows; a threadgroup of NSIMD SIMD groups
// covers NSIMD * ROWS_PER_SIMD rows of one head (threadgroup grid:
// (ceil(S / 64), heads)). Keys past S get no weight, so S need not be a
// multiple of anything.
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

constant int D = 64;              // head dimension
constant int ROWS_PER_SIMD = 16;  // query rows per SIMD group
constant int NSIMD = 4;           // SIMD groups per threadgroup
constant int BK = 32;             // keys per block

// A tile of P = exp(S - m) stored through threadgroup memory, and one value
// per query row of a SIMD group.
using score_tile = tensor<threadgroup float, extents<int, BK, ROWS_PER_SIMD>, tensor_inline>;
using row_values = tensor<threadgroup float, extents<int, 1, ROWS_PER_SIMD>, tensor_inline>;
using head_matrix = tensor<device const half, dextents<int, 2>, tensor_inline>;

kernel void flash_attention(device const half* Q [[buffer(0)]],
                            device const half* K [[buffer(1)]],
                            device const half* V [[buffer(2)]],
                            device float* O [[buffer(3)]],
                            constant int& S [[buffer(4)]],
                            constant float& scale [[buffer(5)]],
                            uint2 tgid [[threadgroup_position_in_grid]],
                            uint sgid [[simdgroup_index_in_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]])
{
    threadgroup float tgScores[NSIMD][BK * ROWS_PER_SIMD];
    threadgroup float tgRowMax[NSIMD][ROWS_PER_SIMD];   // running max m of each row
    threadgroup float tgRowSum[NSIMD][ROWS_PER_SIMD];   // running sum l of each row
    threadgroup float tgRowTile[NSIMD][ROWS_PER_SIMD];  // this block's row max, then row sum
    threadgroup float tgRowCorr[NSIMD][ROWS_PER_SIMD];  // exp(m_old - m_new)

    // This head's matrices: (D, S) tensors over row-major S x D memory.
    const long head = long(tgid.y) * long(S) * D;
    head_matrix tQ(Q + head, dextents<int, 2>(D, S));
    head_matrix tK(K + head, dextents<int, 2>(D, S));
    head_matrix tV(V + head, dextents<int, 2>(D, S));
    tensor<device float, dextents<int, 2>, tensor_inline> tO(O + head, dextents<int, 2>(D, S));
    const int row0 = int(tgid.x) * NSIMD * ROWS_PER_SIMD + int(sgid) * ROWS_PER_SIMD;

    score_tile tgTensor(&tgScores[sgid][0], extents<int, BK, ROWS_PER_SIMD>());
    row_values tgMax(&tgRowMax[sgid][0], extents<int, 1, ROWS_PER_SIMD>());
    row_values tgSum(&tgRowSum[sgid][0], extents<int, 1, ROWS_PER_SIMD>());
    row_values tgTile(&tgRowTile[sgid][0], extents<int, 1, ROWS_PER_SIMD>());
    row_values tgCorr(&tgRowCorr[sgid][0], extents<int, 1, ROWS_PER_SIMD>());

    // Setup QxK matrix multiplication op (K's tile is (D, BK): transposed)
    constexpr auto mul_qk_op_desc = matmul2d_descriptor(ROWS_PER_SIMD, BK, D, false, true);
    matmul2d<mul_qk_op_desc, execution_simdgroup> mul_qk_op;
    // O += P V
    constexpr auto mul_sv_op_desc = matmul2d_descriptor(ROWS_PER_SIMD, D, BK, false, false, false,
                                                        matmul2d_descriptor::mode::multiply_accumulate);
    matmul2d<mul_sv_op_desc, metal::execution_simdgroup> mul_sv_op;

    // Slice Q
    auto tQSlice = tQ.slice<D, ROWS_PER_SIMD>(0, row0);
    using v_tile = decltype(tV.slice<D, BK>(0, 0));

    // The output tile starts at 0; no rows seen yet.
    auto ctO = mul_sv_op.get_destination_cooperative_tensor<score_tile, v_tile, float>();
    for (auto it = ctO.begin(); it != ctO.end(); it++)
        *it = 0.0f;
    if (lane < ROWS_PER_SIMD) {
        tgRowMax[sgid][lane] = -INFINITY;
        tgRowSum[sgid][lane] = 0.0f;
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);

    for (int k = 0; k < S; k += BK) {
        // Slice K, V
        auto tKSlice = tK.slice<D, BK>(0, k);
        auto tVSlice = tV.slice<D, BK>(0, k);

        // Create cooperative tensor to store tile of QxK
        auto ctQK = mul_qk_op.get_destination_cooperative_tensor<decltype(tQSlice),
                                                                 decltype(tKSlice),
                                                                 float>();

        // Multiply QxK
        mul_qk_op.run(tQSlice, tKSlice, ctQK);

        // Scale; keys past the end of the sequence get no weight
        for (int i = 0; i < ctQK.get_capacity(); ++i) {
            if (!ctQK.is_valid_element(i))
                continue;
            auto idx = ctQK.get_multidimensional_index(i);
            ctQK[i] = k + idx[0] < S ? ctQK[i] * scale : -INFINITY;
        }

        // Create a cooperative tensor to store row reduction output
        auto ctTileRowMax = mul_qk_op.get_row_reduction_destination_cooperative_tensor<
                                decltype(tQSlice),
                                decltype(tKSlice),
                                float>();

        // Compute max over each row of QxK tile
        reduce_rows(ctQK, ctTileRowMax, reduction_operation::max, -INFINITY);

        // The new running max, and the factor that rescales what came before
        ctTileRowMax.store(tgTile);
        simdgroup_barrier(mem_flags::mem_threadgroup);
        if (lane < ROWS_PER_SIMD) {
            const float m_old = tgRowMax[sgid][lane];
            const float m_new = max(m_old, tgRowTile[sgid][lane]);
            tgRowCorr[sgid][lane] = exp(m_old - m_new);
            tgRowMax[sgid][lane] = m_new;
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);
        auto ctRowMax = mul_qk_op.get_row_reduction_destination_cooperative_tensor<
                            decltype(tQSlice),
                            decltype(tKSlice),
                            float>();
        ctRowMax.load(tgMax);

        // Iterate over elements of QxK tile
        #pragma clang loop unroll(full)
        for (auto it = ctQK.begin(); it != ctQK.end(); it++) {
            // Fetch row max corresponding to this element
            auto row_it = ctRowMax.map_iterator(it);

            // Subtract row max from each element and compute exponent
            *it = exp(*it - *row_it);
        }

        // The running sum: l = l * corr + the block's row sums
        auto ctTileRowSum = mul_qk_op.get_row_reduction_destination_cooperative_tensor<
                                decltype(tQSlice),
                                decltype(tKSlice),
                                float>();
        reduce_rows(ctQK, ctTileRowSum, reduction_operation::sum, 0.0f);
        ctTileRowSum.store(tgTile);
        simdgroup_barrier(mem_flags::mem_threadgroup);
        if (lane < ROWS_PER_SIMD)
            tgRowSum[sgid][lane] = tgRowSum[sgid][lane] * tgRowCorr[sgid][lane] + tgRowTile[sgid][lane];

        // Rescale the rows of O by corr
        auto ctCorr = mul_sv_op.get_row_reduction_destination_cooperative_tensor<score_tile, v_tile, float>();
        ctCorr.load(tgCorr);
        for (auto it = ctO.begin(); it != ctO.end(); it++)
            *it *= *ctCorr.map_iterator(it);

        // O += P V
        if (mul_sv_op.is_compatible_as_left_input<float, half, float>(ctQK)) {
            // Directly reuse cooperative tensor as input
            auto ctQKIn = mul_sv_op.get_left_input_cooperative_tensor<float, half, float>(ctQK);
            mul_sv_op.run(ctQKIn, tVSlice, ctO);
        } else {
            // Store and reload through threadgroup memory if layout is not compatible
            ctQK.store(tgTensor);
            simdgroup_barrier(mem_flags::mem_threadgroup);

            auto ctQKIn = mul_sv_op.get_left_input_cooperative_tensor<float, half, float>();
            ctQKIn.load(tgTensor);
            mul_sv_op.run(ctQKIn, tVSlice, ctO);
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);
    }

    // O / l, written to this SIMD group's rows
    auto ctSum = mul_sv_op.get_row_reduction_destination_cooperative_tensor<score_tile, v_tile, float>();
    ctSum.load(tgSum);
    for (auto it = ctO.begin(); it != ctO.end(); it++)
        *it /= *ctSum.map_iterator(it);
    ctO.store(tO.slice<D, ROWS_PER_SIMD>(0, row0));
}

// Flash attention forward, O = softmax(scale * Q K^T) V per head, written
// with the same Metal 4 pieces as flash_attention.metal (simdgroup-scoped
// matmul2d, cooperative tensors, reduce_rows, map_iterator, a destination
// reused as the next matmul's left input) but laid out the way a fast
// attention kernel is:
//  - the threadgroup's SIMD groups share each block of BK keys: the whole
//    threadgroup copies K and V into threadgroup memory once per block (rows
//    padded by 8 halves so that a SIMD group's reads fall in distinct banks),
//    and the next block's copy is read into registers while this one is
//    multiplied;
//  - each SIMD group loads its Q rows once, as a left-input cooperative
//    tensor that stays with it for the whole loop;
//  - the running row max and row sum are row-reduction cooperative tensors,
//    updated element by element (no threadgroup round trips);
//  - scale * log2(e) is folded into metal::fast::exp2, and P V runs with
//    relaxed precision (P rounded to half, as attention kernels do);
//  - every loop over a cooperative tensor's elements is unrolled in full, so
//    its elements stay in registers.
//
// Q, K, V, O: (heads, S, D) half, row-major. Threadgroup grid:
// (ceil(S / (NSIMD * ROWS)), heads), NSIMD * 32 threads (ROWS 16 unless
// FA_ROWS says otherwise). S need not be a
// multiple of anything: keys past S get no weight, rows past S are not
// written. The shape constants can be set by #defines ahead of this file.
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>

using namespace metal;
using namespace mpp::tensor_ops;

#ifndef FA_D
#define FA_D 128
#endif
#ifndef FA_NSIMD
#define FA_NSIMD 8
#endif
#ifndef FA_BK
#define FA_BK 64
#endif
#ifndef FA_PREFETCH
#define FA_PREFETCH 1
#endif
#ifndef FA_QSHARED
#define FA_QSHARED 0
#endif
#ifndef FA_ROWS
#define FA_ROWS 16
#endif

constant int D = FA_D;           // head dimension (a multiple of 16)
constant int ROWS = FA_ROWS;     // query rows per SIMD group (a multiple of 16)
constant int NSIMD = FA_NSIMD;   // SIMD groups per threadgroup
constant int BK = FA_BK;         // keys per block (a multiple of 16)
constant int LD = D + 8;         // halves per staged row
constant int CHUNKS = BK * D / 8;                 // 16-byte pieces of one K (or V) block
constant int PER_THREAD = CHUNKS / (NSIMD * 32);  // of them each thread copies
constant int ROW_STEP = NSIMD * 32 / (D / 8);     // rows between a thread's pieces

using head_matrix = tensor<device const half, dextents<int, 2>, tensor_inline>;
using staged_block = tensor<threadgroup half, dextents<int, 2>, tensor_inline>;

// Reads this thread's pieces of the K and V block starting at key k0 (zeros
// past S; a whole block is read without the checks).
static void fetch_block(device const half* K, device const half* V, int S, int k0, uint tid,
                        thread uint4* kr, thread uint4* vr)
{
    const long first = long(k0) * D + (tid % (D / 8)) * 8;
    const int row0 = int(tid) / (D / 8);
    if (k0 + BK <= S) {
        for (int j = 0; j < PER_THREAD; ++j) {
            const long at = first + long(row0 + j * ROW_STEP) * D;
            kr[j] = *(device const uint4*)(K + at);
            vr[j] = *(device const uint4*)(V + at);
        }
    } else {
        for (int j = 0; j < PER_THREAD; ++j) {
            const bool in = k0 + row0 + j * ROW_STEP < S;
            const long at = first + long(row0 + j * ROW_STEP) * D;
            kr[j] = in ? *(device const uint4*)(K + at) : uint4(0);
            vr[j] = in ? *(device const uint4*)(V + at) : uint4(0);
        }
    }
}

kernel void flash_attention_tiled(device const half* Q [[buffer(0)]],
                                  device const half* K [[buffer(1)]],
                                  device const half* V [[buffer(2)]],
                                  device half* O [[buffer(3)]],
                                  constant int& S [[buffer(4)]],
                                  constant float& scale [[buffer(5)]],
                                  uint2 tgid [[threadgroup_position_in_grid]],
                                  uint tid [[thread_index_in_threadgroup]],
                                  uint sgid [[simdgroup_index_in_threadgroup]],
                                  uint lane [[thread_index_in_simdgroup]])
{
    static_assert(CHUNKS % (NSIMD * 32) == 0 && (NSIMD * 32) % (D / 8) == 0,
                  "each thread copies whole 16-byte pieces, in the same columns of every row it copies");
    threadgroup half tgK[BK * LD];
    threadgroup half tgV[BK * LD];

    const long head = long(tgid.y) * long(S) * D;
    Q += head;
    K += head;
    V += head;
    const int row0 = (int(tgid.x) * NSIMD + int(sgid)) * ROWS;
    head_matrix tQ(Q, dextents<int, 2>(D, S));
    tensor<device half, dextents<int, 2>, tensor_inline> tO(O + head, dextents<int, 2>(D, S));
    // The staged blocks: K as (D, BK) and V as (D, BK), rows LD apart.
    staged_block sK(tgK, dextents<int, 2>(D, BK), array<int, 2>({ 1, LD }));
    staged_block sV(tgV, dextents<int, 2>(D, BK), array<int, 2>({ 1, LD }));

    // S = Q K^T (K's block is (D, BK): transposed); O += P V.
    constexpr auto qk_desc = matmul2d_descriptor(ROWS, BK, D, false, true);
    matmul2d<qk_desc, execution_simdgroup> qk_op;
    constexpr auto pv_desc = matmul2d_descriptor(ROWS, D, BK, false, false, true,
                                                 matmul2d_descriptor::mode::multiply_accumulate);
    matmul2d<pv_desc, execution_simdgroup> pv_op;

#if FA_QSHARED
    // This SIMD group's Q rows, copied once into threadgroup memory.
    threadgroup half tgQ[NSIMD * ROWS * LD];
    threadgroup half* myQ = tgQ + sgid * ROWS * LD;
    for (int c = int(lane); c < ROWS * D / 8; c += 32) {
        const int r = c / (D / 8), col = (c % (D / 8)) * 8;
        *(threadgroup uint4*)(myQ + r * LD + col) =
            row0 + r < S ? *(device const uint4*)(Q + long(row0 + r) * D + col) : uint4(0);
    }
    simdgroup_barrier(mem_flags::mem_threadgroup);
    staged_block ctQ(myQ, dextents<int, 2>(D, ROWS), array<int, 2>({ 1, LD }));
#else
    auto tQRows = tQ.slice<D, ROWS>(0, row0);
    auto ctQ = qk_op.get_left_input_cooperative_tensor<half, half, float>();
    ctQ.load(tQRows);
#endif

    auto ctO = pv_op.get_destination_cooperative_tensor<decltype(ctQ), staged_block, float>();
    #pragma clang loop unroll(full)
    for (auto it = ctO.begin(); it != ctO.end(); it++)
        *it = 0.0f;
    // Running max (of the raw scores) and sum of each row.
    auto ctMax = qk_op.get_row_reduction_destination_cooperative_tensor<decltype(ctQ), staged_block, float>();
    auto ctSum = qk_op.get_row_reduction_destination_cooperative_tensor<decltype(ctQ), staged_block, float>();
    #pragma clang loop unroll(full)
    for (int i = 0; i < ctMax.get_capacity(); ++i) {
        ctMax[i] = -INFINITY;
        ctSum[i] = 0.0f;
    }
    const float scale_log2 = scale * M_LOG2E_F;

    uint4 kr[PER_THREAD], vr[PER_THREAD];
#if FA_PREFETCH
    fetch_block(K, V, S, 0, tid, kr, vr);
#endif
    for (int k0 = 0; k0 < S; k0 += BK) {
#if !FA_PREFETCH
        fetch_block(K, V, S, k0, tid, kr, vr);
#endif
        threadgroup_barrier(mem_flags::mem_threadgroup);  // the last block is read
        for (int j = 0; j < PER_THREAD; ++j) {
            const int at = (int(tid) / (D / 8) + j * ROW_STEP) * LD + (int(tid) % (D / 8)) * 8;
            *(threadgroup uint4*)(tgK + at) = kr[j];
            *(threadgroup uint4*)(tgV + at) = vr[j];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
#if FA_PREFETCH
        if (k0 + BK < S)
            fetch_block(K, V, S, k0 + BK, tid, kr, vr);
#endif

        auto ctS = qk_op.get_destination_cooperative_tensor<decltype(ctQ), staged_block, float>();
        qk_op.run(ctQ, sK, ctS);
        if (k0 + BK > S) {
            #pragma clang loop unroll(full)
            for (int i = 0; i < ctS.get_capacity(); ++i) {
                if (!ctS.is_valid_element(i))
                    continue;
                auto idx = ctS.get_multidimensional_index(i);
                if (k0 + idx[0] >= S)
                    ctS[i] = -INFINITY;
            }
        }

        // The new running max, and the factor that rescales what came before.
        auto ctTileMax = qk_op.get_row_reduction_destination_cooperative_tensor<decltype(ctQ), staged_block, float>();
        reduce_rows(ctS, ctTileMax, reduction_operation::max, -INFINITY);
        auto ctCorr = qk_op.get_row_reduction_destination_cooperative_tensor<decltype(ctQ), staged_block, float>();
        bool max_moved = false;
        #pragma clang loop unroll(full)
        for (int i = 0; i < ctMax.get_capacity(); ++i) {
            const float m_new = max(ctMax[i], ctTileMax[i]);
            max_moved = max_moved || m_new != ctMax[i];
            ctCorr[i] = fast::exp2((ctMax[i] - m_new) * scale_log2);
            ctMax[i] = m_new;
        }

        // P = exp(scale * (S - m)).
        #pragma clang loop unroll(full)
        for (auto it = ctS.begin(); it != ctS.end(); it++)
            *it = fast::exp2(fma(*it, scale_log2, -*ctMax.map_iterator(it) * scale_log2));

        auto ctTileSum = qk_op.get_row_reduction_destination_cooperative_tensor<decltype(ctQ), staged_block, float>();
        reduce_rows(ctS, ctTileSum, reduction_operation::sum, 0.0f);
        #pragma clang loop unroll(full)
        for (int i = 0; i < ctSum.get_capacity(); ++i)
            ctSum[i] = ctSum[i] * ctCorr[i] + ctTileSum[i];

        // O = O * corr + P V (corr is exactly 1 in rows whose max stayed:
        // when no row of the SIMD group moved, O stays as it is).
        if (simd_any(max_moved)) {
            #pragma clang loop unroll(full)
            for (auto it = ctO.begin(); it != ctO.end(); it++)
                *it *= *ctCorr.map_iterator(it);
        }
        auto ctP = pv_op.get_left_input_cooperative_tensor<float, half, float>(ctS);
        pv_op.run(ctP, sV, ctO);
    }

    // O / l, written to this SIMD group's rows.
    #pragma clang loop unroll(full)
    for (auto it = ctO.begin(); it != ctO.end(); it++)
        *it /= *ctSum.map_iterator(it);
    ctO.store(tO.slice<D, ROWS>(0, row0));
}

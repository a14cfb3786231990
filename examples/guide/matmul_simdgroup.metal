// Using Apple's simdgroup_matrix for tensor-core-equivalent throughput
// Operates on 8x8 tiles; each SIMD group (32 threads) handles one tile
kernel void matmul_simdgroup(
    device const half*  A   [[buffer(0)]],
    device const half*  B   [[buffer(1)]],
    device       float* C   [[buffer(2)]],
    constant uint& M       [[buffer(3)]],
    constant uint& N       [[buffer(4)]],
    constant uint& K       [[buffer(5)]],
    uint2 tgid [[threadgroup_position_in_grid]]
) {
    // Accumulator in float32 (mixed precision)
    simdgroup_matrix<float, 8, 8> acc;
    simdgroup_matrix_initialize(0, acc);

    simdgroup_matrix<half, 8, 8> matA;
    simdgroup_matrix<half, 8, 8> matB;

    ulong2 origin_A = ulong2(0, tgid.y * 8);
    ulong2 origin_B = ulong2(tgid.x * 8, 0);

    for (uint k = 0; k < K; k += 8) {
        // Load 8x8 tile of A from device memory directly
        simdgroup_load(matA, A, N, ulong2(k, tgid.y * 8));
        simdgroup_load(matB, B, N, ulong2(tgid.x * 8, k));

        // Hardware MMA: acc += matA * matB
        simdgroup_multiply_accumulate(acc, matA, matB, acc);
    }

    // Store 8x8 result tile
    simdgroup_store(acc, C, N, ulong2(tgid.x * 8, tgid.y * 8));
}

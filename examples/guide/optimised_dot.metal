// Explicit FMA, unrolled loop, and fast math
kernel void optimised_dot(
    device const half4* a [[buffer(0)]],
    device const half4* b [[buffer(1)]],
    device       float* c [[buffer(2)]],
    constant uint& len   [[buffer(3)]],
    uint id [[thread_position_in_grid]]
) {
    uint base = id * 8;   // 8 halfs per thread (two half4 loads)
    float acc = 0.0f;

    // Unrolled: compiler keeps a[] and b[] in registers
    [[unroll]] for (uint i = 0; i < 2; ++i) {
        half4 av = a[(base/4) + i];
        half4 bv = b[(base/4) + i];
        // float4 FMA: 4 ops fused into hardware instruction
        acc = fma((float)av.x, (float)bv.x, acc);
        acc = fma((float)av.y, (float)bv.y, acc);
        acc = fma((float)av.z, (float)bv.z, acc);
        acc = fma((float)av.w, (float)bv.w, acc);
    }
    // Cross-SIMD-group reduction
    c[id] = simd_sum(acc);
}

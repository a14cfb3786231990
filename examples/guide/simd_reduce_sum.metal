kernel void simd_reduce_sum(
    device const float* input  [[buffer(0)]],
    device float*       output [[buffer(1)]],
    uint gid  [[thread_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg   [[simdgroup_index_in_threadgroup]]
) {
    float val = input[gid];

    // Sum across all 32 lanes — no threadgroup memory needed!
    val = simd_sum(val);

    // Only lane 0 of each SIMD group writes the result
    if (lane == 0) {
        output[sg] = val;
    }
}

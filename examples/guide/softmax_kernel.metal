kernel void softmax_kernel(
    device const float* input        [[buffer(0)]],
    device       float* output       [[buffer(1)]],
    constant uint&  n               [[buffer(2)]],
    threadgroup float* shmem        [[threadgroup(0)]],
    uint gid  [[thread_position_in_grid]],
    uint lid  [[thread_position_in_threadgroup]],
    uint lane [[thread_index_in_simdgroup]]
) {
    float val = (gid < n) ? input[gid] : -INFINITY;
    shmem[lid] = val;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Threadgroup-level reduction via SIMD intrinsics
    float row_max = simd_max(val);   // Faster than manual loop!

    // For multi-SIMD-group threadgroups, do a second pass in shmem
    if (lane == 0) shmem[lid / 32] = row_max;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) {
        for (uint i = 1; i < 8; ++i) shmem[0] = max(shmem[0], shmem[i]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    row_max = shmem[0];

    float exp_val = exp(val - row_max);

    float row_sum = simd_sum(exp_val);
    if (lane == 0) shmem[lid / 32] = row_sum;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) {
        for (uint i = 1; i < 8; ++i) shmem[0] += shmem[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    row_sum = shmem[0];

    if (gid < n) output[gid] = exp_val / row_sum;
}

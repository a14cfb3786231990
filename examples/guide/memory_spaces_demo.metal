kernel void memory_spaces_demo(
    device const float* global_input   [[buffer(0)]],
    device float*       global_output  [[buffer(1)]],
    constant float&     scale          [[buffer(2)]],
    threadgroup float*  shared_tile    [[threadgroup(0)]],
    uint gid [[thread_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]]
) {
    // Thread-private register
    float val = global_input[gid] * scale;

    // Write into on-chip threadgroup memory
    shared_tile[lid] = val;
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // All threads in group have written; safe to read
    global_output[gid] = shared_tile[lid];
}

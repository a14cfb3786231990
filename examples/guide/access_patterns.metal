// BAD: Strided access — threads in a SIMD group read non-contiguous addresses
// Thread 0 reads [0], Thread 1 reads [N], Thread 2 reads [2*N], ...
// This generates N separate cache line loads for one SIMD group
kernel void column_access_bad(
    device const float* mat [[buffer(0)]],
    constant uint& N       [[buffer(1)]],
    uint id [[thread_position_in_grid]]
) {
    float val = mat[id * N];  // Column-major — terrible for row-major storage!
}

// GOOD: Coalesced access — threads read consecutive addresses
// Thread 0 reads [0], Thread 1 reads [1], Thread 2 reads [2], ...
// All 32 threads in a SIMD group satisfied by 1-2 cache line loads
kernel void row_access_good(
    device const float* mat [[buffer(0)]],
    uint id [[thread_position_in_grid]]
) {
    float val = mat[id];  // Sequential — one cache line serves 8+ threads
}

// FIX strided access: transpose into threadgroup memory first
kernel void column_via_transpose(
    device const float* mat      [[buffer(0)]],
    device       float* out      [[buffer(1)]],
    constant uint& N             [[buffer(2)]],
    threadgroup float tile[32][33] [[threadgroup(0)]],  // +1 avoids bank conflict
    uint2 lid  [[thread_position_in_threadgroup]],
    uint2 tgid [[threadgroup_position_in_grid]]
) {
    // Load row of matrix into tile (coalesced)
    tile[lid.y][lid.x] = mat[(tgid.y * 32 + lid.y) * N + tgid.x * 32 + lid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Write column of tile to output (coalesced after transpose)
    out[(tgid.x * 32 + lid.y) * N + tgid.y * 32 + lid.x] = tile[lid.x][lid.y];
}

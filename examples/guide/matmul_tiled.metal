constant uint TILE_SIZE = 16;

kernel void matmul_tiled(
    device const float* A       [[buffer(0)]],  // [M, K]
    device const float* B       [[buffer(1)]],  // [K, N]
    device       float* C       [[buffer(2)]],  // [M, N]
    constant uint& M           [[buffer(3)]],
    constant uint& N           [[buffer(4)]],
    constant uint& K           [[buffer(5)]],
    threadgroup float* tileA   [[threadgroup(0)]],  // TILE x TILE
    threadgroup float* tileB   [[threadgroup(1)]],  // TILE x TILE
    uint2 tgid [[threadgroup_position_in_grid]],
    uint2 lid  [[thread_position_in_threadgroup]]
) {
    uint row = tgid.y * TILE_SIZE + lid.y;
    uint col = tgid.x * TILE_SIZE + lid.x;

    float acc = 0.0f;

    // Iterate over tiles along the K dimension
    for (uint t = 0; t < (K + TILE_SIZE - 1) / TILE_SIZE; ++t) {

        // Cooperatively load a tile of A into threadgroup memory
        uint aRow = row;
        uint aCol = t * TILE_SIZE + lid.x;
        tileA[lid.y * TILE_SIZE + lid.x] =
            (aRow < M && aCol < K) ? A[aRow * K + aCol] : 0.0f;

        // Cooperatively load a tile of B
        uint bRow = t * TILE_SIZE + lid.y;
        uint bCol = col;
        tileB[lid.y * TILE_SIZE + lid.x] =
            (bRow < K && bCol < N) ? B[bRow * N + bCol] : 0.0f;

        // Synchronise: all threads must finish loading before compute
        threadgroup_barrier(mem_flags::mem_threadgroup);

        // Compute dot product of this tile — all reads from fast shmem
        for (uint k = 0; k < TILE_SIZE; ++k) {
            acc += tileA[lid.y * TILE_SIZE + k] *
                   tileB[k * TILE_SIZE + lid.x];
        }

        // Synchronise again before next tile load overwrites shmem
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }

    if (row < M && col < N) C[row * N + col] = acc;
}

// Flash Attention forward pass — O(N) memory, tiled over sequence
constant uint BLOCK_SIZE = 64;   // KV block size (tune for your hardware)

kernel void flash_attention(
    device const half* Q        [[buffer(0)]],  // [B, H, N, D]
    device const half* K        [[buffer(1)]],  // [B, H, N, D]
    device const half* V        [[buffer(2)]],  // [B, H, N, D]
    device       half* Out      [[buffer(3)]],
    constant uint&  N           [[buffer(4)]],  // seq length
    constant uint&  D           [[buffer(5)]],  // head dim
    constant float& scale       [[buffer(6)]],  // 1/sqrt(D)
    threadgroup half*  kv_tile  [[threadgroup(0)]],
    uint q_idx [[thread_position_in_grid]],
    uint lane  [[thread_index_in_simdgroup]]
) {
    if (q_idx >= N) return;

    // Load query vector for this thread's position
    float q[64];  // D ≤ 64 head dim (stored in registers)
    for (uint d = 0; d < D; ++d)
        q[d] = (float)Q[q_idx * D + d];

    // Online softmax accumulators (Dao et al. 2022 trick)
    float m = -INFINITY;  // running max of attention logits
    float s = 0.0f;       // running denominator
    float o[64] = {0};    // running output accumulator

    // Iterate over KV blocks
    for (uint kv_start = 0; kv_start < N; kv_start += BLOCK_SIZE) {
        uint kv_end = min(kv_start + BLOCK_SIZE, N);

        // Load this KV block into threadgroup memory cooperatively
        for (uint i = lane; i < (kv_end - kv_start) * D; i += 32)
            kv_tile[i] = K[(kv_start + i/D) * D + i%D];
        threadgroup_barrier(mem_flags::mem_threadgroup);

        // Compute Q·K^T for this block
        for (uint j = kv_start; j < kv_end; ++j) {
            float score = 0.0f;
            for (uint d = 0; d < D; ++d)
                score += q[d] * (float)kv_tile[(j-kv_start)*D + d];
            score *= scale;

            // Online softmax update
            float m_new = max(m, score);
            float exp_s = exp(score - m_new);
            float correction = exp(m - m_new);
            s = correction * s + exp_s;
            for (uint d = 0; d < D; ++d)
                o[d] = correction * o[d] +
                       exp_s * (float)kv_tile[(j-kv_start)*D + d];
            m = m_new;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }

    // Normalise and write output
    for (uint d = 0; d < D; ++d)
        Out[q_idx * D + d] = (half)(o[d] / s);
}

kernel void add_f32_vec4(
    device const float4* a   [[buffer(0)]],
    device const float4* b   [[buffer(1)]],
    device       float4* out [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    // Each thread processes 4 floats in one 128-bit load
    out[id] = a[id] + b[id];   // SIMD vector arithmetic
}

// For half-precision: 8 elements per thread with float4-equivalent
kernel void add_f16_vec8(
    device const half4* a   [[buffer(0)]],
    device const half4* b   [[buffer(1)]],
    device       half4* out [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    out[2 * id]     = a[2 * id]     + b[2 * id];
    out[2 * id + 1] = a[2 * id + 1] + b[2 * id + 1];
}

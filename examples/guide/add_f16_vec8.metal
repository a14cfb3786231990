// For half-precision: 8 elements per thread with float4-equivalent
kernel void add_f16_vec8(
    device const half8* a   [[buffer(0)]],
    device const half8* b   [[buffer(1)]],
    device       half8* out [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    out[id] = a[id] + b[id];
}

// Fuses: out = gate * silu(up) into one kernel, one device memory read per array
kernel void silu_gate_fused(
    device const half* gate [[buffer(0)]],   // W_gate * x
    device const half* up   [[buffer(1)]],   // W_up * x
    device       half* out  [[buffer(2)]],
    uint4 id [[thread_position_in_grid]]        // process 4 elements per thread
) {
    uint base = id.x * 4;

    // Load 4 halfs using a single 64-bit load
    half4 g = *(device const half4*)(gate + base);
    half4 u = *(device const half4*)(up   + base);

    // SiLU: x * sigmoid(x) = x / (1 + exp(-x))
    float4 gf = (float4)g;
    float4 uf = (float4)u;
    float4 silu_u = uf * (1.0f / (1.0f + exp(-uf)));

    // Fused gate multiply
    *(device half4*)(out + base) = (half4)(gf * silu_u);
}

[[kernel]] void custom_kernel_swizzles_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {

    uint i = thread_position_in_grid.x;
    float4 v = float4(inp[4 * i], inp[4 * i + 1], inp[4 * i + 2], inp[4 * i + 3]);
    float2 lo = v.xy;
    v.zw = lo.yx;
    v.xy += float2(1.0f, 2.0f);
    float4 c = v.bgra;
    c.rgb *= 0.5f;
    float3 t = c.xyz;
    v.x = t.z + c.a;
    device float4* o = (device float4*)out;
    o[i] = v.wzyx;

}

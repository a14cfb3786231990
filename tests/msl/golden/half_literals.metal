[[kernel]] void custom_kernel_half_literals_float16_t_float16_t(
  const device float16_t* inp [[buffer(0)]],
  device float16_t* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {

    uint i = thread_position_in_grid.x;
    half a = 1.0h;
    half b = 0.5H * inp[i] + .25h - 1e-2h;
    half2 v = half2(2.0h, -3.5h);
    out[i] = a + b + v.x * v.y + 1.0f;

}

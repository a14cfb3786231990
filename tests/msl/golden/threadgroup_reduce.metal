template <typename T, int N>
[[kernel]] void custom_kernel_tg_reduce_float_256_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]],
  uint3 thread_position_in_threadgroup [[thread_position_in_threadgroup]],
  uint3 threadgroup_position_in_grid [[threadgroup_position_in_grid]],
  uint3 threads_per_threadgroup [[threads_per_threadgroup]]) {

    #define TILE 32
    threadgroup T partial[N];
    threadgroup float tile[TILE][TILE + 1];
    uint lid = thread_position_in_threadgroup.x;
    uint gid = thread_position_in_grid.x;
    partial[lid] = inp[gid];
    tile[lid % TILE][lid / TILE] = 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup T* p = partial;
    for (uint s = threads_per_threadgroup.x / 2; s > 0; s /= 2) {
        if (lid < s) p[lid] += p[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) {
        out[threadgroup_position_in_grid.x] = ((threadgroup T*)partial)[0];
    }

}

template [[host_name("custom_kernel_tg_reduce_float_256_float_float")]] [[kernel]] decltype(custom_kernel_tg_reduce_float_256_float_float<float, 256>) custom_kernel_tg_reduce_float_256_float_float<float, 256>;

template <typename T>
[[kernel]] void custom_kernel_myexp_float_float_float(
  const device float* inp [[buffer(0)]],
  device float* out [[buffer(1)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {

        uint elem = thread_position_in_grid.x;
        T tmp = inp[elem];
        out[elem] = metal::exp(tmp);
    
}

template [[host_name("custom_kernel_myexp_float_float_float")]] [[kernel]] decltype(custom_kernel_myexp_float_float_float<float>) custom_kernel_myexp_float_float_float<float>;

template <typename T>
[[kernel]] void custom_kernel_myexp_strided_float_float_float(
  const device float* inp [[buffer(0)]],
  const constant int* inp_shape [[buffer(1)]],
  const constant int64_t* inp_strides [[buffer(2)]],
  const constant int& inp_ndim [[buffer(3)]],
  device float* out [[buffer(4)]],
  uint3 thread_position_in_grid [[thread_position_in_grid]]) {

        uint elem = thread_position_in_grid.x;
        // Utils from `mlx/backend/metal/kernels/utils.h` are automatically included
        uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
        T tmp = inp[loc];
        // Output arrays are always row contiguous
        out[elem] = metal::exp(tmp);
    
}

template [[host_name("custom_kernel_myexp_strided_float_float_float")]] [[kernel]] decltype(custom_kernel_myexp_strided_float_float_float<float>) custom_kernel_myexp_strided_float_float_float<float>;

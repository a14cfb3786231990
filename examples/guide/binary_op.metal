// Generic elementwise binary op template
template <typename T, typename Op>
kernel void binary_op(
    device const T* a   [[buffer(0)]],
    device const T* b   [[buffer(1)]],
    device       T* out [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    out[id] = Op{}(a[id], b[id]);
}

// Operation structs — inlined at compile time
struct Add    { template<typename T> T operator()(T x, T y) { return x + y; } };
struct Mul    { template<typename T> T operator()(T x, T y) { return x * y; } };
struct Sub    { template<typename T> T operator()(T x, T y) { return x - y; } };
struct Divide { template<typename T> T operator()(T x, T y) { return x / y; } };
struct Maximum{ template<typename T> T operator()(T x, T y) { return max(x, y); } };

// Explicit instantiations for the metallib
template [[host_name("binary_add_f32")]]
kernel void binary_op<float,  Add>(device const float* , device const float* , device float* , uint);
template [[host_name("binary_add_f16")]]
kernel void binary_op<half,   Add>(device const half*  , device const half*  , device half*  , uint);
template [[host_name("binary_mul_f32")]]
kernel void binary_op<float,  Mul>(device const float* , device const float* , device float* , uint);

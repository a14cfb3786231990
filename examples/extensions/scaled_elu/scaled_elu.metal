// scaled_elu.metal from the guide (seed 001). The page prints the kernels
// without the two lines every Metal file starts with; they are added here.
#include <metal_stdlib>
using namespace metal;

kernel void scaled_elu_f32(
    device const float* x      [[buffer(0)]],
    device       float* out    [[buffer(1)]],
    constant float& alpha     [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    float val = x[id];
    out[id] = (val > 0.0f) ? val : alpha * (exp(val) - 1.0f);
}

// Also instantiate for half precision
kernel void scaled_elu_f16(
    device const half* x     [[buffer(0)]],
    device       half* out   [[buffer(1)]],
    constant float& alpha    [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    float val = (float)x[id];
    out[id]   = (half)((val > 0.0f) ? val : alpha * (exp(val) - 1.0f));
}

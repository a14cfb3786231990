// vector_add.metal from the guide (seed 001), with the two lines every Metal
// file starts with (the page prints the kernels without them).
#include <metal_stdlib>
using namespace metal;

// The 'kernel' qualifier marks this as a compute kernel entry point
// (as opposed to 'vertex' or 'fragment' for graphics)
kernel void vector_add(
    device const float* a   [[buffer(0)]],
    device const float* b   [[buffer(1)]],
    device       float* out [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    out[id] = a[id] + b[id];
}

// Half-precision variant — important for ML workloads
kernel void vector_add_half(
    device const half* a   [[buffer(0)]],
    device const half* b   [[buffer(1)]],
    device       half* out [[buffer(2)]],
    uint id [[thread_position_in_grid]]
) {
    out[id] = a[id] + b[id];
}


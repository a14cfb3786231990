// Two kernels for scripts/probes/context_reset.sh: one that faults, one that works.
extern "C" __global__ void far_write(float* out) { out[threadIdx.x + 0x100000000000ull] = 1.0f; }
extern "C" __global__ void good(float* out) { out[threadIdx.x] = 2.0f * threadIdx.x; }

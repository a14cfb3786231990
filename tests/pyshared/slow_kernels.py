"""An endless Metal kernel that is slow to compile: a header whose 800
inlined steps take the host compiler about a second on two cores (and NVRTC
a few hundred milliseconds), so a test can make a signal arrive while the
kernel is still compiling, before any thread runs it. The loop never ends
(v reaches 2^24 and stays there), and a barrier follows it, so the CPU runs
the threads in regions or fibers, not one plain loop."""

SLOW_TO_COMPILE_HEADER = """
template <int N> struct Chain {
  static float step(float x) { return Chain<N / 2>::step(Chain<(N - 1) / 2>::step(x) * 1.0001f + float(N % 7)); }
};
template <> struct Chain<0> { static float step(float x) { return x; } };
"""
SLOW_TO_COMPILE_SPIN = """
    uint i = thread_position_in_grid.x;
    threadgroup float t[64];
    float v = Chain<800>::step(a[i]);
    while (v > -1.0f) v += 1.0f;
    t[thread_position_in_threadgroup.x] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = t[0];
"""

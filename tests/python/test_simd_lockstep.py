"""Kernels that lean on a SIMD group's lanes running in lockstep, as Apple's
GPUs run them: threadgroup memory one lane writes and another reads between
two statements with no barrier. The CPU runs a group's threads one after the
other between barriers, and nvcc keeps a lane's element in a register across
such statements, so both translations get a barrier between them
(msl/lockstep.h); before, these gave wrong numbers and no error. References:
numpy float64 on the same inputs.
"""
import numpy as np
import pytest

import alloy.core as mx
from conftest import DEVICE

# A layer norm of each row of D values by one SIMD group (the shape of
# xLSTM-metal's per-head layer norm): every lane reads the mean from buf[0],
# then writes its own partial sum of squares into buf[lane], with no barrier
# between the read and the write.
# Lane 0 adds the 32 partial sums in buf into buf[0], between barriers.
GROUP_TOTAL = """
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lane == 0u) {
        float total = 0.0f;
        for (uint l = 0u; l < 32u; ++l) total += buf[l];
        buf[0] = total;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);"""
LAYER_NORM = f"""
    uint gid = thread_position_in_grid.x;
    uint lane = gid & 31u;
    uint row = gid / 32u;
    uint D = x_shape[1];
    threadgroup float buf[32];
    float s = 0.0f;
    for (uint i = lane; i < D; i += 32u) s += x[row * D + i];
    buf[lane] = s;{GROUP_TOTAL}
    float mean = buf[0] / float(D);
    float q = 0.0f;
    for (uint i = lane; i < D; i += 32u) {{ float d = x[row * D + i] - mean; q += d * d; }}
    buf[lane] = q;{GROUP_TOTAL}
    float inv = rsqrt(buf[0] / float(D) + 1e-6f);
    for (uint i = lane; i < D; i += 32u) out[row * D + i] = (x[row * D + i] - mean) * inv;
"""


@pytest.mark.parametrize("D", [32, 77, 256])
def test_a_read_then_other_lanes_writes_without_a_barrier(rng, D):
    rows = 5
    x = rng.standard_normal((rows, D)).astype(np.float32) * 3 + 1
    k = mx.fast.metal_kernel(name="lockstep_layer_norm", input_names=["x"], output_names=["out"], source=LAYER_NORM)
    (out,) = k(inputs=[mx.array(x)], output_shapes=[(rows, D)], output_dtypes=[mx.float32],
               grid=(rows * 32, 1, 1), threadgroup=(32, 1, 1), init_value=float("nan"))
    x64 = x.astype(np.float64)
    want = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(np.array(out), want, rtol=1e-4, atol=1e-4)


def reduction(steps):
    """The warp-synchronous end of a tree reduction: the first SIMD group adds
    halves of a 64-wide buffer in `steps` (the lines inside its `if`), with
    no barrier between them."""
    return f"""
    uint tid = thread_position_in_threadgroup.x;
    uint g = threadgroup_position_in_grid.x;
    threadgroup float s[64];
    s[tid] = x[g * 64 + tid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid < 32) {{
{steps}
    }}
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) out[g] = s[0];
"""


# Six steps, one a statement; the same steps as a loop, one a trip.
WARP_REDUCTION = reduction("\n".join(f"        s[tid] += s[tid + {k}];" for k in (32, 16, 8, 4, 2, 1)))
LOOP_REDUCTION = reduction("        for (uint k = 32; k > 0; k >>= 1) s[tid] += s[tid + k];")


@pytest.mark.parametrize("source", [WARP_REDUCTION, LOOP_REDUCTION], ids=["steps", "loop"])
def test_a_warp_synchronous_reduction(rng, source):
    groups = 7
    x = rng.uniform(-1, 2, groups * 64).astype(np.float32)
    k = mx.fast.metal_kernel(name="lockstep_reduction", input_names=["x"], output_names=["out"], source=source)
    (out,) = k(inputs=[mx.array(x)], output_shapes=[(groups,)], output_dtypes=[mx.float32],
               grid=(groups * 64, 1, 1), threadgroup=(64, 1, 1), init_value=float("nan"))
    np.testing.assert_allclose(np.array(out), x.astype(np.float64).reshape(groups, 64).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(DEVICE != "cpu", reason="the barriers are written into the CPU's translation")
def test_the_translation_says_where_lanes_wait(rng, capfd):
    k = mx.fast.metal_kernel(name="lockstep_note", input_names=["x"], output_names=["out"], source=WARP_REDUCTION)
    x = mx.array(rng.standard_normal(64).astype(np.float32))
    (out,) = k(inputs=[x], output_shapes=[(1,)], output_dtypes=[mx.float32], grid=(64, 1, 1),
               threadgroup=(64, 1, 1), verbose=True)
    mx.eval(out)
    printed = capfd.readouterr().out
    assert "// Barriers are written in at lines 9, 10, 11, 12, 13: the body shares threadgroup memory" in printed
    # One SIMD-group barrier before each step but the first, in the
    # translation that runs, none in the Metal form shown before it.
    metal_form, translation = printed.split("translated for the CPU")
    assert "simdgroup_barrier" not in metal_form
    assert translation.count("simdgroup_barrier(mem_flags::mem_threadgroup)") == 5

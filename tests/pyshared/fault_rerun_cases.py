"""Kernels whose CPU launch stops with a memory fault, for the bounds-checked
rerun (backend/cpu/custom_kernel.cpp) through Alloy's own metal_kernel and
through alloy.mlx. Each reads or writes 2^62 bytes past a buffer, an address
no process maps (past x86-64's canonical range; past AArch64's too), so the
first launch faults on every run. `mx` is the framework under test
(alloy.core or mlx.core); launches go to its CPU stream, bounds_check off."""
import numpy as np
import pytest

FAR = 60  # the far element: 2^60 elements of 4 bytes past the buffer

# Every thread reads; one in three reads far and selects the value away
# (multiplied by 0 and subtracted, so the compiler keeps the load), as the
# seed's grid_sample reads all four corners and zeroes those outside.
SELECTED_AWAY_READ = """
    uint i = thread_position_in_grid.x;
    bool far = i % 3 == 1;
    long j = far ? long(i) + (long(1) << FAR) : long(i);
    float v = x[j];
    float keep = far ? 0.0f : 1.0f;
    out[i] = keep * 2.0f * v + (keep - 1.0f);
"""

# The same read before a barrier, the value passed through threadgroup
# memory to the neighbour: the kernel runs as regions, or fibers
# (ALLOY_CPU_SYNC), whose faulting group is abandoned before the rerun.
SELECTED_AWAY_READ_WITH_BARRIER = """
    uint i = thread_position_in_grid.x;
    uint t = thread_position_in_threadgroup.x;
    threadgroup float shared[64];
    bool far = i % 3 == 1;
    long j = far ? long(i) + (long(1) << FAR) : long(i);
    float v = x[j];
    float keep = far ? 0.0f : 1.0f;
    shared[t] = keep * 2.0f * v + (keep - 1.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = shared[t ^ 1];
"""

# The last thread's read is far. `out` starts at init_value and each thread
# adds to its element: a rerun that did not start the outputs afresh would
# add twice where the first launch got to.
ACCUMULATING_READ = """
    uint i = thread_position_in_grid.x;
    bool far = i == N - 1;
    long j = far ? long(i) + (long(1) << FAR) : long(i);
    float v = x[j];
    out[i] += far ? 0.0f * v : v;
"""

# The same reads, the first threadgroup held back by a dependent loop, so
# that on more than one worker later groups make their far reads first.
SELECTED_AWAY_READ_LATE_FIRST_GROUP = """
    uint i = thread_position_in_grid.x;
    float hold = 0.0f;
    if (threadgroup_position_in_grid.x == 0)
        for (uint k = 0; k < HOLD; ++k) hold = fma(hold, 0.5f, x[i]);
    bool far = i % 3 == 1;
    long j = far ? long(i) + (long(1) << FAR) : long(i);
    float v = x[j];
    float keep = far ? 0.0f : 1.0f;
    out[i] = keep * 2.0f * v + (keep - 1.0f) + 0.0f * hold;
"""

# Thread 5 writes far: the rerun names the write.
FAR_WRITE = """
    uint i = thread_position_in_grid.x;
    long j = i == 5 ? long(i) + (long(1) << FAR) : long(i);
    out[j] = x[i];
"""

# A read through a pointer the checks do not see.
POINTER_READ = """
    uint i = thread_position_in_grid.x;
    const device float* p = x + (long(1) << FAR);
    out[i] = i == 7 ? p[i] : x[i];
"""


def run(mx, name, source, x, init_value=None, **template):
    k = mx.fast.metal_kernel(name=name, input_names=["x"], output_names=["out"], source=source)
    n = x.shape[0]
    (out,) = k(inputs=[x], template=[("FAR", FAR)] + list(template.items()), grid=(n, 1, 1),
               threadgroup=(64, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32], init_value=init_value,
               stream=mx.cpu)
    return out


def selected_away_expected(a):
    i = np.arange(a.size)
    return np.where(i % 3 == 1, -1.0, 2.0 * a.astype(np.float64))


def selected_away_with_barrier_expected(a):
    """Each thread's neighbour (t ^ 1) in groups of 64 (a.size a multiple of 64)."""
    return selected_away_expected(a)[np.arange(a.size) ^ 1]


def accumulating_expected(a, init):
    want = init + a.astype(np.float64)
    want[-1] = init
    return want


# The checks both suites run, on `mx` (alloy.core or mlx.core with alloy.mlx).

def check_read_selected_away_runs_and_warns_once(mx, rng, capfd):
    a = rng.standard_normal(1000).astype(np.float32)
    before = mx.array(a) * 2
    mx.eval(before)
    out = np.array(run(mx, "selected_away_read", SELECTED_AWAY_READ, mx.array(a)))
    np.testing.assert_allclose(out, selected_away_expected(a), rtol=1e-6)
    err = capfd.readouterr().err
    # Threads 1, 4, 7... read far, in parallel; the warning names thread 1's
    # read (the first in grid order) whichever ran first.
    assert "[metal_kernel] kernel 'selected_away_read' stopped with a memory fault on the CPU; a bounds-checked " \
           f"rerun found an out-of-bounds read of input 'x' (input 0) at index {1 + 2**FAR}; it has 1000 " \
           "elements. Thread (1, 0, 0), source line 5:\n" in err, err
    assert "float v = x[j];" in err and "element 0" in err
    # Later launches run checked from the start: the same numbers, no second warning.
    b = rng.standard_normal(1000).astype(np.float32)
    out = np.array(run(mx, "selected_away_read", SELECTED_AWAY_READ, mx.array(b)))
    np.testing.assert_allclose(out, selected_away_expected(b), rtol=1e-6)
    assert "stopped with a memory fault" not in capfd.readouterr().err
    np.testing.assert_array_equal(np.array(before), a * 2)


def check_warning_names_the_first_thread_in_grid_order(mx, rng, capfd):
    """Threads run in any order on the CPU's workers: the warning still names
    the first far read in grid order (thread 1), not the first recorded."""
    a = rng.standard_normal(64 * 2048).astype(np.float32)  # enough groups to be spread over workers
    out = np.array(run(mx, "late_first_group", SELECTED_AWAY_READ_LATE_FIRST_GROUP, mx.array(a), HOLD=5000000))
    np.testing.assert_allclose(out, selected_away_expected(a), rtol=1e-6)
    err = capfd.readouterr().err
    assert f"at index {1 + 2**FAR}; it has {a.size} elements. Thread (1, 0, 0), source line 8:\n" in err, err


def check_rerun_starts_the_outputs_afresh(mx, rng):
    init = float(rng.uniform(1, 2))
    a = rng.standard_normal(4096).astype(np.float32)
    out = run(mx, "accumulating_read", ACCUMULATING_READ, mx.array(a), init_value=init, N=a.size)
    # init + a in float32: within half an ulp of 3 (1.2e-7) of float64's sum.
    np.testing.assert_allclose(np.array(out), accumulating_expected(a, init), rtol=1e-6, atol=3e-7)


def check_write_out_of_bounds_is_named_by_the_rerun(mx, rng):
    a = rng.standard_normal(300).astype(np.float32)
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'far_write': out-of-bounds write to output 'out' "
                                           rf"\(output 0\) at index {5 + 2**FAR}; it has 300 elements\. "
                                           r"Thread \(5, 0, 0\), source line 4:\n\s*out\[j\] = x\[i\];\n"
                                           r"\(found by a bounds-checked rerun after this fault: .*SIGSEGV"):
        mx.eval(run(mx, "far_write", FAR_WRITE, mx.array(a)))
    # The kernel was not marked to run checked: it faults (and is named) again.
    with pytest.raises(RuntimeError, match="out-of-bounds write to output 'out'"):
        mx.eval(run(mx, "far_write", FAR_WRITE, mx.array(a)))
    assert (mx.ones(3) + 1).tolist() == [2.0, 2.0, 2.0]

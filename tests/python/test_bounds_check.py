"""metal_kernel's bounds-checked mode (issue 14, item 1): with
compile_options={"bounds_check": True} (or $ALLOY_BOUNDS_CHECK=1, which the
test suite sets) every subscript of an input, output or threadgroup array
checks its index; the first access out of bounds raises a RuntimeError naming
the kernel, the buffer, the index, its size, the thread and the user's line,
and the process keeps working. In-bounds kernels give the same numbers as
unchecked ones. Runs on the suite's device (CPU in CI, GPU in gpu_check)."""
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import alloy.core as mx

CHECKED = {"bounds_check": True}


def run(name, source, inputs, n, threadgroup=64, options=CHECKED, out_shape=None, **kw):
    k = mx.fast.metal_kernel(name=name, input_names=["a"], output_names=["out"], source=source,
                             compile_options=options, ensure_row_contiguous=kw.get("ensure_row_contiguous", True))
    return k(inputs=inputs, grid=(n, 1, 1), threadgroup=(threadgroup, 1, 1),
             output_shapes=[out_shape or (n,)], output_dtypes=[mx.float32], init_value=kw.get("init_value"))[0]


def test_suite_runs_with_bounds_checks_on(rng):
    # The conftest turns checks on for every kernel of the suite.
    assert os.environ.get("ALLOY_BOUNDS_CHECK") == "1"
    a = rng.standard_normal(64).astype(np.float32)
    with pytest.raises(RuntimeError, match="out-of-bounds read of input 'a'"):
        mx.eval(run("default_checked", "out[thread_position_in_grid.x] = a[thread_position_in_grid.x + 1u];",
                    [mx.array(a)], 64, options=None))


@pytest.mark.parametrize("case", ["write_output", "read_input", "negative", "compound"])
def test_out_of_bounds_access_names_kernel_buffer_index_thread_and_line(rng, case):
    n = 256
    a = rng.standard_normal(n).astype(np.float32)
    source, pattern = {
        "write_output": ("uint i = thread_position_in_grid.x;\n"
                         "out[i + 400000000u] = a[i];",
                         r"out-of-bounds write to output 'out' \(output 0\) at index (\d+); it has 256 elements"),
        "read_input": ("uint i = thread_position_in_grid.x;\n"
                       "out[i] = a[i * 3u];",
                       r"out-of-bounds read of input 'a' \(input 0\) at index (\d+); it has 256 elements"),
        "negative": ("int i = int(thread_position_in_grid.x);\n"
                     "out[i] = a[i - 7];",
                     r"out-of-bounds read of input 'a' \(input 0\) at index (-\d+); it has 256 elements"),
        "compound": ("uint i = thread_position_in_grid.x;\n"
                     "out[i] = 0.0f;\n"
                     "out[i + 256u] += a[i];",
                     r"out-of-bounds write to output 'out' \(output 0\) at index (\d+); it has 256 elements"),
    }[case]
    name = f"oob_{case}"
    with pytest.raises(RuntimeError) as e:
        mx.eval(run(name, source, [mx.array(a)], n))
    msg = str(e.value)
    assert f"kernel '{name}'" in msg, msg
    m = re.search(pattern, msg)
    assert m, msg
    index = int(m.group(1))
    t = re.search(r"Thread \((\d+), 0, 0\), source line (\d+):\n\s+(.*)", msg)
    assert t, msg
    thread, line = int(t.group(1)), int(t.group(2))
    # The reported index is the one that thread computed, on the line quoted.
    expected = {"write_output": thread + 400000000, "read_input": thread * 3, "negative": thread - 7,
                "compound": thread + 256}[case]
    assert index == expected, msg
    assert not (0 <= index < n)
    assert t.group(3).strip() == source.splitlines()[line - 1].strip()


def test_threadgroup_arrays_are_checked_in_each_dimension(rng):
    n = 128
    a = rng.standard_normal(n).astype(np.float32)
    source = """
        uint l = thread_position_in_threadgroup.x;
        threadgroup float tile[4][16];
        tile[l / 16u][l % 16u] = a[thread_position_in_grid.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[thread_position_in_grid.x] = tile[l / 16u][(l % 16u) + 16u * (l == 40u)];
    """
    with pytest.raises(RuntimeError, match=r"out-of-bounds read of threadgroup array 'tile' in its dimension 1 "
                                           r"at index 24; the dimension has 16\. Thread \((40|104), 0, 0\)"):
        mx.eval(run("tg_oob", source, [mx.array(a)], n))
    # The first dimension, and the same kernel in bounds.
    first = source.replace("tile[l / 16u][(l % 16u) + 16u * (l == 40u)]", "tile[(l / 16u) + 4u * (l == 3u)][l % 16u]")
    with pytest.raises(RuntimeError, match=r"threadgroup array 'tile' at index 4; the dimension has 4\."):
        mx.eval(run("tg_oob_first", first, [mx.array(a)], n))
    fine = source.replace(" + 16u * (l == 40u)", "")
    np.testing.assert_array_equal(np.array(run("tg_fine", fine, [mx.array(a)], n)), a)


def test_checked_kernels_give_the_same_numbers(rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    source = """
        uint i = thread_position_in_grid.x;
        if (i >= a_shape[0]) return;
        float s = a[i];
        for (int k = 1; k < 4; ++k) s += a[(i + k) % a_shape[0]] * float(k);
        out[i] = s;
    """
    ref = sum(np.roll(a.astype(np.float64), -k) * k for k in range(1, 4)) + a
    checked = run("same_numbers", source, [mx.array(a)], n)
    unchecked = run("same_numbers", source, [mx.array(a)], n, options={"bounds_check": False})
    np.testing.assert_array_equal(np.array(checked), np.array(unchecked))
    np.testing.assert_allclose(np.array(checked), ref, rtol=1e-5, atol=1e-5)


def test_broadcast_inputs_are_checked_against_their_own_data(rng):
    # A broadcast input holds 8 elements; elem_to_loc keeps every read inside.
    row = rng.standard_normal(8).astype(np.float32)
    b = mx.broadcast_to(mx.array(row), (16, 8))
    source = """
        uint i = thread_position_in_grid.x;
        out[i] = a[elem_to_loc(i, a_shape, a_strides, a_ndim)];
    """
    out = run("broadcast_checked", source, [b], 128, ensure_row_contiguous=False, out_shape=(16, 8))
    np.testing.assert_array_equal(np.array(out), np.broadcast_to(row, (16, 8)))


def test_after_a_fault_earlier_results_hold_and_new_work_runs(rng):
    a = rng.standard_normal(64).astype(np.float32)
    before = mx.array(a) * 3
    mx.eval(before)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="out-of-bounds write"):
            mx.eval(run("again_oob", "out[thread_position_in_grid.x * 1000u + 5u] = 1.0f;", [mx.array(a)], 64))
    np.testing.assert_array_equal(np.array(before), a * 3)
    ok = run("after_oob", "uint i = thread_position_in_grid.x; out[i] = a[i] + 1.0f;", [mx.array(a)], 64)
    np.testing.assert_allclose(np.array(ok), a + 1)


def test_eight_threads_launch_while_one_kernel_faults(rng):
    a = rng.standard_normal(512).astype(np.float32)
    results, errors = {}, {}

    def worker(w):
        try:
            if w == 3:
                mx.eval(run("threaded_oob", "out[thread_position_in_grid.x + 512u] = a[0];", [mx.array(a)], 512))
            else:
                src = f"uint i = thread_position_in_grid.x; out[i] = a[i] * {w}.0f;"
                results[w] = np.array(run(f"threaded_ok_{w}", src, [mx.array(a)], 512))
        except Exception as e:  # noqa: BLE001 (collected, asserted below)
            errors[w] = e

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(errors) == {3} and isinstance(errors[3], RuntimeError), errors
    msg = str(errors[3])
    assert "kernel 'threaded_oob'" in msg and "out-of-bounds write to output 'out'" in msg, msg
    for w, r in results.items():
        np.testing.assert_allclose(r, a * w, rtol=1e-6)


def test_the_option_is_checked_and_overrides_the_environment(rng):
    k = lambda opts: mx.fast.metal_kernel(name="opt", input_names=["a"], output_names=["out"],  # noqa: E731
                                          source="out[0] = a[0];", compile_options=opts)
    with pytest.raises(TypeError, match="bounds_check"):
        k({"bounds_check": "yes"})
    with pytest.raises(ValueError, match="unknown compile option 'bounds'"):
        k({"bounds": True})
    # Explicitly off: an access one past the end is not checked (a read, which
    # stays inside the allocation's slack).
    a = rng.standard_normal(64).astype(np.float32)
    src = "uint i = thread_position_in_grid.x; out[i] = (i == 63u) ? 0.0f : a[i + 1u];"
    out = run("unchecked_read", src, [mx.array(a)], 64, options={"bounds_check": False})
    np.testing.assert_array_equal(np.array(out)[:63], a[1:])


@pytest.mark.parametrize("env,raises", [("1", True), ("0", False)])
def test_alloy_bounds_check_sets_the_default(env, raises):
    code = ("import alloy.core as mx\n"
            "k = mx.fast.metal_kernel(name='env_oob', input_names=['a'], output_names=['out'], "
            "source='uint i = thread_position_in_grid.x; out[i] = a[(i + 1u) % 64u] + a[i * (i < 64u ? 1u : 0u) + 64u * (i == 3u)];')\n"
            "o = k(inputs=[mx.ones(64)], grid=(64,1,1), threadgroup=(32,1,1), output_shapes=[(64,)], "
            "output_dtypes=[mx.float32])[0]\n"
            "try:\n    mx.eval(o); print('ran')\nexcept RuntimeError as e:\n    print('raised:', e)\n")
    env_vars = dict(os.environ, ALLOY_BOUNDS_CHECK=env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env_vars)
    assert r.returncode == 0, r.stderr
    if raises:
        assert "raised:" in r.stdout and "input 'a' (input 0) at index 67" in r.stdout, r.stdout
    else:
        assert "ran" in r.stdout, r.stdout

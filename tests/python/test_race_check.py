"""ALLOY_RACE_CHECK=1: two threads of a group on one element of a threadgroup
array with no barrier between them, one of them writing, is a RuntimeError
naming the kernel, the array, the element, both threads and both source
lines, instead of numbers that differ from the GPU's. Found in mhc-mlx's
fused backward kernel (tests/python/test_real_mlx_mhc.py): every thread reads
the first sum from reduce_buf[0] while lane 0 already writes the second there.
CPU kernels split into regions are checked; the GPU ignores the setting."""
import re

import numpy as np
import pytest

import alloy.core as mx

# Every thread reads buf[0] while lane 0 rewrites it: the mhc-mlx pattern.
READ_WHILE_LANE0_WRITES = """
uint lane = thread_position_in_threadgroup.x;
threadgroup float buf[64];
buf[lane] = inp[thread_position_in_grid.x];
threadgroup_barrier(mem_flags::mem_threadgroup);
float first = buf[0];
BARRIER
buf[lane] = first + 1.0f;
threadgroup_barrier(mem_flags::mem_threadgroup);
out[thread_position_in_grid.x] = buf[lane] + buf[(lane + 1) % 64];
"""

# Every even lane writes the same element.
WRITES_TOGETHER = """
uint lane = thread_position_in_threadgroup.x;
threadgroup float buf[4];
if (lane % 2 == 0) buf[1] = inp[thread_position_in_grid.x];
threadgroup_barrier(mem_flags::mem_threadgroup);
out[thread_position_in_grid.x] = buf[1];
"""

# Lanes 0..6 read tile[2][3] before lane 7 writes it (a 2-D array: element 2 * 5 + 3).
WRITE_AFTER_OTHERS_READ = """
uint lane = thread_position_in_threadgroup.x;
threadgroup float tile[4][5];
if (lane < 20) tile[lane / 5][lane % 5] = inp[lane];
threadgroup_barrier(mem_flags::mem_threadgroup);
float v = tile[2][3];
if (lane == 7) tile[2][3] = -1.0f;
out[thread_position_in_grid.x] = v;
"""


def run(source, name, n=64, tg=64, **kw):
    """One group by default: with several, the workers race to report first."""
    k = mx.fast.metal_kernel(name=name, input_names=["inp"], output_names=["out"], source=source)
    x = mx.array(np.arange(n, dtype=np.float32))
    return k(inputs=[x], grid=(n, 1, 1), threadgroup=(tg, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32],
             stream=mx.cpu, **kw)[0]


def line_of(source, text):
    return next(i for i, s in enumerate(source.splitlines(), 1) if s.strip().startswith(text))


@pytest.fixture
def race_check(monkeypatch):
    monkeypatch.setenv("ALLOY_RACE_CHECK", "1")


def test_a_read_of_what_another_thread_wrote_with_no_barrier_is_named(race_check):
    src = READ_WHILE_LANE0_WRITES.replace("BARRIER", "")
    with pytest.raises(RuntimeError) as e:
        mx.eval(run(src, "race_read_write"))
    msg = str(e.value)
    assert "kernel 'race_read_write'" in msg and "race on 'buf' element 0" in msg, msg
    write_line, read_line = line_of(src, "buf[lane] = first"), line_of(src, "float first")
    assert f"thread (0, 0, 0) wrote it at source line {write_line}:\n    buf[lane] = first + 1.0f;" in msg, msg
    assert f"thread (1, 0, 0) read it at source line {read_line}:\n    float first = buf[0];" in msg, msg
    assert "the read may see either value" in msg


def test_the_same_kernel_with_its_barrier_passes_and_gives_the_unchecked_numbers(race_check, monkeypatch, capfd):
    src = READ_WHILE_LANE0_WRITES.replace("BARRIER", "threadgroup_barrier(mem_flags::mem_threadgroup);")
    checked = np.array(run(src, "race_fixed", n=128, verbose=True))
    assert "Race check: accesses to threadgroup arrays are checked between barriers." in capfd.readouterr().out
    monkeypatch.setenv("ALLOY_RACE_CHECK", "0")  # the switch is read at each definition
    unchecked = np.array(run(src, "race_fixed", n=128, verbose=True))
    assert "Race check" not in capfd.readouterr().out
    # Each group of 64: buf[lane] = inp[group start] + 1 for every lane.
    want = np.repeat(np.arange(0, 128, 64, dtype=np.float32) + 1, 64) * 2
    assert checked.shape == want.shape
    np.testing.assert_array_equal(checked, want)
    np.testing.assert_array_equal(unchecked, want)


def test_two_threads_writing_one_element_is_named(race_check):
    with pytest.raises(RuntimeError, match=r"race on 'buf' element 1: thread \(0, 0, 0\) wrote it at source line 4:"
                                           r"[\s\S]*thread \(2, 0, 0\) wrote it at source line 4[\s\S]*"
                                           r"the element may keep either value"):
        mx.eval(run(WRITES_TOGETHER, "race_write_write"))


def test_a_write_after_other_threads_read_is_named_with_the_element_of_a_2d_array(race_check):
    with pytest.raises(RuntimeError) as e:
        mx.eval(run(WRITE_AFTER_OTHERS_READ, "race_2d"))
    msg = str(e.value)
    assert "race on 'tile' element 13" in msg, msg
    assert re.search(r"thread \(0, 0, 0\) read it at source line 6:\n    float v = tile\[2\]\[3\];\nand "
                     r"thread \(7, 0, 0\) wrote it at source line 7", msg), msg


def test_earlier_results_stay_and_later_launches_run(race_check, rng):
    a = mx.array(rng.standard_normal(64).astype(np.float32))
    b = a * 2
    mx.eval(b)
    with pytest.raises(RuntimeError, match="race on 'buf'"):
        mx.eval(run(WRITES_TOGETHER, "race_then_go_on"))
    np.testing.assert_array_equal(np.array(b), np.array(a) * 2)
    src = READ_WHILE_LANE0_WRITES.replace("BARRIER", "threadgroup_barrier(mem_flags::mem_threadgroup);")
    assert np.array(run(src, "race_after")).shape == (64,)


def test_threads_of_different_groups_never_race(race_check):
    # Each group's lane 0 writes buf[0] and every lane reads it after a
    # barrier; 16 groups in turn on the same workers.
    src = """
    uint lane = thread_position_in_threadgroup.x;
    threadgroup float buf[1];
    if (lane == 0) buf[0] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_position_in_grid.x] = buf[0];
    """
    got = np.array(run(src, "race_groups", n=1024, tg=64))
    np.testing.assert_array_equal(got, np.repeat(np.arange(0, 1024, 64, dtype=np.float32), 64))


def test_kernels_that_run_as_fibers_are_not_checked_and_say_so(race_check, monkeypatch, capfd):
    monkeypatch.setenv("ALLOY_CPU_SYNC", "fibers")
    mx.eval(run(WRITES_TOGETHER, "race_fibers", verbose=True))
    assert "Race check: not done: only kernels whose threads run as regions are checked." in capfd.readouterr().out


def test_the_switch_takes_0_or_1(monkeypatch):
    monkeypatch.setenv("ALLOY_RACE_CHECK", "yes")
    with pytest.raises(ValueError, match="ALLOY_RACE_CHECK must be 0 or 1, not 'yes'"):
        mx.fast.metal_kernel(name="race_switch", input_names=["inp"], output_names=["out"], source="out[0] = 1;")

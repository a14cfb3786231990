"""Through alloy.mlx on MLX's CPU stream, as through Alloy's own
metal_kernel (tests/python/test_fault_rerun.py): a launch stopped by a
memory fault is rerun bounds-checked; a read of an input out of bounds then
reads its element 0 (with a warning), anything else is named. MLX's own
allocator places inputs at the start of their own mappings, where the seed's
grid_sample, reading corners outside the image before it zeroes them, used
to stop with SIGSEGV. Runs on the CPU stream under either MLX backend."""
import pathlib
import sys

import mlx.core as mx
import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "pyshared"))
import fault_rerun_cases as cases  # noqa: E402


@pytest.fixture(autouse=True)
def unchecked(plugin, monkeypatch):
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")


def test_a_read_selected_away_runs_and_warns_once(rng, capfd):
    a = rng.standard_normal(1000).astype(np.float32)
    before = mx.array(a) * 2
    mx.eval(before)
    out = np.array(cases.run(mx, "selected_away_read", cases.SELECTED_AWAY_READ, mx.array(a)))
    np.testing.assert_allclose(out, cases.selected_away_expected(a), rtol=1e-6)
    err = capfd.readouterr().err
    assert "[metal_kernel] kernel 'selected_away_read' stopped with a memory fault on the CPU: it read input 'x' " \
           f"out of bounds (index {1 + 2**cases.FAR}; it has 1000 elements)" in err
    b = rng.standard_normal(1000).astype(np.float32)
    out = np.array(cases.run(mx, "selected_away_read", cases.SELECTED_AWAY_READ, mx.array(b)))
    np.testing.assert_allclose(out, cases.selected_away_expected(b), rtol=1e-6)
    assert "stopped with a memory fault" not in capfd.readouterr().err
    np.testing.assert_array_equal(np.array(before), a * 2)


def test_the_rerun_starts_the_outputs_afresh(rng):
    init = float(rng.uniform(1, 2))
    a = rng.standard_normal(4096).astype(np.float32)
    out = cases.run(mx, "accumulating_read", cases.ACCUMULATING_READ, mx.array(a), init_value=init, N=a.size)
    np.testing.assert_allclose(np.array(out), cases.accumulating_expected(a, init), rtol=1e-6, atol=3e-7)


def test_a_write_out_of_bounds_is_named_by_the_rerun(rng):
    a = rng.standard_normal(300).astype(np.float32)
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'far_write': out-of-bounds write to output 'out' "
                                           rf"\(output 0\) at index {5 + 2**cases.FAR}; it has 300 elements\. "
                                           r"Thread \(5, 0, 0\), source line 4.*found by a bounds-checked rerun"):
        mx.eval(cases.run(mx, "far_write", cases.FAR_WRITE, mx.array(a)))
    assert (mx.ones(3) + 1).tolist() == [2.0, 2.0, 2.0]

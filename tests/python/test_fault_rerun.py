"""A metal_kernel launch on the CPU stopped by a memory fault is rerun
bounds-checked: a read of an input out of bounds (which a Metal GPU answers
with whatever lies there) then reads the input's element 0, with a warning,
and the kernel runs bounds-checked from then on; any other access out of
bounds is named (buffer, index, thread, the user's line). The kernels:
tests/pyshared/fault_rerun_cases.py."""
import sys
import pathlib

import numpy as np
import pytest

import alloy.core as mx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "pyshared"))
import fault_rerun_cases as cases  # noqa: E402


@pytest.fixture(autouse=True)
def unchecked(monkeypatch):
    # The suite checks bounds by default (conftest); these kernels must fault first.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")


def test_a_read_selected_away_runs_and_warns_once(rng, capfd):
    cases.check_read_selected_away_runs_and_warns_once(mx, rng, capfd)


def test_a_read_selected_away_before_a_barrier(rng):
    a = rng.standard_normal(640).astype(np.float32)
    out = cases.run(mx, "selected_away_read_barrier", cases.SELECTED_AWAY_READ_WITH_BARRIER, mx.array(a))
    np.testing.assert_allclose(np.array(out), cases.selected_away_with_barrier_expected(a), rtol=1e-6)


def test_the_warning_names_the_first_thread_in_grid_order(rng, capfd):
    cases.check_warning_names_the_first_thread_in_grid_order(mx, rng, capfd)


def test_the_rerun_starts_the_outputs_afresh(rng):
    cases.check_rerun_starts_the_outputs_afresh(mx, rng)


def test_a_write_out_of_bounds_is_named_by_the_rerun(rng):
    cases.check_write_out_of_bounds_is_named_by_the_rerun(mx, rng)


def test_a_fault_the_checks_do_not_see_stays_the_fault(rng):
    a = rng.standard_normal(100).astype(np.float32)
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'pointer_read'.*SIGSEGV.*a bounds-checked rerun faulted "
                                           r"too: the access is not a subscript"):
        mx.eval(cases.run(mx, "pointer_read", cases.POINTER_READ, mx.array(a)))
    assert (mx.ones(3) + 1).tolist() == [2.0, 2.0, 2.0]


def test_bounds_check_on_raises_at_the_read(rng, monkeypatch):
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "1")
    a = rng.standard_normal(100).astype(np.float32)
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'selected_away_read_checked': out-of-bounds read of input 'x' "
                                           r"\(input 0\) at index \d+.*\(bounds_check is on"):
        mx.eval(cases.run(mx, "selected_away_read_checked", cases.SELECTED_AWAY_READ, mx.array(a)))

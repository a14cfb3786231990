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
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "pyshared"))
import fault_rerun_cases as cases  # noqa: E402


@pytest.fixture(autouse=True)
def unchecked(plugin, monkeypatch):
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")


def test_a_read_selected_away_runs_and_warns_once(rng, capfd):
    cases.check_read_selected_away_runs_and_warns_once(mx, rng, capfd)


def test_the_warning_names_the_first_thread_in_grid_order(rng, capfd):
    cases.check_warning_names_the_first_thread_in_grid_order(mx, rng, capfd)


def test_the_rerun_starts_the_outputs_afresh(rng):
    cases.check_rerun_starts_the_outputs_afresh(mx, rng)


def test_a_write_out_of_bounds_is_named_by_the_rerun(rng):
    cases.check_write_out_of_bounds_is_named_by_the_rerun(mx, rng)

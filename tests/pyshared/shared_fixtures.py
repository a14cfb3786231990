"""What both Python suites share (tests/python on alloy.core, tests/mlx_plugin
on real MLX): the seeded random generator fixture and float64 references."""
import os
import random

import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """Fresh random inputs on each run; the seed is printed so a failure can be
    replayed with ALLOY_TEST_SEED."""
    seed = int(os.environ.get("ALLOY_TEST_SEED", random.SystemRandom().randrange(2**32)))
    print(f"\n[{request.node.name}] seed={seed}")
    return np.random.default_rng(seed)


def grid_sample_numpy(x, grid):
    """Bilinear grid_sample with zero padding, align_corners=False, in float64:
    the reference of the seed's grid_sample (x is NHWC, grid NHW2 in [-1, 1])."""
    x = np.asarray(x, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    N, H, W, C = x.shape
    ix = ((grid[..., 0] + 1) * W - 1) / 2
    iy = ((grid[..., 1] + 1) * H - 1) / 2
    out = np.zeros(grid.shape[:3] + (C,))
    x0, y0 = np.floor(ix).astype(int), np.floor(iy).astype(int)
    for dy in (0, 1):
        for dx in (0, 1):
            xs, ys = x0 + dx, y0 + dy
            w = (1 - np.abs(ix - xs)) * (1 - np.abs(iy - ys))
            ok = (xs >= 0) & (xs < W) & (ys >= 0) & (ys < H)
            vals = x[np.arange(N)[:, None, None], np.clip(ys, 0, H - 1), np.clip(xs, 0, W - 1)]
            out += (w * ok)[..., None] * vals
    return out


def grid_sample_grid_grad_numeric(x, grid, cot):
    """d sum(grid_sample(x, grid) * cot) / d grid by central differences of
    the float64 reference (each grid point moves only its own output pixel,
    so one perturbation per component), and the mask of the grid points away
    from pixel boundaries: where ix or iy is within float32 rounding or the
    step of an integer the derivative jumps, the central difference averages
    its two sides and a kernel takes one."""
    eps = 1e-6
    want = np.zeros(grid.shape)
    for c in range(2):
        step = np.zeros(grid.shape)
        step[..., c] = eps
        up = (grid_sample_numpy(x, grid + step) * cot).sum(-1)
        down = (grid_sample_numpy(x, grid - step) * cot).sum(-1)
        want[..., c] = (up - down) / (2 * eps)
    H, W = x.shape[1:3]
    g64 = np.asarray(grid, dtype=np.float64)
    pos = np.stack([((g64[..., 0] + 1) * W - 1) / 2, ((g64[..., 1] + 1) * H - 1) / 2], -1)
    smooth = (np.abs(pos - np.round(pos)) > 1e-4).all(-1)
    return want, smooth


def assert_compile_error_on_line(error, source, line, message):
    """A kernel compile error's text says `message`, names `source:<line>`
    and quotes that line of the user's source."""
    text = str(error)
    assert message in text, text
    assert f"source:{line}" in text, text
    assert source.splitlines()[line - 1].strip() in text, text

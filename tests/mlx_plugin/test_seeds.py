"""Every seed example on real MLX with `import alloy.mlx`: the numbers of a
float64 numpy reference, and of Alloy's own metal_kernel on the same inputs."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import mlx.core as mx

import alloy.core as ax
from seeds import SEEDS, load
from shared_fixtures import grid_sample_grid_grad_numeric, grid_sample_numpy

sys.path.insert(0, str(SEEDS))


def test_exp_elementwise_float16(plugin, rng):
    seed = load("exp_elementwise")  # runs the seed's own assert
    a = rng.standard_normal((33, 70)).astype(np.float16)
    b = seed.exp_elementwise(mx.array(a))
    assert isinstance(b, mx.array) and b.dtype == mx.float16 and b.shape == a.shape
    np.testing.assert_allclose(np.array(b, dtype=np.float64), np.exp(a.astype(np.float64)), rtol=2e-3, atol=2e-3)


def test_exp_strided_reads_a_non_contiguous_input(plugin, rng):
    seed = load("exp_strided")
    a = rng.standard_normal((8, 16)).astype(np.float32)
    x = mx.array(a)[::2, 1::3]  # strided: the kernel walks its strides itself
    b = seed.exp_elementwise(x)
    np.testing.assert_allclose(np.array(b), np.exp(a[::2, 1::3].astype(np.float64)), rtol=1e-6, atol=1e-6)


def grid_inputs(rng, B=2, H=9, W=11, C=5, gh=6, gw=7):
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    grid = rng.uniform(-1.1, 1.1, (B, gh, gw, 2)).astype(np.float32)
    return x, grid


def test_grid_sample_forward_matches_numpy_and_alloy(plugin, rng):
    seed = load("grid_sample")
    x, grid = grid_inputs(rng)
    got = np.array(seed.grid_sample(mx.array(x), mx.array(grid)))
    np.testing.assert_allclose(got, grid_sample_numpy(x, grid), rtol=1e-5, atol=1e-5)
    # Alloy's own path on the same inputs, same translation: the same numbers.
    import grid_sample as alloy_seed  # Alloy's copy of the seed (examples/seeds)
    own = np.array(alloy_seed.grid_sample(ax.array(x), ax.array(grid)))
    np.testing.assert_array_equal(got, own)


def test_grid_sample_vjp_under_grad_matches_mlx_autodiff(plugin, rng):
    seed = load("grid_sample")
    # C over a SIMD group: the VJP kernel's padded path. Even H and W: the
    # seed's VJP scales by the integer W / 2 and H / 2, as Metal computes them.
    x, grid = grid_inputs(rng, H=10, W=12, C=40)
    cot = rng.standard_normal((2, 6, 7, 40)).astype(np.float32)
    xm, gm, cm = mx.array(x), mx.array(grid), mx.array(cot)

    def loss_kernel(x, g):
        return (seed.grid_sample(x, g) * cm).sum()

    dx, dg = mx.grad(loss_kernel, argnums=(0, 1))(xm, gm)
    # MLX's autodiff through the seed's grid_sample_ref gives d/dx (it
    # refuses d/dgrid: the reference gathers at indices computed from grid).
    rx = mx.grad(lambda x: (seed.grid_sample_ref(x, gm) * cm).sum())(xm)
    np.testing.assert_allclose(np.array(dx), np.array(rx), rtol=1e-4, atol=1e-4)
    # d/dgrid against central differences of the float64 reference, away
    # from pixel boundaries (one point in about 4% of runs sits on one).
    want, smooth = grid_sample_grid_grad_numeric(x, grid, cot)
    np.testing.assert_allclose(np.array(dg)[smooth], want[smooth], rtol=1e-3, atol=1e-3)


def test_llama_mlp_fused_gate_forward_and_vjp(plugin, rng):
    seed = load("llama_mlp")
    gate = rng.standard_normal((3, 40)).astype(np.float16)
    up = rng.standard_normal((3, 40)).astype(np.float16)
    g64, u64 = gate.astype(np.float64), up.astype(np.float64)
    sig = 1 / (1 + np.exp(-u64))
    got = seed.silu_gate_fused(mx.array(gate), mx.array(up))
    assert got.dtype == mx.float16
    np.testing.assert_allclose(np.array(got, dtype=np.float64), g64 * u64 * sig, rtol=4e-3, atol=4e-3)
    dg, du = mx.grad(lambda g, u: seed.silu_gate_fused(g, u).astype(mx.float32).sum(), argnums=(0, 1))(
        mx.array(gate), mx.array(up))
    np.testing.assert_allclose(np.array(dg, dtype=np.float64), u64 * sig, rtol=4e-3, atol=4e-3)
    np.testing.assert_allclose(np.array(du, dtype=np.float64), g64 * sig * (1 + u64 * (1 - sig)), rtol=4e-3, atol=4e-3)
    # The seed's module: a Llama MLP whose hidden layer is the fused kernel.
    mlp = seed.LlamaMLP(16, 32)
    mlp.set_dtype(mx.float16)
    x = mx.array(rng.standard_normal((2, 16)).astype(np.float16))
    h = mlp.gate_proj(x) * mx.sigmoid(mlp.up_proj(x).astype(mx.float32)).astype(mx.float16) * mlp.up_proj(x)
    np.testing.assert_allclose(np.array(mlp(x), dtype=np.float64), np.array(mlp.down_proj(h), dtype=np.float64),
                               rtol=2e-2, atol=2e-2)


# The seed on the benchmark's shape with a grid past +-1, in a process of its
# own. It loads all four corners before zeroing those outside the image, so
# samples past the image's corners read up to 14 rows of pixels before `x`'s
# first element and after its last. Whether that memory is mapped depends on
# where MLX's allocator put `x`: on its CPU allocator such a read has faulted
# (the launch is then rerun bounds-checked, backend/cpu/custom_kernel.cpp);
# on its CUDA allocator a fault would lose the GPU's context, and with it the
# rest of the run, hence the process of its own.
PAST_THE_EDGE = """
import pathlib
import sys
import numpy as np
import mlx.core as mx
import alloy.mlx
from seeds import load
if sys.argv[1] == "gpu":
    mx.set_default_device(mx.gpu)
rng = np.random.default_rng(int(sys.argv[2]))
x = rng.standard_normal((2, 256, 256, 64)).astype(np.float32)
grid = rng.uniform(-1.1, 1.1, (2, 128, 128, 2)).astype(np.float32)
grid[:, 0, 0] = (-1.1, -1.1)  # corners before x's first pixel and past its last, on every seed
grid[:, -1, -1] = (1.1, 1.1)
xm, gm = mx.array(x), mx.array(grid)
seed = load("grid_sample")
out = seed.grid_sample(xm, gm)
np.save(sys.argv[3], np.array(out))
np.save(sys.argv[4], x)
np.save(sys.argv[5], grid)
if sys.argv[1] == "gpu":
    # Launched again until the build specialized to these layouts, whose
    # read clamp takes the inputs' sizes as constants, is in place; then once more.
    import alloy.core as ax
    for _ in range(4):
        mx.eval(seed.grid_sample(xm, gm))
    ax.fast._wait_for_specialized_kernels()
    assert ax.fast._specialized_kernels_built() >= 1, "no specialized build was made"
    np.save(sys.argv[6], np.array(seed.grid_sample(xm, gm)))
"""


def test_grid_sample_past_the_edge_at_the_benchmark_shape(rng, tmp_path):
    here = pathlib.Path(__file__).resolve().parent
    env = dict(os.environ, ALLOY_BOUNDS_CHECK="0",
               PYTHONPATH=os.pathsep.join([str(here), str(here.parent / "pyshared"), os.environ.get("PYTHONPATH", "")]))
    files = [str(tmp_path / f) for f in ("out.npy", "x.npy", "grid.npy", "specialized.npy")]
    device = os.environ.get("ALLOY_TEST_DEVICE", "cpu")  # conftest's choice (alloy.mlx makes mx.gpu the default)
    r = subprocess.run([sys.executable, "-c", PAST_THE_EDGE, device, str(int(rng.integers(2**31))), *files],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, f"the seed past the edge on {device} stopped ({r.returncode}):\n{r.stderr[-3000:]}"
    out, x, grid = (np.load(f) for f in files[:3])
    np.testing.assert_allclose(out, grid_sample_numpy(x, grid), rtol=1e-4, atol=1e-4)
    if device == "gpu":
        np.testing.assert_allclose(np.load(files[3]), grid_sample_numpy(x, grid), rtol=1e-4, atol=1e-4)

"""Scientific packages' Metal kernels, unchanged on Alloy (files from PyPI,
tests/real_mlx_code_requirements.txt):

- elome 0.22.1: exoplanet transit light curves. Its float32 path runs fused
  Metal kernels (forward, and VJPs that end in `if (metal::simd_is_first())`
  after a `metal::simd_sum`) under `mx.grad`; its float64 path is the same
  model as MLX ops, the reference here.
- mlx-nufft 0.3.3: non-uniform FFTs (types 1 and 3) whose kernels spread,
  pad and gather complex64 values in double-float arithmetic, against the
  direct sums in numpy complex128.
"""
import numpy as np

import alloy.core as mx
from real_mlx_code import load


F32_EPS = 2.0 ** -23


def as64(x):
    return np.array(x).astype(np.float64)


def test_elome_transit_flux_and_its_gradients(rng):
    kernel = load("elome.metal", "alloy", kernels=True)
    ops = load("elome.metal", "alloy", kernels=False)
    n, m = 3, 257
    z = rng.uniform(0.0, 1.3, (n, m))
    r, u1, u2 = rng.uniform(0.05, 0.15, n), rng.uniform(0.1, 0.5, n), rng.uniform(0.0, 0.3, n)
    tau = rng.uniform(-0.15, 0.15, (n, m))
    f32 = lambda a: mx.array(a.astype(np.float32))  # noqa: E731
    P, a, b = 3.0, 10.0, 0.3

    got = kernel.flux_dev_metal(f32(z), f32(r), f32(u1), f32(u2))
    with mx.stream(mx.cpu):
        want = ops.flux_dev_metal(z, mx.array(r), mx.array(u1), mx.array(u2))
    np.testing.assert_allclose(as64(got), as64(want), rtol=0, atol=2e-6)

    def loss(module, dtype, **kw):
        u = (mx.array(u1.astype(dtype)), mx.array(u2.astype(dtype)))
        return lambda t, rr: mx.sum(module.flux_dev_from_tau(t, P, a, b, rr, *u, **kw) ** 2)

    for kw in [{}, {"secosw": 0.2, "sesinw": -0.1}]:  # circular and eccentric orbits
        got = mx.grad(loss(kernel, np.float32, **kw), argnums=(0, 1))(f32(tau), f32(r))
        with mx.stream(mx.cpu):
            grad64 = mx.grad(loss(ops, np.float64, **kw), argnums=(0, 1))
            want = grad64(mx.array(tau), mx.array(r))
            # The float64 gradient again on inputs moved by one float32 ulp,
            # both ways: how far float32's roundings move each element. Some
            # elements are ill-conditioned (seed 2912994183: tau[2, 124]
            # moved by 1e-7 of itself moves its gradient by 3.6e-7, and the
            # kernel's float32 result is 7.1e-7 off, with 2e-5 of the
            # largest being 3.7e-7); a wrong formula misses by far more.
            nudged = [grad64(mx.array(tau * (1 + s * F32_EPS)), mx.array(r * (1 + s * F32_EPS))) for s in (1, -1)]
        for g, w, up, down in zip(got, want, *nudged):
            w = as64(w)
            moved = np.maximum(np.abs(as64(up) - w), np.abs(as64(down) - w))
            np.testing.assert_array_less(np.abs(as64(g) - w), 2e-5 * np.abs(w).max() + 16 * moved)
    launched = kernel.__port_loader__.kernels_launched()
    assert {"mp_flux_fwd", "mp_tau_g_vjp_circ", "mp_tau_g_vjp_ecc"} <= launched, launched


def test_mlx_nufft_types_1_and_3(rng):
    nf = load("mlx_nufft", "alloy", kernels=True)
    M, N = 200, 32
    x = rng.uniform(-np.pi, np.pi, M)
    c = rng.standard_normal(M) + 1j * rng.standard_normal(M)
    k = np.arange(-N // 2, N // 2)
    want = (c[None, :] * np.exp(1j * k[:, None] * x[None, :])).sum(1)
    got = np.asarray(nf.nufft1d1(x, c, N, eps=1e-6))
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-5

    x3, s = rng.uniform(-3, 3, M), rng.uniform(-20, 20, 50)
    want = (c[None, :] * np.exp(1j * s[:, None] * x3[None, :])).sum(1)
    got = np.asarray(nf.nufft1d3(x3, c, s, eps=1e-6))
    # Type 3 runs the package's fp32 pipeline at its floor (eps below 1e-6
    # is clamped) with upsampling 1.25: over 100 seeds the relative error
    # reached 1.2e-5 on both devices (seed 7: 1.02e-5), so 1e-5 failed about
    # one seed in thirty. A mistranslated kernel is off by 1e-2 or more.
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 4e-5
    launched = nf.__port_loader__.kernels_launched()
    assert {"t1spread1d", "t3spread", "t3gather_xyz"} <= launched and any(n.startswith("nufft_dft") for n in launched)

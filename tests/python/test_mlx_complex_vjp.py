"""Differential tests against real MLX: gradients through complex values.

MLX's VJP of a holomorphic function multiplies the cotangent by the
conjugate of the derivative (ct * conj(f'(z)); for matmul the conjugate
transposes), |z| and real/imag/conjugate by their own rules. Alloy follows
it op by op, so a model that rotates by complex numbers (RoPE through
view_as_complex) gets MLX's gradients."""
import numpy as np
import pytest

import mlx.core as mlx_core
from mlx_oracle import same

HOLOMORPHIC = ["exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sqrt", "rsqrt", "square", "reciprocal",
               "log1p", "log2", "log10", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "negative"]


def complex_array(rng, shape, low=0.3, high=0.9):
    return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(np.complex64)


@pytest.mark.parametrize("name", HOLOMORPHIC + ["abs", "real", "imag", "conjugate"])
def test_unary_vjp_of_complex(rng, name):
    z, ct = complex_array(rng, (2, 3)), complex_array(rng, (2, 3), -1, 1)
    if name in ("abs", "real", "imag"):
        ct = ct.real.copy()  # their outputs are real
    same(lambda m, a, c: m.vjp(lambda t: [getattr(m, name)(t)], [a], [c])[1][0], z, ct)


@pytest.mark.parametrize("name", ["multiply", "divide", "add", "subtract", "power"])
def test_binary_vjp_of_complex(rng, name):
    z, w, ct = complex_array(rng, (2, 3)), complex_array(rng, (2, 3)), complex_array(rng, (2, 3), -1, 1)
    same(lambda m, a, b, c: m.vjp(lambda s, t: [getattr(m, name)(s, t)], [a, b], [c])[1], z, w, ct)


@pytest.mark.parametrize("expr", ["matmul", "prod", "logsumexp", "softmax", "outer", "einsum", "tensordot", "addmm",
                                  "cumprod", "var", "fft"])
def test_composite_vjp_of_complex(rng, expr):
    z = complex_array(rng, (3, 3))
    fns = {
        "matmul": lambda m, t: m.matmul(t, t.T * 2),
        "prod": lambda m, t: m.prod(t, axis=1),
        "logsumexp": lambda m, t: m.logsumexp(t, axis=1),
        "softmax": lambda m, t: m.softmax(t, axis=1),
        "outer": lambda m, t: m.outer(t[0], t[1]),
        "einsum": lambda m, t: m.einsum("ij,kj->ik", t, t),
        "tensordot": lambda m, t: m.tensordot(t, t, axes=([1], [1])),
        "addmm": lambda m, t: m.addmm(t, t, t.T, alpha=2.0, beta=0.5),
        "cumprod": lambda m, t: m.cumprod(t, axis=1),
        "var": lambda m, t: m.var(t, axis=1),
        "fft": lambda m, t: m.fft.fft(t),
    }
    f = fns[expr]
    out = f(mlx_core, mlx_core.array(z))  # the cotangent takes the output's shape and kind
    ct = complex_array(rng, out.shape, -1, 1)
    if out.dtype != mlx_core.complex64:
        ct = ct.real.copy()
    same(lambda m, a, c: m.vjp(lambda t: [f(m, t)], [a], [c])[1][0], z, ct)


def test_grad_through_a_complex_rotation_as_mlx(rng):
    """A real input rotated by e^(i theta) and read back (RoPE's pattern):
    grad of imag(x * 1j) is 1, and of a rotation its inverse on the cotangent."""
    x = rng.standard_normal((4,)).astype(np.float32)
    theta = rng.uniform(-3, 3, (4,)).astype(np.float32)
    same(lambda m, a: m.grad(lambda t: m.imag(t * 1j).sum())(a), x)
    same(lambda m, a, th: m.grad(lambda t: (m.real(t * m.exp(1j * th)) * m.arange(4)).sum())(a), x, theta)

"""The guide's ScaledELU extension (seed 001): a custom Primitive in C++ whose
eval_gpu / eval_cpu dispatch scaled_elu.metal through Alloy's command
encoder, built out of tree with find_package(Alloy) + nanobind. The module is
found in $SCALED_ELU_MODULE_DIR (where `make test-example` builds it)."""
import os
import sys

import numpy as np
import pytest

import alloy.core as mx

sys.path.insert(0, os.environ.get("SCALED_ELU_MODULE_DIR", os.path.dirname(os.path.abspath(__file__))))
from my_custom_ops import scaled_elu  # noqa: E402

DEVICES = [mx.cpu] + ([mx.gpu] if mx.is_available(mx.gpu) else [])


@pytest.fixture(params=DEVICES, ids=lambda d: str(d))
def device(request):
    before = mx.default_device()
    mx.set_default_device(request.param)
    yield request.param
    mx.set_default_device(before)


def test_the_guides_printed_values(device):
    # The page's Python, as written.
    x = mx.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    y = scaled_elu(x, alpha=1.0)
    mx.eval(y)
    np.testing.assert_allclose(np.array(y), [-0.865, -0.632, 0.0, 1.0, 2.0], atol=5e-4)
    grad_fn = mx.grad(lambda x: mx.sum(scaled_elu(x, alpha=1.0)))
    dx = grad_fn(x)
    mx.eval(dx)
    np.testing.assert_allclose(np.array(dx), [0.135, 0.368, 1.0, 1.0, 1.0], atol=5e-4)


@pytest.mark.parametrize("n", [1, 1000, 5000])
@pytest.mark.parametrize("dtype,tol", [(mx.float32, 1e-6), (mx.float16, 2e-3)])
def test_against_numpy(device, n, dtype, tol):
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    alpha = float(rng.uniform(0.1, 3.0))
    x = mx.array((rng.standard_normal(n) * 3).astype(np.float32)).astype(dtype)
    y = scaled_elu(x, alpha=alpha)
    assert y.dtype == dtype and y.shape == x.shape
    xf = np.array(x).astype(np.float64)
    ref = np.where(xf > 0, xf, np.float32(alpha) * np.expm1(xf))
    np.testing.assert_allclose(np.array(y).astype(np.float64), ref, rtol=tol, atol=tol)
    g = mx.grad(lambda v: mx.sum(scaled_elu(v, alpha=alpha) * 2))(x)
    np.testing.assert_allclose(np.array(g).astype(np.float64),
                               2 * np.where(xf > 0, 1.0, alpha * np.exp(xf)), rtol=4 * tol, atol=4 * tol)


def test_bad_dtype_is_a_clear_error(device):
    with pytest.raises(ValueError, match="scaled_elu.*float32 or float16"):
        scaled_elu(mx.zeros((4,), dtype=mx.int32))

"""The float64 convolutions of mlx_float64_conv (a reference for gradients
MLX cannot take in float64) against MLX's own convolutions in float32, on
fresh random inputs: strides, padding, dilation, groups, transposed with
output padding, and their gradients."""
import mlx.core as mx
import numpy as np
import pytest

from mlx_float64_conv import float64_convs

CASES = [
    ("conv1d", (2, 17, 6), (4, 3, 6), dict(stride=1, padding=1)),
    ("conv1d", (2, 23, 6), (6, 5, 2), dict(stride=2, padding=3, dilation=2, groups=3)),
    ("conv2d", (1, 9, 11, 4), (5, 3, 2, 4), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    ("conv2d", (2, 8, 8, 4), (4, 3, 3, 1), dict(padding=1, groups=4)),
    ("conv_transpose1d", (2, 9, 6), (4, 4, 6), dict(stride=2, padding=1)),
    ("conv_transpose1d", (1, 7, 4), (6, 3, 2), dict(stride=3, padding=2, dilation=2, output_padding=1, groups=2)),
    ("conv_transpose2d", (1, 5, 6, 3), (2, 3, 4, 3), dict(stride=(2, 3), padding=(1, 2))),
]


@pytest.mark.parametrize("name,x_shape,w_shape,kw", CASES)
def test_float64_conv_matches_mlx_float32(rng, name, x_shape, w_shape, kw):
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(w_shape).astype(np.float32)
    want = getattr(mx, name)(mx.array(x), mx.array(w), **kw)
    cot = rng.standard_normal(want.shape).astype(np.float32)

    def loss(core_x, core_w):
        return (getattr(mx, name)(core_x, core_w, **kw) * mx.array(cot)).sum()

    want_grads = mx.grad(loss, argnums=(0, 1))(mx.array(x), mx.array(w))
    own = getattr(mx, name)
    with float64_convs():
        assert getattr(mx, name) is not own
        x64, w64 = mx.array(x).astype(mx.float64), mx.array(w).astype(mx.float64)
        with mx.stream(mx.cpu):
            got = getattr(mx, name)(x64, w64, **kw)
            got_grads = mx.grad(loss, argnums=(0, 1))(x64, w64)
            mx.eval(got, got_grads)
    assert got.dtype == mx.float64 and got.shape == want.shape
    for g, w_ in [(got, want), *zip(got_grads, want_grads)]:
        np.testing.assert_allclose(np.array(g), np.array(w_), rtol=1e-4, atol=1e-4)
    assert getattr(mx, name) is own  # MLX's own again outside the context

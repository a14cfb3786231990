"""mx.fft.stft / istft against real MLX: framing, centre padding modes,
windows shorter than n_fft, hops, norms, onesided, lengths, batches, errors
and derivatives; and istft(stft(x)) reconstructs x."""
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import random_array, same, same_error, to_numpy

TOL = dict(rtol=1e-4, atol=2e-5)

STFT_CASES = [
    {"n_fft": 16},
    {"n_fft": 16, "hop_length": 3},
    {"n_fft": 15, "win_length": 10, "hop_length": 5},
    {"n_fft": 16, "center": False},
    {"n_fft": 16, "pad_mode": "constant", "norm": "ortho"},
    {"n_fft": 12, "pad_mode": "edge", "norm": "forward"},
    {"n_fft": 16, "onesided": False},
    {"n_fft": 50},  # centre padding longer than the signal: repeated reflection
    {"n_fft": 8, "win_length": 0},
]


@pytest.mark.parametrize("kwargs", STFT_CASES)
@pytest.mark.parametrize("shape", [(40,), (2, 3, 29)])
def test_stft(rng, kwargs, shape):
    same("fft.stft", random_array(rng, shape, "float32"), **kwargs, **TOL)


@pytest.mark.parametrize("dtype", ["complex64", "int32", "float16"])
def test_stft_dtypes_and_window(rng, dtype):
    x = random_array(rng, (2, 33), dtype)
    window = random_array(rng, (11,), "float32")
    same("fft.stft", x, n_fft=14, hop_length=4, window=window, **TOL)
    same("fft.stft", x, n_fft=8, onesided=True, **TOL)
    same("fft.stft", random_array(rng, (1,), dtype), n_fft=4, **TOL)


def test_stft_non_contiguous(rng):
    x = random_array(rng, (30, 4), "float32")
    same(lambda m, a: m.fft.stft(m.transpose(a)[:, ::-1], n_fft=8, hop_length=2), x, **TOL)


ISTFT_CASES = [
    ({"n_fft": 16}, {}),
    ({"n_fft": 16, "hop_length": 3}, {}),
    ({"n_fft": 15, "win_length": 10, "hop_length": 5}, {}),
    ({"n_fft": 16, "center": False}, {}),
    ({"n_fft": 16, "norm": "ortho"}, {"length": 40}),
    ({"n_fft": 16}, {"length": 70}),
    ({"n_fft": 16, "onesided": False}, {}),
    ({"n_fft": 16, "hop_length": 20, "center": False}, {}),
    ({"n_fft": 16}, {"n_fft": 17}),
    ({"n_fft": 16}, {"n_fft": 8}),
    ({"n_fft": 16}, {"length": 0}),
]


@pytest.mark.parametrize("stft_kwargs,extra", ISTFT_CASES)
def test_istft(rng, stft_kwargs, extra):
    x = random_array(rng, (2, 50), "float32")
    window = random_array(rng, (stft_kwargs["win_length"],), "float32", 0.5, 1.5) if "win_length" in stft_kwargs else None
    spectrum = to_numpy(mx.fft.stft(mx.array(x), window=None if window is None else mx.array(window), **stft_kwargs))
    kwargs = {k: v for k, v in stft_kwargs.items() if k != "pad_mode"}
    kwargs.update(extra)
    same("fft.istft", spectrum, window=window, **kwargs, **TOL)


def test_round_trip(rng):
    x = random_array(rng, (3, 64), "float32")
    spectrum = mx.fft.stft(mx.array(x), n_fft=16, hop_length=4)
    np.testing.assert_allclose(to_numpy(mx.fft.istft(spectrum, n_fft=16, hop_length=4, length=64)), x,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call", [
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=8, win_length=9),
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=8, hop_length=0),
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=0),
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=30, center=False),
    lambda m: m.fft.stft(m.array(1.0), n_fft=4),
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=8, pad_mode="wrap"),
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=8, norm="x"),
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=8, window=m.ones((2, 8))),
    lambda m: m.fft.stft(m.ones((2, 20)), n_fft=8, win_length=-3),
    lambda m: m.fft.istft(m.ones((9, 5), m.complex64)[0]),
    lambda m: m.fft.istft(m.ones((9, 5), m.complex64), hop_length=0),
    lambda m: m.fft.istft(m.ones((9, 5), m.complex64), win_length=20),
    lambda m: m.fft.istft(m.ones((9, 5), m.complex64), norm="q"),
    lambda m: m.fft.istft(m.ones((9, 5), m.complex64), window=m.ones((2, 2))),
    lambda m: m.fft.istft(m.ones((1, 5), m.complex64)),
])
def test_errors(call):
    same_error(call)


def test_gradients(rng):
    x = random_array(rng, (2, 24), "float32")
    same(lambda m, a: m.grad(lambda v: m.abs(m.fft.stft(v, n_fft=8, hop_length=3)).sum())(a), x, **TOL)
    spectrum = to_numpy(mx.fft.stft(mx.array(x), n_fft=8))
    weights = random_array(rng, (2, 24), "float32")
    same(lambda m, s, w: m.grad(lambda v: (m.fft.istft(v, n_fft=8) * w).sum())(s), spectrum, weights, **TOL)

"""mx.fft against real MLX (values, shapes, dtypes, errors, derivatives) and
against numpy.fft in float64 (the accuracy of the transforms themselves).

Lengths cover even, odd and prime sizes; n / s crop and zero-pad; inputs come
real, complex, integer, half precision and non-contiguous (transposed,
strided, reversed, broadcast)."""
import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import random_array, same, same_error, to_numpy

# FFT rounding grows with log(n); values are compared with an absolute
# tolerance scaled by the largest magnitude (assert_same_value does the scaling).
TOL = dict(rtol=1e-4, atol=2e-5)
ONE_D = ["fft", "ifft", "rfft", "irfft"]
N_D = ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]


def signal(rng, shape, name):
    """rfft takes real input; the others complex (irfft: a half spectrum)."""
    return random_array(rng, shape, "float32" if name.startswith("rfft") else "complex64")


@pytest.mark.parametrize("name", ONE_D)
@pytest.mark.parametrize("length", [8, 9, 13])
@pytest.mark.parametrize("n", [None, "crop", "pad"])
def test_one_d(rng, name, length, n):
    x = signal(rng, (3, length), name)
    kwargs = {}
    if n == "crop":
        kwargs["n"] = length - 3
    elif n == "pad":
        kwargs["n"] = length + 4
    same("fft." + name, x, **kwargs, **TOL)
    # Along the first axis too, with the argument named.
    same("fft." + name, a=np.ascontiguousarray(x.T), axis=0, **kwargs, **TOL)


@pytest.mark.parametrize("name", N_D)
@pytest.mark.parametrize("case", [{}, {"s": (4, 7)}, {"axes": (0, 2)}, {"s": (3, 6), "axes": (2, 0)},
                                  {"axes": (-1,)}, {"s": (2, 5, 11), "axes": (0, 1, 2)}])
def test_n_d(rng, name, case):
    if name in ("fftn", "ifftn", "rfftn", "irfftn") and "s" in case and "axes" not in case:
        case = dict(case, axes=(-2, -1))
    x = signal(rng, (5, 6, 9), name)
    same("fft." + name, x, **case, **TOL)


@pytest.mark.parametrize("name", ONE_D + ["fftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("view", ["transpose", "step", "reverse", "broadcast"])
def test_non_contiguous(rng, name, view):
    x = signal(rng, (6, 10), name)

    def make(m, a):
        if view == "transpose":
            return m.transpose(a)
        if view == "step":
            return a[::2, 1::3]
        if view == "reverse":
            return a[::-1, ::-1]
        return m.broadcast_to(a[:1], (4, 10))

    same(lambda m, a: getattr(m.fft, name)(make(m, a)), x, **TOL)


@pytest.mark.parametrize("name", ONE_D + ["fft2", "rfftn", "irfft2"])
@pytest.mark.parametrize("dtype", ["float32", "complex64", "int32", "float16", "float64"])
def test_input_dtypes(rng, name, dtype):
    # float64 goes through complex64/float32 as in MLX; rfft of complex drops
    # the imaginary part (MLX's cast).
    same("fft." + name, random_array(rng, (4, 6), dtype), **TOL)


@pytest.mark.parametrize("name", ONE_D + ["fftn", "irfftn"])
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_norm(rng, name, norm):
    same("fft." + name, signal(rng, (2, 3, 10), name), norm=norm, **TOL)


@pytest.mark.parametrize("length", [1, 2, 16, 17, 31, 128])
def test_against_numpy_float64(rng, length):
    """Accuracy against numpy in float64, batched 1-D and 3-D transforms."""
    z = random_array(rng, (5, length), "complex64")
    r = random_array(rng, (5, length), "float32")
    ref = lambda f, a, **k: getattr(np.fft, f)(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), **k)

    def close(got, want):
        scale = max(1.0, float(np.max(np.abs(want))))
        np.testing.assert_allclose(to_numpy(got), want, rtol=1e-4, atol=1e-5 * scale)

    close(mx.fft.fft(mx.array(z)), ref("fft", z))
    close(mx.fft.ifft(mx.array(z)), ref("ifft", z))
    close(mx.fft.rfft(mx.array(r)), ref("rfft", r))
    half = z[:, : length // 2 + 1]
    close(mx.fft.irfft(mx.array(half), n=length), ref("irfft", half, n=length))
    cube = random_array(rng, (3, 4, max(length // 4, 1), 5), "complex64")
    close(mx.fft.fftn(mx.array(cube), axes=[1, 2, 3]), ref("fftn", cube, axes=(1, 2, 3)))
    close(mx.fft.irfftn(mx.array(cube), s=[4, 6], axes=[0, 3]), ref("irfftn", cube, s=(4, 6), axes=(0, 3)))


def _bits(a):
    """The raw bits of a float32 or complex64 result (signed zeros apart)."""
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("name,shape,kwargs", [
    ("fft", (4, 1000), {}), ("ifft", (3, 97), {}), ("rfft", (5, 4096), {}), ("irfft", (2, 257), {"n": 512}),
    ("fftn", (6, 10, 12), {"axes": (2, 0)}), ("rfftn", (4, 6, 9), {}),
    ("irfftn", (5, 6, 9), {"s": (6, 16), "axes": (0, 2)}), ("ifft2", (3, 8, 15), {}),
    # The inverse's norms: MLX scales by 1/n inside the transform, then undoes it.
    ("ifft2", (3, 8, 15), {"norm": "ortho"}), ("ifftn", (4, 6, 10), {"norm": "forward"}),
    ("irfft", (3, 33), {"norm": "ortho"}), ("irfft2", (4, 6, 9), {"norm": "forward"}),
    ("rfft2", (4, 6, 9), {"norm": "ortho"}), ("fft", (5, 24), {"norm": "forward"}),
])
def test_bit_for_bit_with_mlx(rng, name, shape, kwargs):
    """The CPU transforms are MLX's library (pocketfft) run the same way:
    every bit of every element agrees with mlx-cpu, not just to a tolerance.
    On the CPU stream also where the suite runs on the GPU, whose cuFFT
    rounds otherwise (test_against_numpy_float64 checks it to a tolerance)."""
    x = signal(rng, shape, name)
    got = to_numpy(getattr(mx.fft, name)(mx.array(x), stream=mx.cpu, **kwargs))
    want = np.array(getattr(mlx_core.fft, name)(mlx_core.array(x), **kwargs))
    assert got.dtype == want.dtype and got.shape == want.shape
    differ = np.count_nonzero(_bits(got) != _bits(want))
    assert differ == 0, f"{differ} of {got.size} elements differ from MLX's in some bit"


@pytest.mark.parametrize("length", [8, 16, 30, 400])
def test_even_frame_zeros_carry_mlxs_signs(rng, length):
    """An even (symmetric) real frame has a purely real spectrum; the sign of
    each zero imaginary part decides atan2's +pi or -pi (STFT phase features,
    as Kitten TTS computes them). Those signs match MLX's on the CPU
    stream; cuFFT leaves residues of other signs there."""
    half = random_array(rng, (3, length // 2 + 1), "float32")
    frame = np.concatenate([half, half[:, -2:0:-1]], axis=1)  # x[k] == x[n - k]
    got = to_numpy(mx.fft.rfft(mx.array(frame), stream=mx.cpu))
    want = np.array(mlx_core.fft.rfft(mlx_core.array(frame)))
    assert np.array_equal(np.signbit(got.imag), np.signbit(want.imag))
    np.testing.assert_array_equal(np.arctan2(got.imag, got.real), np.arctan2(want.imag, want.real))


def test_round_trip(rng):
    x = random_array(rng, (3, 4, 7), "float32")
    back = mx.fft.irfftn(mx.fft.rfftn(mx.array(x)), s=x.shape, axes=[0, 1, 2])
    np.testing.assert_allclose(to_numpy(back), x, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 7, 10])
@pytest.mark.parametrize("d", [1.0, 0.25, -3.0])
def test_frequencies(n, d):
    same("fft.fftfreq", n, d)
    same("fft.rfftfreq", n, d=d)
    np.testing.assert_allclose(to_numpy(mx.fft.fftfreq(n, d)), np.fft.fftfreq(n, d), rtol=1e-6)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@pytest.mark.parametrize("axes", [None, 0, -1, [0, 2], []])
def test_shifts(rng, name, axes):
    x = random_array(rng, (5, 4, 7), "float32")
    same("fft." + name, x, axes=axes)
    same("fft." + name, random_array(rng, (3, 6), "complex64"))
    same("fft." + name, np.array(2.0, np.float32))


@pytest.mark.parametrize("call", [
    lambda m: m.fft.fft(m.array(1.0)),
    lambda m: m.fft.fft(m.ones((2, 3)), n=0),
    lambda m: m.fft.fft(m.ones((2, 3)), axis=2),
    lambda m: m.fft.fft(m.ones((2, 3)), n=4, axis=2),
    lambda m: m.fft.irfft(m.ones((2, 3)), axis=-3),
    lambda m: m.fft.fftn(m.ones((2, 3)), s=(3, 3)),
    lambda m: m.fft.fftn(m.ones((2, 3)), axes=[0, 0]),
    lambda m: m.fft.fftn(m.ones((2, 3)), axes=[1, -1]),
    lambda m: m.fft.fftn(m.ones((2, 3)), s=(3,), axes=[0, 1]),
    lambda m: m.fft.fftn(m.ones((2, 3)), axes=[5]),
    lambda m: m.fft.fft2(m.ones((3,))),
    lambda m: m.fft.fft(m.ones((2, 3)), norm="bad"),
    lambda m: m.fft.irfft(m.ones((2, 1))),
    lambda m: m.fft.fftfreq(0),
    lambda m: m.fft.fftfreq(4, d=0.0),
    lambda m: m.fft.rfftfreq(-1),
    lambda m: m.fft.fftshift(m.ones((2, 3)), axes=3),
    lambda m: m.fft.ifftshift(m.ones((2, 3)), axes=[-3]),
])
def test_errors(call):
    same_error(call)


def test_empty_axes_and_batches():
    same("fft.fftn", np.ones((2, 3), np.float32), axes=[])
    same("fft.fft", np.ones((0, 4), np.complex64))
    same("fft.rfft2", np.ones((0, 4, 5), np.float32))


GRAD_CASES = [
    ("fft", {}), ("fft", {"n": 5}), ("fft", {"n": 11}), ("ifft", {"axis": 0}),
    ("rfft", {}), ("rfft", {"n": 7}), ("rfft", {"n": 12, "norm": "ortho"}),
    ("irfft", {}), ("irfft", {"n": 7}), ("irfft", {"n": 3}),
    ("fft2", {}), ("ifftn", {"s": (3, 5), "axes": (0, 1)}), ("rfft2", {"norm": "forward"}),
    ("rfftn", {"axes": (1, 0)}), ("irfft2", {}), ("irfftn", {"s": (4, 9), "axes": (0, 1)}),
]


@pytest.mark.parametrize("name,kwargs", GRAD_CASES)
def test_vjp_jvp(rng, name, kwargs):
    x = signal(rng, (4, 8), name)
    out_shape = getattr(mlx_core.fft, name)(mlx_core.array(x), **kwargs).shape
    out_dtype = "float32" if name.startswith("irfft") else "complex64"
    cotangent = random_array(rng, out_shape, out_dtype)
    tangent = signal(rng, (4, 8), name)

    def vjp(m, a, c):
        return m.vjp(lambda v: getattr(m.fft, name)(v, **kwargs), [a], [c])[1][0]

    def jvp(m, a, t):
        return m.jvp(lambda v: getattr(m.fft, name)(v, **kwargs), [a], [t])[1][0]

    same(vjp, x, cotangent, **TOL)
    n = kwargs.get("n", kwargs.get("s", (0,))[-1])
    if name.startswith("irfft") and n % 2:
        # MLX 0.32.4's irfft jvp assumes the default even length and returns
        # a tangent of the wrong shape for odd n; the transform is linear, so
        # the jvp is checked as MLX's forward transform of the tangent.
        got = jvp(mx, mx.array(x), mx.array(tangent))
        want = getattr(mlx_core.fft, name)(mlx_core.array(tangent), **kwargs)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(to_numpy(got), np.array(want), rtol=1e-4, atol=1e-4)
    else:
        same(jvp, x, tangent, **TOL)


def test_grad_through_real_input(rng):
    """mx.grad of a real loss of a complex transform of a real input."""
    x = random_array(rng, (3, 10), "float32")
    same(lambda m, a: m.grad(lambda v: m.abs(m.fft.fft(v)).sum())(a), x, **TOL)
    same(lambda m, a: m.grad(lambda v: (m.fft.irfft(m.fft.rfft(v) * 2.0, n=10) * v).sum())(a), x, **TOL)

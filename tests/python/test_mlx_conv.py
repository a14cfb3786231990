"""Convolutions against real MLX: conv1d/2d/3d, conv_general, the transposed
convolutions and convolve; values, dtypes, gradients and errors."""
import numpy as np
import pytest

from mlx_oracle import Dt, random_array, same, same_error

FLOATS = ["float32", "float16", "bfloat16"]


def _pair(rng, x_shape, w_shape, dtype="float32"):
    return random_array(rng, x_shape, dtype), random_array(rng, w_shape, dtype)


# (input shape, weight shape, stride, padding, dilation, groups)
CONV1D = [
    ((2, 9, 4), (6, 3, 4), 1, 0, 1, 1),
    ((1, 16, 6), (4, 5, 3), 2, 2, 1, 2),
    ((3, 12, 5), (5, 2, 5), 3, 1, 2, 1),
    ((2, 10, 8), (8, 4, 1), 1, 3, 1, 8),  # depthwise, as Mamba's causal conv1d
    ((2, 10, 6), (12, 3, 1), 1, 1, 1, 6),  # depthwise with a channel multiplier
]


@pytest.mark.parametrize("case", CONV1D)
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv1d(rng, case, dtype):
    xs, ws, stride, padding, dilation, groups = case
    x, w = _pair(rng, xs, ws, dtype)
    same("conv1d", x, w, stride, padding, dilation, groups)
    same("conv1d", x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)


CONV2D = [
    ((2, 7, 8, 3), (4, 3, 3, 3), 1, 0, 1, 1),
    ((1, 9, 9, 4), (6, 3, 2, 2), (2, 1), (1, 2), (1, 2), 2),
    ((2, 8, 6, 4), (4, 3, 3, 1), 1, 1, 1, 4),  # depthwise
    ((1, 10, 10, 2), (3, 1, 1, 2), 3, 0, 1, 1),  # 1x1
]


@pytest.mark.parametrize("case", CONV2D)
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv2d(rng, case, dtype):
    xs, ws, stride, padding, dilation, groups = case
    x, w = _pair(rng, xs, ws, dtype)
    same("conv2d", x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)


@pytest.mark.parametrize("case", [
    ((1, 5, 6, 4, 2), (3, 2, 3, 2, 2), 1, 0, 1, 1),
    ((2, 6, 5, 5, 4), (4, 3, 2, 2, 4), (1, 2, 1), (1, 0, 1), (2, 1, 1), 1),
])
def test_conv3d(rng, case):
    xs, ws, stride, padding, dilation, groups = case
    x, w = _pair(rng, xs, ws)
    same("conv3d", x, w, stride, padding, dilation, groups)


def test_conv_non_contiguous_and_mixed_dtypes(rng):
    x = random_array(rng, (9, 2, 4))  # swapped to (2, 9, 4) inside: not row-contiguous
    w = random_array(rng, (5, 3, 8))  # reversed kernel, every other channel: (5, 3, 4)
    same(lambda m, a, b: m.conv1d(m.swapaxes(a, 0, 1), b[:, ::-1, ::2], padding=1), x, w)
    x2 = random_array(rng, (2, 6, 8, 3))
    same(lambda m, a, b: m.conv2d(a[:, ::2, 1:], b, groups=3), x2, random_array(rng, (6, 2, 2, 1)))
    # A float16 input with a float32 weight promotes to float32, as in MLX.
    same("conv1d", random_array(rng, (2, 9, 4), "float16"), random_array(rng, (5, 2, 4)))


@pytest.mark.parametrize("stride,padding,kdil,idil,flip", [
    (1, ([1], [2]), 1, 1, False),
    (2, ([0], [3]), 2, 1, True),
    (1, 1, 1, 3, False),
    (2, ([2], [0]), 1, 2, True),
    (1, -1, 1, 1, False),  # negative padding crops
])
def test_conv_general_1d(rng, stride, padding, kdil, idil, flip):
    x, w = _pair(rng, (2, 11, 3), (4, 3, 3))
    same("conv_general", x, w, stride=stride, padding=padding, kernel_dilation=kdil, input_dilation=idil,
         flip=flip)


def test_conv_general_2d_asymmetric(rng):
    x, w = _pair(rng, (2, 8, 7, 4), (6, 3, 2, 2))
    same("conv_general", x, w, [2, 1], ([1, 0], [2, 1]), [1, 2], [2, 1], 2, True)
    same("conv_general", x, w, stride=1, padding=[1, 2], groups=2)


CONV_T = [
    # (input, weight, stride, padding, dilation, output_padding, groups)
    ((2, 5, 4), (3, 3, 4), 1, 0, 1, 0, 1),
    ((1, 6, 4), (6, 4, 2), 2, 1, 1, 1, 2),
    ((2, 4, 3), (5, 2, 3), 3, 0, 2, 2, 1),
    ((1, 7, 2), (2, 3, 2), 1, 3, 1, 0, 1),  # padding past the kernel span crops
]


@pytest.mark.parametrize("case", CONV_T)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_conv_transpose1d(rng, case, dtype):
    xs, ws, stride, padding, dilation, out_pad, groups = case
    x, w = _pair(rng, xs, ws, dtype)
    same("conv_transpose1d", x, w, stride=stride, padding=padding, dilation=dilation, output_padding=out_pad,
         groups=groups)


def test_conv_transpose2d_3d(rng):
    x, w = _pair(rng, (2, 4, 5, 4), (4, 3, 2, 2))
    same("conv_transpose2d", x, w, (2, 1), (1, 0), (1, 2), (1, 0), 2)
    x, w = _pair(rng, (1, 3, 4, 3, 2), (2, 2, 3, 2, 2))
    same("conv_transpose3d", x, w, stride=2, padding=1, output_padding=1)


@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (5, 5), (1, 4), (6, 1), (50, 40)])  # 40 taps: the gather path
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve(rng, n, m, mode):
    a, v = random_array(rng, (n,)), random_array(rng, (m,))
    same("convolve", a, v, mode)
    same("convolve", a, v.astype(np.float16), mode=mode)


def _conv_loss(op, **kw):
    def fn(m, x, w):
        def loss(x, w):
            y = getattr(m, op)(x, w, **kw)
            return (y * m.cos(y)).sum()
        return m.grad(loss, argnums=(0, 1))(x, w)
    return fn


@pytest.mark.parametrize("op,xs,ws,kw", [
    ("conv1d", (2, 9, 4), (6, 3, 2), dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv1d", (2, 10, 6), (6, 4, 1), dict(padding=3, groups=6)),
    ("conv1d", (1, 40, 3), (3, 34, 1), dict(padding=2, stride=2, groups=3)),  # depthwise, many taps
    ("conv2d", (2, 7, 6, 3), (4, 3, 2, 3), dict(stride=(1, 2), padding=1)),
    ("conv3d", (1, 4, 5, 4, 2), (3, 2, 2, 2, 2), dict(padding=(1, 0, 1))),
    ("conv_transpose1d", (2, 5, 4), (3, 3, 4), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d", (1, 4, 4, 2), (4, 3, 3, 1), dict(stride=2, groups=2)),
    ("conv_general", (2, 8, 3), (4, 3, 3), dict(padding=([2], [0]), input_dilation=2, flip=True)),
])
def test_conv_grads(rng, op, xs, ws, kw):
    x, w = _pair(rng, xs, ws)
    same(_conv_loss(op, **kw), x, w, rtol=1e-4, atol=1e-5)


def test_conv_grad_half(rng):
    x, w = _pair(rng, (2, 9, 4), (4, 3, 4), "bfloat16")
    same(_conv_loss("conv1d", padding=1), x, w)


def test_conv_errors(rng):
    x, w = _pair(rng, (2, 8, 4), (6, 3, 4))
    same_error("conv1d", x.astype(np.int32), w)  # integer input
    same_error("conv1d", x, w, stride=0)
    same_error("conv1d", x, w, dilation=0)
    same_error("conv1d", x, w, groups=3)  # 4 channels, 3 groups
    same_error("conv1d", x, random_array(rng, (3, 3, 2)), groups=2)  # 3 outputs, 2 groups
    same_error("conv1d", x, random_array(rng, (6, 3, 5)))  # channel mismatch
    same_error("conv1d", x, random_array(rng, (6, 9, 4)))  # kernel longer than the input
    same_error("conv1d", x, random_array(rng, (6, 3, 3, 4)))  # weight rank
    same_error("conv1d", x[0], w)  # no batch axis
    same_error("conv_general", x, w, stride=[1, 1])
    same_error("conv_general", x, w, padding=(1, 2))  # 2 paddings for 1 spatial axis
    same_error("conv_general", x, w, padding=([1, 1], [2]))
    same_error("conv_general", x, w, input_dilation=0)
    same_error("conv_transpose1d", x, w, padding=5)
    same_error("conv_transpose1d", x, w, groups=3)
    same_error("conv2d", random_array(rng, (1, 5, 5, 2)), random_array(rng, (2, 2, 2, 2)), stride=(1, 2, 3))
    same_error("conv1d", x, w, stride=1.5)
    same_error("conv3d", random_array(rng, (1, 4, 4, 4, 4)), random_array(rng, (2, 2, 2, 2, 2)), groups=2)
    same_error("convolve", random_array(rng, (3,)), random_array(rng, (5,)), "middle")
    same_error("convolve", random_array(rng, (3, 2)), random_array(rng, (5,)))
    same_error("convolve", random_array(rng, (0,)), random_array(rng, (5,)))
    same_error("convolve", random_array(rng, (3,), "int32"), random_array(rng, (5,), "int32"))


def test_conv_error_messages_name_the_op(rng):
    import alloy.core as mx
    x = mx.array(random_array(rng, (2, 8, 4)))
    with pytest.raises(ValueError, match=r"\[conv\].*groups"):
        mx.conv1d(x, mx.zeros((6, 3, 4)), groups=0)  # MLX divides by zero here; Alloy reports it
    with pytest.raises(ValueError, match=r"\[conv\].*empty kernel"):
        mx.conv1d(x, mx.zeros((6, 0, 4)))
    with pytest.raises(TypeError):
        mx.conv1d(input=x, weight=mx.zeros((6, 3, 4)))  # positional-only, as in MLX

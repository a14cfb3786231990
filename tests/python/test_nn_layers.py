"""alloy.nn layers and activations against real mlx.nn: the same weights in
both, then outputs and gradients (parameters and input) on random inputs."""
import numpy as np
import pytest

import alloy.core as ax
import alloy.nn as ann
import mlx.core as mc
import mlx.nn as mnn
from mlx_oracle import MLX_DEVICE, assert_same_value, random_array
from nn_oracle import check_layer, pair

ACTIVATIONS = [
    "silu", "gelu", "gelu_approx", "gelu_fast_approx", "relu", "relu6", "relu2", "leaky_relu", "elu", "selu",
    "celu", "softplus", "softsign", "softshrink", "sigmoid", "tanh", "glu", "log_softmax", "softmax", "softmin",
    "mish", "hardswish", "hard_tanh", "hard_shrink", "log_sigmoid", "step",
]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_functions(rng, name):
    x = random_array(rng, (3, 8), low=-4, high=4)
    got = getattr(ann, name)(ax.array(x))
    with mc.stream(MLX_DEVICE):
        want = getattr(mnn, name)(mc.array(x))
    assert_same_value(got, want)
    if name == "step":
        return  # piecewise constant: no gradient to compare
    cot = rng.standard_normal(tuple(want.shape)).astype(np.float32)
    got_g = ax.grad(lambda v: ax.sum(getattr(ann, name)(v) * ax.array(cot)))(ax.array(x))
    with mc.stream(MLX_DEVICE):
        want_g = mc.grad(lambda v: mc.sum(getattr(mnn, name)(v) * mc.array(cot)))(mc.array(x))
    assert_same_value(got_g, want_g, path=f"grad of {name}")


@pytest.mark.parametrize("build", [
    lambda nn: nn.ReLU(), lambda nn: nn.SiLU(), lambda nn: nn.GELU(), lambda nn: nn.GELU(approx="tanh"),
    lambda nn: nn.GELU(approx="fast"), lambda nn: nn.LeakyReLU(0.2), lambda nn: nn.ELU(0.5), lambda nn: nn.SELU(),
    lambda nn: nn.Softmax(), lambda nn: nn.LogSoftmax(), lambda nn: nn.GLU(), lambda nn: nn.Mish(),
    lambda nn: nn.Hardswish(), lambda nn: nn.Sigmoid(), lambda nn: nn.Tanh(), lambda nn: nn.ReLU6(),
    lambda nn: nn.Softplus(), lambda nn: nn.Softsign(), lambda nn: nn.CELU(1.5), lambda nn: nn.PReLU(4),
    lambda nn: nn.HardTanh(), lambda nn: nn.Identity(3, foo=1),
], ids=lambda b: "layer")
def test_activation_modules(rng, build):
    check_layer(build, random_array(rng, (2, 5, 4), low=-3, high=3), rng=rng)


def test_gelu_rejects_unknown_approx():
    with pytest.raises(ValueError):
        ann.GELU(approx="cubic")
    with pytest.raises(ValueError):
        mnn.GELU(approx="cubic")


@pytest.mark.parametrize("bias", [True, False])
def test_linear(rng, bias):
    mine, _ = check_layer(lambda nn: nn.Linear(6, 5, bias=bias), random_array(rng, (2, 3, 6)), rng=rng)
    assert sorted(mine.parameters()) == (["bias", "weight"] if bias else ["weight"])
    assert repr(mine) == f"Linear(input_dims=6, output_dims=5, bias={bias})"


def test_linear_init_range(rng):
    layer = ann.Linear(16, 300)
    w, b = np.array(layer.weight), np.array(layer.bias)
    bound = 1 / np.sqrt(16)
    assert w.shape == (300, 16) and b.shape == (300,)
    assert np.all(np.abs(w) <= bound) and np.abs(w).max() > 0.8 * bound and abs(w.mean()) < 0.05


def test_bilinear(rng):
    check_layer(lambda nn: nn.Bilinear(3, 4, 5), random_array(rng, (2, 3)), random_array(rng, (2, 4)), rng=rng)


def test_embedding(rng):
    ids = rng.integers(0, 10, size=(2, 7)).astype(np.int32)
    mine, theirs = check_layer(lambda nn: nn.Embedding(10, 4), ids, rng=rng, grad_input=False)
    x = random_array(rng, (3, 4))
    with mc.stream(MLX_DEVICE):
        want = theirs.as_linear(mc.array(x))
    assert_same_value(mine.as_linear(ax.array(x)), want)


def test_sequential(rng):
    build = lambda nn: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Dropout(0.3))
    mine, theirs = pair(build)
    mine.eval()
    theirs.eval()
    x = random_array(rng, (5, 4))
    with mc.stream(MLX_DEVICE):
        want = theirs(mc.array(x))
    assert_same_value(mine(ax.array(x)), want)


def test_group_norm_strided(rng):
    check_layer(lambda nn: nn.GroupNorm(3, 12), random_array(rng, (2, 4, 5, 12)), rng=rng, randomize=True)
    check_layer(lambda nn: nn.GroupNorm(2, 8, affine=False), random_array(rng, (3, 6, 8)), rng=rng)


def test_group_norm_pytorch_compatible(rng):
    check_layer(lambda nn: nn.GroupNorm(2, 8, pytorch_compatible=True), random_array(rng, (2, 5, 8)), rng=rng,
                randomize=True)


def test_rms_norm(rng):
    check_layer(lambda nn: nn.RMSNorm(8, eps=1e-4), random_array(rng, (3, 8)), rng=rng, randomize=True)


@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, False)])
def test_layer_norm(rng, affine, bias):
    mine, _ = check_layer(lambda nn: nn.LayerNorm(8, affine=affine, bias=bias), random_array(rng, (3, 8)), rng=rng,
                          randomize=True)
    assert sorted(mine.parameters()) == sorted(["weight", "bias"][: affine + (affine and bias)])


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1}, {"dilation": 2}, {"groups": 2, "bias": False}])
def test_conv1d(rng, kw):
    check_layer(lambda nn: nn.Conv1d(4, 6, 3, **kw), random_array(rng, (2, 9, 4)), rng=rng, randomize=True)


@pytest.mark.parametrize("kw", [{}, {"stride": (2, 1), "padding": 1}, {"groups": 2}])
def test_conv2d(rng, kw):
    check_layer(lambda nn: nn.Conv2d(4, 6, (3, 2), **kw), random_array(rng, (2, 7, 6, 4)), rng=rng, randomize=True)


def test_conv_rejects_bad_groups():
    for nn in (ann, mnn):
        with pytest.raises(ValueError):
            nn.Conv1d(5, 6, 3, groups=2)
        with pytest.raises(ValueError):
            nn.Conv2d(5, 6, 3, groups=2)


def test_conv_weight_shapes():
    assert ann.Conv1d(4, 6, 3, groups=2).weight.shape == mnn.Conv1d(4, 6, 3, groups=2).weight.shape
    assert ann.Conv2d(4, 6, (3, 2)).weight.shape == mnn.Conv2d(4, 6, (3, 2)).weight.shape


@pytest.mark.parametrize("traditional", [False, True])
def test_rope(rng, traditional):
    mine, theirs = pair(lambda nn: nn.RoPE(8, traditional=traditional, base=500, scale=0.5))
    x = random_array(rng, (2, 3, 5, 16))
    with mc.stream(MLX_DEVICE):
        want = theirs(mc.array(x), offset=3)
    assert_same_value(mine(ax.array(x), offset=3), want)


@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_attention(rng, masked):
    q, k, v = (random_array(rng, s) for s in ((2, 5, 8), (2, 6, 8), (2, 6, 8)))
    build = lambda nn: nn.MultiHeadAttention(8, 2, bias=True)
    if not masked:
        check_layer(build, q, k, v, rng=rng)
        return
    mask = random_array(rng, (5, 6))
    mine, theirs = pair(build)
    with mc.stream(MLX_DEVICE):
        want = theirs(mc.array(q), mc.array(k), mc.array(v), mask=mc.array(mask))
    assert_same_value(mine(ax.array(q), ax.array(k), ax.array(v), mask=ax.array(mask)), want)


def test_multi_head_attention_structure():
    build = lambda nn: nn.MultiHeadAttention(8, 2, query_input_dims=3, key_input_dims=5, value_dims=4,
                                             value_output_dims=7)
    mine, theirs = build(ann), build(mnn)
    shapes = lambda m: {k: tuple(v.shape) for k, v in __import__("alloy.utils").utils.tree_flatten(m.parameters())}
    assert shapes(mine) == shapes(theirs)
    with pytest.raises(ValueError):
        ann.MultiHeadAttention(10, 3)


@pytest.mark.parametrize("n,dtype", [(5, "float32"), (3, "float16"), (4, "bfloat16")])
def test_additive_causal_mask(n, dtype):
    got = ann.MultiHeadAttention.create_additive_causal_mask(n, getattr(ax, dtype))
    want = mnn.MultiHeadAttention.create_additive_causal_mask(n, getattr(mc, dtype))
    assert_same_value(got, want)


def test_dropout(rng):
    layer = ann.Dropout(0.25)
    x = ax.ones((200, 50))
    y = np.array(layer(x))
    kept = y != 0
    # Survivors are scaled by 1 / (1 - p); about 75% survive.
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert 0.7 < kept.mean() < 0.8
    layer.eval()
    assert np.array_equal(np.array(layer(x)), np.array(x))
    for p in (-0.1, 1.0):
        with pytest.raises(ValueError):
            ann.Dropout(p)


def test_dropout2d_drops_whole_channels(rng):
    y = np.array(ann.Dropout2d(0.5)(ax.ones((4, 3, 3, 16))))
    per_channel = y.reshape(4, 9, 16)
    assert np.all(per_channel.min(axis=1) == per_channel.max(axis=1))
    with pytest.raises(ValueError):
        ann.Dropout2d()(ax.ones((3, 3)))


def test_quantized_linear(rng):
    lin, lin_mlx = pair(lambda nn: nn.Linear(64, 8))
    mine = ann.QuantizedLinear.from_linear(lin, group_size=32, bits=4)
    with mc.stream(MLX_DEVICE):
        theirs = mnn.QuantizedLinear.from_linear(lin_mlx, group_size=32, bits=4)
    x = random_array(rng, (3, 64))
    with mc.stream(MLX_DEVICE):
        want = theirs(mc.array(x))
    assert_same_value(mine(ax.array(x)), want)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_qq_linear(rng, mode):
    lin, lin_mlx = pair(lambda nn: nn.Linear(64, 16, bias=False))
    mine = ann.QQLinear.from_linear(lin, mode=mode)
    with mc.stream(MLX_DEVICE):
        theirs = mnn.QQLinear.from_linear(lin_mlx, mode=mode)
    assert mine.training and mine.weight.dtype == ax.float32 and "scales" not in mine
    # Training mode: the float weight is a trainable parameter and gets a
    # gradient (MLX's CPU build cannot run this case; qqmm is compared with
    # float64 in test_mlx_qqmm).
    from alloy.utils import tree_flatten
    assert [k for k, _ in tree_flatten(mine.trainable_parameters())] == ["weight"]
    x = ax.array(random_array(rng, (32, 64)))  # the weight gradient quantizes along these 32 rows
    loss, grads = ann.value_and_grad(mine, lambda m, x: (m(x) ** 2).sum())(mine, x)
    assert grads["weight"].shape == (16, 64) and float(ax.abs(grads["weight"]).sum()) > 0
    # eval() packs the weight, as MLX's does; one row runs on MLX's CPU build.
    mine.eval()
    with mc.stream(MLX_DEVICE):
        theirs.eval()
    assert sorted(k for k, _ in tree_flatten(mine.parameters())) == ["scales", "weight"]
    assert_same_value(mine.parameters(), theirs.parameters(), rtol=0, atol=0)
    x = random_array(rng, (1, 64))
    with mc.stream(MLX_DEVICE):
        want = theirs(mc.array(x))
    assert_same_value(mine(ax.array(x)), want)
    assert repr(mine) == repr(theirs)
    # train() unpacks it again to the dequantized values.
    mine.train()
    with mc.stream(MLX_DEVICE):
        theirs.train()
    assert "scales" not in mine
    assert_same_value(mine.parameters(), theirs.parameters(), rtol=0, atol=0)
    with pytest.raises(NotImplementedError):
        ann.QQLinear.from_linear(ann.Linear(64, 16))


def test_quantize_replaces_leaf_linears(rng):
    build = lambda nn: nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))
    mine, theirs = pair(build)
    ann.quantize(mine, 32, 8)
    mnn.quantize(theirs, 32, 8)
    assert isinstance(mine.layers[0], ann.QuantizedLinear) and isinstance(mine.layers[2], ann.QuantizedLinear)
    # Quantized weights are frozen; only the float biases train.
    from alloy.utils import tree_flatten
    assert sorted(k for k, _ in tree_flatten(mine.trainable_parameters())) == ["layers.0.bias", "layers.2.bias"]
    x = random_array(rng, (2, 64))
    with mc.stream(MLX_DEVICE):
        want = theirs(mc.array(x))
    assert_same_value(mine(ax.array(x)), want)

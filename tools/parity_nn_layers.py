"""The `nn_layers` family of tools/mlx_parity_fuzz.py: nn layers of random
configurations built in both frameworks with the same weights (MLX's
initialisation, copied into Alloy's layer), on the same fresh inputs: the
output, and the gradient of a random projection of it with respect to the
input and to every parameter. Configurations that MLX refuses are compared
as errors (same exception type)."""
import importlib

import numpy as np

import mlx.core as mlx_core
import mlx.nn as mlx_nn
import mlx.utils as mlx_utils


def _alloy():
    return importlib.import_module("alloy.core"), importlib.import_module("alloy.nn"), \
        importlib.import_module("alloy.utils")


class LayerPair:
    """One configuration, built once per framework: MLX's layer with its own
    initial weights, and Alloy's with those weights loaded (strict)."""

    def __init__(self, make, train=False):
        self.make = make
        self.train = train
        self.built = {}

    def layer(self, m):
        if m not in self.built:
            if m is mlx_core:
                layer = self.make(mlx_nn, mlx_core)
            else:
                ax, anx, au = _alloy()
                layer = self.make(anx, ax)
                want = self.layer(mlx_core)
                weights = [(k, ax.array(np.array(v))) for k, v in mlx_utils.tree_flatten(want.parameters())]
                layer.load_weights(weights, strict=True)
            layer.train(self.train)
            self.built[m] = layer
        return self.built[m]


def _utils(m):
    return mlx_utils if m is mlx_core else _alloy()[2]


def _nn(m):
    return mlx_nn if m is mlx_core else _alloy()[1]


def _output(pair, m, x, call):
    layer = pair.layer(m)
    out = call(layer, m, x)
    return out[0] if isinstance(out, tuple) else out


def _grads(pair, call):
    """m, x, cot -> (d/dx, {name: d/dparam}) of sum(output * cot)."""
    def fn(m, x, cot):
        layer = pair.layer(m)
        nn = _nn(m)

        def loss(model, x):
            return (_output(pair, m, x, lambda _, m_, x_: call(model, m_, x_)).astype(m.float32) * cot).sum()
        dx = m.grad(lambda x: loss(layer, x))(x)
        _, dparams = nn.value_and_grad(layer, lambda x: loss(layer, x))(x)
        return [dx] + [g for _, g in _utils(m).tree_flatten(dparams)]
    return fn


def _check(d, label, pair, x, call=lambda layer, m, x: layer(x), grad=True, rng=None):
    d.check(label, lambda m, a: _output(pair, m, a, call), x)
    if grad and rng is not None and np.issubdtype(x.dtype, np.floating):
        try:
            out = np.array(_output(pair, mlx_core, mlx_core.array(x), call).astype(mlx_core.float32))
        except Exception:  # noqa: BLE001 - MLX refuses the configuration: compared as an error above
            return
        cot = rng.standard_normal(out.shape).astype(np.float32)
        d.check(label + " grad", _grads(pair, call), x, cot)


def nn_layers(d, rng):
    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    # Convolutions, with and without bias, strides, padding, dilation, groups.
    for _ in range(4):
        cin, groups = int(rng.choice([2, 4, 6])), int(rng.choice([1, 2]))
        cout = groups * int(rng.integers(1, 4))
        k, s, p, dl = int(rng.integers(1, 4)), int(rng.integers(1, 3)), int(rng.integers(0, 3)), int(rng.integers(1, 3))
        bias = bool(rng.random() < 0.5)
        spec = f"(cin={cin}, cout={cout}, k={k}, stride={s}, pad={p}, dil={dl}, groups={groups}, bias={bias})"
        _check(d, "Conv1d" + spec, LayerPair(lambda nn, m: nn.Conv1d(cin, cout, k, s, p, dl, groups, bias)),
               normal(2, 11, cin), rng=rng)
        _check(d, "Conv2d" + spec, LayerPair(lambda nn, m: nn.Conv2d(cin, cout, (k, k + 1), (s, 1), p, dl, groups,
                                                                      bias)), normal(2, 9, 8, cin), rng=rng)
        _check(d, "Conv3d" + spec.replace(f", groups={groups}", ""),  # (MLX's Conv3d has no groups)
               LayerPair(lambda nn, m: nn.Conv3d(cin, cout, k, s, p, dl, bias=bias)), normal(1, 6, 5, 7, cin), rng=rng)
        op = int(rng.integers(0, s))  # output padding below the stride
        tspec = f"(cin={cin}, cout={cout}, k={k}, stride={s}, pad={min(p, dl * (k - 1))}, dil={dl}, out_pad={op})"
        pt = min(p, dl * (k - 1))
        _check(d, "ConvTranspose1d" + tspec,
               LayerPair(lambda nn, m: nn.ConvTranspose1d(cin, cout, k, s, pt, dl, op, bias=bias)),
               normal(2, 7, cin), rng=rng)
        _check(d, "ConvTranspose2d" + tspec,
               LayerPair(lambda nn, m: nn.ConvTranspose2d(cin, cout, k, s, pt, dl, op, bias=bias)),
               normal(1, 5, 6, cin), rng=rng)

    # Pooling: kernel, stride and padding (padding at most half the kernel).
    for _ in range(4):
        k, s = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        p = int(rng.integers(0, k // 2 + 1))
        for name, shape in [("MaxPool1d", (2, 10, 3)), ("AvgPool1d", (2, 10, 3)), ("MaxPool2d", (2, 9, 7, 3)),
                            ("AvgPool2d", (2, 9, 7, 3)), ("MaxPool3d", (1, 6, 5, 7, 2)), ("AvgPool3d", (1, 6, 5, 7, 2))]:
            _check(d, f"{name}(k={k}, s={s}, p={p})",
                   LayerPair(lambda nn, m, name=name: getattr(nn, name)(k, s, p)), normal(*shape), rng=rng)

    # Upsampling: scale factors (up, down, non-integer), modes, align_corners,
    # antialiasing (linear and cubic, without align_corners).
    scales = [2, (1.5, 2.5), 0.5, (float(rng.uniform(0.3, 3.0)), float(rng.uniform(0.3, 3.0)))]
    for mode in ["nearest", "linear", "cubic"]:
        for align, antialias in [(False, False), (True, False), (False, True), (True, True)]:
            for scale in scales:
                _check(d, f"Upsample(scale={scale}, {mode}, align_corners={align}, antialias={antialias})",
                       LayerPair(lambda nn, m, mode=mode, align=align, scale=scale, aa=antialias:
                                 nn.Upsample(scale, mode, align, aa)), normal(2, 7, 6, 3), rng=rng)
    _check(d, "Upsample(1-d, 1.7, cubic)", LayerPair(lambda nn, m: nn.Upsample(1.7, "cubic")), normal(2, 9, 3), rng=rng)
    _check(d, "Upsample(3-d, (2, 0.5, 1.5), linear)", LayerPair(lambda nn, m: nn.Upsample((2, 0.5, 1.5), "linear")),
           normal(1, 3, 4, 5, 2), rng=rng)

    # Normalisations, in training and evaluation modes.
    x = normal(4, 5, 6, 8)
    for affine in [True, False]:
        for train in [True, False]:
            _check(d, f"BatchNorm(affine={affine}, train={train})",
                   LayerPair(lambda nn, m, affine=affine: nn.BatchNorm(8, affine=affine), train), x, rng=rng)
        _check(d, f"InstanceNorm(affine={affine})", LayerPair(lambda nn, m, affine=affine: nn.InstanceNorm(8, affine=affine)),
               x, rng=rng)
        for pt in [False, True]:
            _check(d, f"GroupNorm(4, affine={affine}, pytorch_compatible={pt})",
                   LayerPair(lambda nn, m, affine=affine, pt=pt: nn.GroupNorm(4, 8, affine=affine,
                                                                            pytorch_compatible=pt)), x, rng=rng)
        _check(d, f"LayerNorm(affine={affine})", LayerPair(lambda nn, m, affine=affine: nn.LayerNorm(8, affine=affine)),
               x, rng=rng)
    _check(d, "RMSNorm", LayerPair(lambda nn, m: nn.RMSNorm(8)), x, rng=rng)

    # Recurrent layers: with and without bias, batched and not.
    for name in ["RNN", "GRU", "LSTM"]:
        for bias in [True, False]:
            for shape in [(2, 5, 3), (5, 3)]:
                _check(d, f"{name}(3, 4, bias={bias}) on {shape}",
                       LayerPair(lambda nn, m, name=name, bias=bias: getattr(nn, name)(3, 4, bias=bias)),
                       normal(*shape), rng=rng)

    # Attention and transformers (dropout 0: no random draws).
    q = normal(2, 5, 8)
    mask = np.triu(np.full((5, 5), -1e9, np.float32), 1)
    for bias in [False, True]:
        pair = LayerPair(lambda nn, m, bias=bias: nn.MultiHeadAttention(8, 2, bias=bias))
        _check(d, f"MultiHeadAttention(bias={bias})", pair, q, call=lambda layer, m, x: layer(x, x[:, ::-1], x), rng=rng)
        _check(d, f"MultiHeadAttention(bias={bias}, causal mask)", pair, q,
               call=lambda layer, m, x: layer(x, x, x, mask=m.array(mask)), rng=rng)
    for norm_first in [True, False]:
        _check(d, f"TransformerEncoderLayer(norm_first={norm_first})",
               LayerPair(lambda nn, m, nf=norm_first: nn.TransformerEncoderLayer(8, 2, 16, norm_first=nf)), q,
               call=lambda layer, m, x: layer(x, m.array(mask)), rng=rng)
        _check(d, f"Transformer(norm_first={norm_first})",
               LayerPair(lambda nn, m, nf=norm_first: nn.Transformer(8, 2, 1, 1, 16, norm_first=nf)), q,
               call=lambda layer, m, x: layer(x, x[:, ::-1], m.array(mask), m.array(mask), None), rng=rng)

    # Embeddings and positional encodings.
    ids = rng.integers(0, 10, (3, 4)).astype(np.int32)
    emb = LayerPair(lambda nn, m: nn.Embedding(10, 6))
    _check(d, "Embedding", emb, ids, grad=False)
    _check(d, "Embedding.as_linear", emb, normal(3, 6), call=lambda layer, m, x: layer.as_linear(x), rng=rng)
    for traditional in [False, True]:
        _check(d, f"RoPE(traditional={traditional})",
               LayerPair(lambda nn, m, t=traditional: nn.RoPE(6, traditional=t, base=500.0)), normal(2, 3, 5, 8),
               call=lambda layer, m, x: layer(x, offset=2), rng=rng)
    _check(d, "SinusoidalPositionalEncoding", LayerPair(lambda nn, m: nn.SinusoidalPositionalEncoding(6, cos_first=True)),
           normal(7), grad=False)
    _check(d, "ALiBi", LayerPair(lambda nn, m: nn.ALiBi()), normal(2, 4, 5, 5), call=lambda layer, m, x: layer(x),
           rng=rng)

    # Linear, Bilinear, quantized layers (MLX's quantize of its own weights).
    _check(d, "Linear", LayerPair(lambda nn, m: nn.Linear(6, 5)), normal(3, 6), rng=rng)
    _check(d, "Bilinear", LayerPair(lambda nn, m: nn.Bilinear(6, 4, 3)), normal(2, 6),
           call=lambda layer, m, x: layer(x, x[:, :4] * 2), rng=rng)
    for bits, group in [(4, 32), (8, 64), (2, 32), (6, 64)]:
        _check(d, f"QuantizedLinear(bits={bits}, group_size={group})",
               LayerPair(lambda nn, m, b=bits, g=group: nn.QuantizedLinear.from_linear(nn.Linear(64, 12), g, b)),
               normal(3, 64), grad=False)
        qe = LayerPair(lambda nn, m, b=bits, g=group: nn.QuantizedEmbedding.from_embedding(nn.Embedding(10, 64), g, b))
        _check(d, f"QuantizedEmbedding(bits={bits}, group_size={group})", qe, ids, grad=False)
        _check(d, f"QuantizedEmbedding.as_linear(bits={bits}, group_size={group})", qe, normal(3, 64),
               call=lambda layer, m, x: layer.as_linear(x), grad=False)
    for mode, group, bits in [("mxfp4", 32, 4), ("nvfp4", 16, 4), ("mxfp8", 32, 8)]:
        _check(d, f"QuantizedLinear(mode={mode})",
               LayerPair(lambda nn, m, mode=mode, g=group, b=bits: nn.QuantizedLinear.from_linear(
                   nn.Linear(64, 12, bias=False), g, b, mode=mode)), normal(3, 64), grad=False)

    # Activation modules with parameters, and containers.
    _check(d, "PReLU", LayerPair(lambda nn, m: nn.PReLU(4, init=0.3)), normal(3, 4), rng=rng)
    _check(d, "Sequential(Linear, GELU, Dropout, Linear)",
           LayerPair(lambda nn, m: nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Dropout(0.5), nn.Linear(8, 3))),
           normal(4, 6), rng=rng)
    _check(d, "GLU, Softmin, LogSoftmax, Softsign",
           LayerPair(lambda nn, m: nn.Sequential(nn.GLU(), nn.Softmin(), nn.LogSoftmax(), nn.Softsign())),
           normal(4, 6), rng=rng)

"""What the real-model tests (test_real_mlx_audio_models.py,
test_real_mlx_audio_tts.py) check on each model, written once: the same
inputs to both frameworks, every output against MLX's, the gradient of a
random projection of the main output, and greedy decoding where Alloy is
fed MLX's tokens."""
import importlib.util
import sys
import types

import numpy as np

import alloy
import alloy.core as ax
import alloy.utils  # noqa: F401
import mlx
import mlx.core as mx
import mlx.utils  # noqa: F401
from mlx_float64_conv import float64_convs
from real_mlx_code import FRAMEWORKS, Loader, arrays_in, as_alloy
from test_real_mlx_vlm_vision import close


def build(framework, package, make):
    """The model `make(load)` builds from files of `framework`, in eval mode
    (dropout layers would otherwise draw random masks), and its `load` (a
    file of `package` by name, any other module by its full name)."""
    loader = Loader(FRAMEWORKS[framework], kernels=False)

    def load(name):
        return loader.load(f"{package}.{name}" if "." not in name else name)

    model = make(load)
    model.eval()
    return model, load


def stand_in_missing(monkeypatch, stand_ins):
    """Packages the models import for what no test runs (hub downloads,
    tokenizers, progress bars), as stand-ins {package: {name: value}} where
    they are not installed."""
    # All looked up before any is set: a stand-in has no __spec__ to find.
    missing = [p for p in stand_ins if importlib.util.find_spec(p.split(".")[0]) is None]
    for package in missing:
        monkeypatch.setitem(sys.modules, package, types.SimpleNamespace(**stand_ins[package]))


def build_pair(name, package, spec, weights_of):
    """(spec, (MLX model, load), (Alloy model, load)): the model of
    `spec["make"]` built from each framework's files, both given the weights
    `weights_of(mlx_model)` returns."""
    mlx_model, mlx_load = build("mlx", package, spec["make"])
    weights = weights_of(mlx_model)
    assert weights, f"{name}: the model has no parameters"
    mlx_model.load_weights(weights, strict=True)
    alloy_model, alloy_load = build("alloy", package, spec["make"])
    alloy_model.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)
    return spec, (mlx_model, mlx_load), (alloy_model, alloy_load)


def features(*shape, scale=1.0):
    """An input builder: normal float32 values of `shape`, times `scale`."""
    return lambda rng: (scale * rng.standard_normal(shape)).astype(np.float32)


def both(xs):
    """numpy inputs as arrays of MLX and of Alloy."""
    return [mx.array(x) for x in xs], [ax.array(x) for x in xs]


def check_outputs(forward, mlx_model, alloy_model, mlx_xs, alloy_xs, tolerances=None):
    """Every array forward() returns agrees with MLX's (output i within
    tolerances[i] of its largest where given, else 1e-4); returns MLX's."""
    want = arrays_in(forward(mlx_model, mx, *mlx_xs), mx)
    got = arrays_in(forward(alloy_model, ax, *alloy_xs), ax)
    assert want and len(got) == len(want), f"{len(got)} output arrays, MLX {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        what = f"output {i} {tuple(w.shape)}"
        if mx.issubdtype(w.dtype, mx.floating) or mx.issubdtype(w.dtype, mx.complexfloating):
            close(g, w, what, **({"tol": tolerances[i]} if tolerances and i in tolerances else {}))
        else:
            # Sampled tokens and flags: equal, exactly (an all-zero chunk,
            # token 0, is a real outcome here, not a dead signal).
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], f"{what}: {g.dtype}, MLX {w.dtype}"
            np.testing.assert_array_equal(np.array(g), np.array(w), err_msg=what)
    return want


def projected_main_output(forward, core, model, rest, cot):
    """x -> sum(main output of forward(model, core, x, *rest) * cot)."""
    def f(x):
        main = arrays_in(forward(model, core, x, *rest), core)[0]
        return (main.astype(core.float32) * core.array(cot)).sum()
    return f


def check_input_gradient(forward, mlx_model, alloy_model, mlx_xs, alloy_xs, cot):
    """The first (float) input's gradient through the projected main output:
    the model depends on its input (close() refuses an all-zero MLX
    gradient) and its backward pass agrees. Where Alloy's and MLX's float32
    gradients differ by more than close() allows, MLX's own in float64
    (model and float inputs upcast, on the CPU) decides: Alloy's must be
    within close() of it. On a few seeds MLX's float32 gradient is the one
    off (a deep vocoder's rounding), and so the test fails only where Alloy is."""
    want = mx.grad(projected_main_output(forward, mx, mlx_model, mlx_xs[1:], cot))(mlx_xs[0])
    got = ax.grad(projected_main_output(forward, ax, alloy_model, alloy_xs[1:], cot))(alloy_xs[0])
    try:
        close(got, want, "input gradient")
    except AssertionError as apart:
        exact = mlx_float64_gradient(forward, mlx_model, mlx_xs, cot)
        if exact is None:
            raise
        close(got, exact, f"input gradient (MLX's float32 one failed: {apart}; against MLX's in float64)")


def mlx_float64_gradient(forward, mlx_model, mlx_xs, cot):
    """check_input_gradient's gradient in float64 on MLX's CPU stream
    (convolutions from MLX's other ops: mlx_float64_conv), or None where MLX
    cannot run the model in float64. The model's float32 parameters are
    upcast for the call; its own parameters are put back after."""
    def upcast(x):
        return x.astype(mx.float64) if x.dtype == mx.float32 else x

    own = mlx_model.parameters()
    mlx_model.set_dtype(mx.float64, lambda t: t == mx.float32)
    try:
        with mx.stream(mx.cpu), float64_convs():
            xs = [upcast(x) for x in mlx_xs]
            g = mx.grad(projected_main_output(forward, mx, mlx_model, xs[1:], cot))(xs[0])
            mx.eval(g)
        return g if g.dtype == mx.float64 else None
    except (ValueError, RuntimeError, TypeError):
        return None
    finally:
        mlx_model.update(own)


class GreedyPicks:
    """MLX decodes greedily; Alloy is fed MLX's tokens, so that one near tie
    cannot send the two down different paths, and its own greedy choice is
    checked against MLX's wherever MLX's top two logits are clearly apart."""

    def __init__(self):
        self.mlx_tokens, self.alloy_tokens = [], []

    @staticmethod
    def greedy(logits, core):
        return int(np.argmax(np.array(logits.astype(core.float32)).reshape(-1)))

    def mlx_pick(self, step, logits):
        self.mlx_tokens.append(self.greedy(logits, mx))
        return self.mlx_tokens[-1]

    def alloy_pick(self, step, logits):
        self.alloy_tokens.append(self.greedy(logits, ax))
        return self.mlx_tokens[step]

    def check_step(self, i, mlx_logits):
        if i >= len(self.mlx_tokens):
            return  # a decode loop of the model's own: its tokens are compared by the caller
        top = np.sort(np.array(mlx_logits.astype(mx.float32)).reshape(-1))
        if top[-1] - top[-2] > 1e-3 * np.max(np.abs(top)):
            assert self.alloy_tokens[i] == self.mlx_tokens[i], \
                f"step {i}: token {self.alloy_tokens[i]}, MLX {self.mlx_tokens[i]}"


def decode_both(rng, spec, models):
    """spec["decode"] through MLX, then Alloy fed MLX's tokens, on the same
    fresh inputs: (MLX's steps, Alloy's steps, the GreedyPicks)."""
    (mlx_model, mlx_load), (alloy_model, alloy_load) = models
    steps = spec.get("steps", 4)
    mlx_xs, alloy_xs = both([make(rng) for make in spec["inputs"]])
    picks = GreedyPicks()
    want = spec["decode"](mlx_model, mx, mlx_xs, picks.mlx_pick, steps, mlx_load)
    got = spec["decode"](alloy_model, ax, alloy_xs, picks.alloy_pick, steps, alloy_load)
    return want, got, picks


def weight_of(package, model, key):
    return dict(package.utils.tree_flatten(model.parameters()))[key]


def weight_loss(spec, package, model, xs, cot):
    """The projected main output as a function of the weight spec["param"]."""
    core, key = package.core, spec["param"]

    def f(w):
        model.update(package.utils.tree_unflatten([(key, w)]))
        return projected_main_output(spec["forward"], core, model, xs[1:], cot)(xs[0])
    return f


def check_forward_and_gradient(rng, spec, mlx_model, alloy_model):
    """spec's forward on the same fresh inputs: every output, then the
    gradient of a random projection of the main output, with respect to the
    float input, or (token ids only) to the weight spec["param"]; none when
    spec["grad"] is False."""
    mlx_xs, alloy_xs = both([make(rng) for make in spec["inputs"]])
    want = check_outputs(spec["forward"], mlx_model, alloy_model, mlx_xs, alloy_xs, spec.get("tolerances"))
    if not spec.get("grad", True):
        return
    cot = rng.standard_normal(want[0].shape).astype(np.float32)
    if "param" in spec:
        want_grad = mx.grad(weight_loss(spec, mlx, mlx_model, mlx_xs, cot))(weight_of(mlx, mlx_model, spec["param"]))
        got_grad = ax.grad(weight_loss(spec, alloy, alloy_model, alloy_xs, cot))(
            weight_of(alloy, alloy_model, spec["param"]))
        close(got_grad, want_grad, f"gradient for {spec['param']}")
        return
    check_input_gradient(spec["forward"], mlx_model, alloy_model, mlx_xs, alloy_xs, cot)


def check_cached_decoding(rng, spec, models):
    """spec["decode"]'s steps agree: tokens of a decode loop of the model's
    own exactly, logits within close() and greedy tokens where MLX's top two
    are apart."""
    want, got, picks = decode_both(rng, spec, models)
    assert len(want) == spec.get("steps", 4) and len(got) == len(want), f"{len(got)} steps, MLX {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if np.issubdtype(np.array(w).dtype, np.integer):
            # a decode loop of the model's own with a greedy sampler: its tokens
            np.testing.assert_array_equal(np.array(g), np.array(w), err_msg=f"step {i} tokens")
            continue
        close(g, w, f"step {i} logits")
        picks.check_step(i, w)

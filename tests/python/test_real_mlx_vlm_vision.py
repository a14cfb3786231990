"""mlx-vlm's vision towers, unchanged, on Alloy against real MLX.

Each model's `vision.py` (with its `config.py`, read from the installed
mlx-vlm at test time, see real_mlx_code.py) is loaded twice: as it is against
real MLX (CPU), and with its MLX imports pointed at `alloy.core` / `alloy.nn`.
Both get one tiny vision configuration and the same fresh random weights,
then the same fresh random image (or, for the Qwen-VL family, the same
flattened patches and grid), and every array the tower returns must agree;
so must the gradient of a random projection of its output with respect to
the pixels (convolutions, interpolation, windowed attention backwards).

The list holds the 41 of mlx-vlm 0.7.10's 78 vision towers that build from
that one configuration. The others need settings of their own (inputs with
extra arguments: mllama's aspect ratios, molmo's masks; encoders with fixed
image sizes: moondream, florence2; towers with no VisionModel: SAM 3,
DeepSeek-V4) or packages that are not installed here (cv2, transformers).
"""
import dataclasses
import importlib.util
import pathlib
import re

import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader, arrays_in, as_alloy, dataclass_from

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax

MODELS = pathlib.Path(importlib.util.find_spec("mlx_vlm").submodule_search_locations[0]) / "models"

# One configuration for every tower: each VisionConfig takes the fields it
# declares. 32x32 images of 8x8 patches: a 4x4 grid, merged 2x2 where the
# tower merges.
VISION = dict(
    model_type="tiny", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
    image_size=32, patch_size=8, num_channels=3, layer_norm_eps=1e-6, depth=2, embed_dim=32, num_heads=2,
    spatial_merge_size=2, spatial_patch_size=8, temporal_patch_size=2, in_channels=3, in_chans=3,
    out_hidden_size=32, projection_dim=32, mlp_ratio=2.0, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
    hidden_act="gelu", window_size=64, fullatt_block_indexes=[1], intermediate_size_mlp=64, out_channels=32,
    vision_output_dim=32, rope_theta=10000.0, num_positions=16, max_num_patches=16, vocab_size=97,
    width=32, layers=2, heads=2,  # (step3p7's perception encoder names its sizes so)
)

# How each tower takes its image: "nhwc" (batch, height, width, channels, as
# mlx-vlm's models pass pixels), "nchw", or "patches" (the Qwen-VL family:
# one row per patch of channels x frames x 8 x 8 values, with grid_thw).
TOWERS = {
    "aya_vision": "nhwc", "cohere_compass": "patches", "deepseek_vl_v2": "nhwc", "dots_ocr": "patches",
    "ernie4_5_moe_vl": "patches", "gemma3": "nhwc", "gemma4": "nchw", "glm4v": "patches", "glm4v_moe": "patches",
    "glm5_next": "patches", "glm_ocr": "patches", "granite4_vision": "nhwc", "granite_vision": "nhwc",
    "hunyuan_vl": "patches", "idefics2": "nhwc", "idefics3": "nhwc", "internvl": "nhwc", "jina_vlm": "nchw",
    "llava": "nhwc", "llava_bunny": "nhwc", "llava_next": "nhwc", "llava_onevision": "nhwc", "llmjpvl": "nhwc",
    "mimo_v2": "patches", "minicpmo": "nhwc", "minicpmv4_6": "nhwc", "minimax_m3_vl": "patches",
    "muse_glimmer": "patches", "muse_spark": "patches", "nemotron_h_nano_omni": "nchw", "nemotron_parse": "nchw",
    "paligemma": "nhwc", "pixtral": "nhwc", "plamo2vl": "nhwc", "qwen2_5_vl": "patches", "qwen2_vl": "patches",
    "qwen3_omni_moe": "patches", "qwen3_vl": "patches", "qwen3_vl_moe": "patches", "step3p7": "nhwc",
    "zaya1_vl": "patches",
}
# Towers whose patches have no frame axis (channels x 8 x 8).
SINGLE_FRAME = {"ernie4_5_moe_vl", "hunyuan_vl"}
GRID = (1, 4, 4)


def vision_config(loaded_config, name):
    """The tower's VisionConfig from VISION; model_type is the one the tower
    accepts (it checks it), or the config's own default."""
    accepted = re.search(r'model_type\s*(?:not in|in|==|!=)\s*[\[(]?\s*"([^"]+)"',
                         (MODELS / name / "vision.py").read_text())
    cls = loaded_config.VisionConfig
    settings = dict(VISION)
    if accepted:
        settings["model_type"] = accepted.group(1)
    elif any(f.name == "model_type" and f.default is not dataclasses.MISSING for f in dataclasses.fields(cls)):
        del settings["model_type"]
    return dataclass_from(cls, settings)


def build(framework, name):
    loader = Loader(FRAMEWORKS[framework], kernels=False)
    config = loader.load(f"mlx_vlm.models.{name}.config")
    vision = loader.load(f"mlx_vlm.models.{name}.vision")
    return vision.VisionModel(vision_config(config, name))


def inputs(rng, name):
    kind = TOWERS[name]
    if kind == "patches":
        t, h, w = GRID
        width = 3 * 8 * 8 * (1 if name in SINGLE_FRAME else 2)
        return [rng.standard_normal((t * h * w, width)).astype(np.float32), np.array([GRID], dtype=np.int32)]
    x = rng.standard_normal((1, 32, 32, 3)).astype(np.float32)
    return [x if kind == "nhwc" else np.ascontiguousarray(x.transpose(0, 3, 1, 2))]


def random_weights(rng, tower, gain=1.0):
    """Normal weights that keep the signal alive through the tower, so the
    outputs depend on the pixels and attention on its scores: matrices and
    kernels with deviation gain / sqrt(fan-in) (MLX keeps the input axes
    last), norm scales near one as trained ones are, other vectors (biases)
    small, BatchNorm running variances positive. (Flat weights of 0.05 left
    attention uniform, which hides errors in the q/k path: they hid a
    missing conjugate in complex VJPs, found by the towers with RoPE through
    complex numbers; and fastvlm's output independent of the pixels.)"""
    weights = []
    for key, value in tree_flatten(tower.parameters()):
        if key.endswith("running_var"):
            w = rng.uniform(0.5, 1.5, value.shape)
        elif value.ndim == 1 and key.endswith(".weight"):
            w = 1 + rng.standard_normal(value.shape) * 0.1
        elif value.ndim >= 2:
            w = rng.standard_normal(value.shape) * gain / np.sqrt(np.prod(value.shape[1:]))
        else:
            w = rng.standard_normal(value.shape) * 0.05
        weights.append((key, mx.array(w.astype(np.float32)).astype(value.dtype)))
    return weights


def close(got, want, what, tol=1e-4, float64=None):
    """Alloy's result within tol of MLX's (relative to MLX's largest). Where
    it is not and `float64` gives the same computation on MLX in float64,
    Alloy must be no farther from that than MLX's own float32 result is: a
    deep tower can amplify MLX's rounding past tol (llava_bunny, seed
    3102747136: MLX 2.4e-4 from float64, Alloy 6.1e-5)."""
    got, want = np.array(got.astype(ax.float32)), np.array(want.astype(mx.float32))
    assert got.shape == want.shape, f"{what}: shape {got.shape}, MLX {want.shape}"
    # NaN exactly where MLX has it (a random speaker encoder's ReLU can
    # leave an utterance all zero, whose normalisation MLX differentiates to
    # NaN: seed 2468154870); the other elements compared as usual.
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN at {np.isnan(got).sum()} elements, MLX at {nan.sum()}"
    got, want = got[~nan], want[~nan]
    scale = np.max(np.abs(want), initial=0.0)
    assert scale > 0, f"{what}: MLX's values are all zero or NaN"
    err = np.max(np.abs(got - want)) / scale
    if err < tol or float64 is None:
        assert err < tol, f"{what} differs from MLX's by {err:.2e} of its largest (tolerance {tol:.0e})"
        return
    try:
        exact = np.array(float64(), dtype=np.float64)[~nan]
    except Exception as e:  # noqa: BLE001 - an op MLX lacks in float64 leaves the first verdict
        raise AssertionError(f"{what} differs from MLX's by {err:.2e} of its largest (tolerance {tol:.0e}); "
                             f"no float64 arbiter ({type(e).__name__}: {e})") from e
    ours, theirs = (np.max(np.abs(x - exact)) / scale for x in (got, want))
    assert ours <= max(theirs, tol), (f"{what} differs from MLX's by {err:.2e} of its largest (tolerance {tol:.0e}), "
                                      f"and from float64 by {ours:.2e} where MLX's float32 is {theirs:.2e} from it")


def in_float64(weights, name, xs, run):
    """`run(tower, xs)` on MLX's CPU with the tower's weights and float
    inputs in float64."""
    tower = build("mlx", name)
    tower.load_weights([(k, v.astype(mx.float64)) for k, v in weights], strict=True)
    with mx.stream(mx.cpu):
        return run(tower, [mx.array(x.astype(np.float64) if x.dtype.kind == "f" else x) for x in xs])


@pytest.mark.parametrize("name", sorted(TOWERS))
def test_vision_tower_matches_mlx(rng, name):
    mlx_tower = build("mlx", name)
    weights = random_weights(rng, mlx_tower)
    assert weights, f"{name}: the tower has no parameters"
    mlx_tower.load_weights(weights, strict=True)
    alloy_tower = build("alloy", name)
    alloy_tower.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)

    xs = inputs(rng, name)
    want = arrays_in(mlx_tower(*[mx.array(x) for x in xs]), mx)
    got = arrays_in(alloy_tower(*[ax.array(x) for x in xs]), ax)
    assert want and len(got) == len(want), f"{name}: {len(got)} output arrays, MLX {len(want)}"
    def output64(i):
        return lambda: in_float64(weights, name, xs, lambda tower, x64: arrays_in(tower(*x64), mx)[i])

    for i, (g, w) in enumerate(zip(got, want)):
        close(g, w, f"{name} output {i}", float64=output64(i))

    # The pixels' gradient through the largest output (the features).
    largest = max(range(len(want)), key=lambda i: want[i].size)
    cot = rng.standard_normal(want[largest].shape).astype(np.float32)

    def loss(core, tower, rest, dtype=None):
        dtype = dtype or core.float32
        return lambda x: (arrays_in(tower(x, *rest), core)[largest].astype(dtype) * core.array(cot, dtype)).sum()

    want_grad = mx.grad(loss(mx, mlx_tower, [mx.array(x) for x in xs[1:]]))(mx.array(xs[0]))
    got_grad = ax.grad(loss(ax, alloy_tower, [ax.array(x) for x in xs[1:]]))(ax.array(xs[0]))
    close(got_grad, want_grad, f"{name} gradient",
          float64=lambda: in_float64(weights, name, xs,
                                     lambda tower, x64: mx.grad(loss(mx, tower, x64[1:], mx.float64))(x64[0])))

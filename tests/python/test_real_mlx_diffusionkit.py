"""DiffusionKit (argmaxinc, 0.5.2)'s MLX models, unchanged, on Alloy against
real MLX: the multimodal diffusion transformer of Stable Diffusion 3 and
FLUX.1 (MMDiT), the VAE's encoder and decoder, and the CLIP text encoder.

The model files are read from the installed package at test time
(real_mlx_code.Loader points only their MLX imports at `alloy.core` /
`alloy.nn`). They import a logger from argmaxtools and typing names from
beartype, which are not installed here: stand-ins (logging, typing) take
their place, for both frameworks alike.

Each model gets a tiny configuration with float32 weights (the shipped ones
are bfloat16), real MLX's own initialisation from a fresh seed, and Alloy's
copy the same weights. The MMDiT runs as DiffusionKit's pipeline runs it:
`cache_modulation_params` for the sampling schedule first (it evaluates each
block's adaLN modulation per timestep, keyed by `timestep.item()`, then
offloads those weights by updating them to empty arrays), then one call per
timestep; its output and the gradient of a random projection of it with
respect to the latent must agree, as must the VAE's and CLIP's outputs.
The MMDiT calls attention with an argument MLX has since removed; a shim
drops it (sdpa_of_mlx_0_17).
"""
import importlib.util
import logging
import sys
import types
import typing

import ml_dtypes
import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader, arrays_in, as_alloy

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax

def _module(name, **names):
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so `from name.sub import x` finds name.sub
    module.__dict__.update(names)
    return module


STAND_INS = {
    "argmaxtools": _module("argmaxtools"),
    "argmaxtools.utils": _module("argmaxtools.utils", get_logger=logging.getLogger),
    "beartype": _module("beartype"),
    "beartype.typing": typing,
}


@pytest.fixture
def stand_ins(monkeypatch):
    """The stand-ins, for the packages that are not installed."""
    missing = {top for top in {n.split(".")[0] for n in STAND_INS} if importlib.util.find_spec(top) is None}
    for name, module in STAND_INS.items():
        if name.split(".")[0] in missing:
            monkeypatch.setitem(sys.modules, name, module)


def load(framework, name):
    return Loader(FRAMEWORKS[framework], kernels=False).load(f"diffusionkit.mlx.{name}")


def mmdit_config(config_module, flux, dtype):
    c = config_module
    dtype = getattr(c.mx, dtype)
    common = dict(num_heads=2, vae_latent_dim=4, pooled_text_embed_dim=24, token_level_text_embed_dim=40,
                  frequency_embed_dim=32, max_latent_resolution=8, patch_size=2, dtype=dtype, float16_dtype=dtype)
    if flux:
        # FLUX.1: multimodal then unified blocks, RoPE over (text, height,
        # width) axes before attention, RMS-normalised queries and keys,
        # patches by reshaping.
        return c.MMDiTConfig(depth_multimodal=1, depth_unified=2, hidden_size_override=64,
                             patchify_via_reshape=True, pos_embed_type=c.PositionalEncoding.PreSDPARope,
                             rope_axes_dim=(8, 12, 12), use_qk_norm=True, **common)
    # Stable Diffusion 3: multimodal blocks only, a learned positional
    # embedding, patches by a strided convolution.
    return c.MMDiTConfig(depth_multimodal=2, hidden_size_override=64, **common)


def fresh_weights(rng, model, dtype):
    """The model's own initialisation with every vector (norms' scales and
    biases, zero or one at initialisation) drawn away from 0 and 1."""
    weights = []
    for k, v in tree_flatten(model.parameters()):
        value = np.array(v.astype(mx.float32))
        if v.ndim == 1 and (np.all(value == 0) or np.all(value == 1)):
            value = value + rng.normal(0.0, 0.1, v.shape)
        weights.append((k, mx.array(value.astype(np.float32)).astype(getattr(mx, dtype))))
    return weights


def pair(rng, build, dtype="float32"):
    """build(framework) for real MLX (seeded fresh) and Alloy, same weights."""
    mx.random.seed(int(rng.integers(2**31)))
    mlx_model = build("mlx")
    weights = fresh_weights(rng, mlx_model, dtype)
    assert weights
    mlx_model.load_weights(weights, strict=True)
    alloy_model = build("alloy")
    alloy_model.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)
    return mlx_model, alloy_model


def ml_dtypes_round(values):
    """float32 values rounded to bfloat16 (the inputs both frameworks get)."""
    return values.astype(ml_dtypes.bfloat16).astype(np.float32)


def close(got, want, what, tol=2e-4):
    got, want = np.array(got.astype(ax.float32)), np.array(want.astype(mx.float32))
    assert got.shape == want.shape, f"{what}: shape {got.shape}, MLX {want.shape}"
    assert np.all(np.isfinite(want)), f"{what}: MLX's values are not finite"
    scale = np.max(np.abs(want))
    assert scale > 0, f"{what}: MLX's values are all zero"
    err = np.max(np.abs(got - want)) / scale
    assert err < tol, f"{what} differs from MLX's by {err:.2e} of its largest"


def euler_sampling(core, loader, model, latent, text, pooled, flux, dtype):
    """Three Euler steps of a flow-matching sampler, as DiffusionKit's
    pipeline takes them: the package's own sampler schedule (sigmas, their
    timesteps, the denoised estimate), the modulation cached for the
    schedule, text tokens as (batch, tokens, 1, width). Returns the latent
    after each step."""
    sampling = loader.load("diffusionkit.mlx.sampler")
    sampler = sampling.FluxSampler(shift=1.0) if flux else sampling.ModelSamplingDiscreteFlow(shift=3.0)
    sigmas = core.concatenate([sampler.sigma(core.array([1000.0, 700.0, 400.0])), core.array([0.0])])
    timesteps = sampler.timestep(sigmas[:-1])
    dtype = getattr(core, dtype)
    model.cache_modulation_params(core.array(pooled).astype(dtype), timesteps.astype(dtype))
    x = core.array(latent)  # the sampler's state stays float32; the model gets its dtype
    tokens = core.expand_dims(core.array(text).astype(dtype), 2)
    steps = []
    for i in range(3):
        out = model(x.astype(dtype), tokens, core.broadcast_to(timesteps[i], [x.shape[0]]))
        assert out.dtype == dtype
        denoised = sampler.calculate_denoised(sigmas[i], out, x)
        x = x + (x - denoised) / sigmas[i] * (sigmas[i + 1] - sigmas[i])
        core.eval(x)
        steps.append(x)
    return steps


@pytest.fixture
def sdpa_of_mlx_0_17(monkeypatch):
    """DiffusionKit 0.5.2 was written for MLX 0.17, whose
    fast.scaled_dot_product_attention took `memory_efficient_threshold`;
    MLX 0.32 (and Alloy, which follows it) refuse that argument. A shim that
    drops it, on both frameworks alike."""
    for fast in (mx.fast, ax.fast):
        sdpa = fast.scaled_dot_product_attention

        def shim(q, k, v, *, memory_efficient_threshold=None, _sdpa=sdpa, **kwargs):
            return _sdpa(q, k, v, **kwargs)

        monkeypatch.setattr(fast, "scaled_dot_product_attention", shim)


# (FLUX.1 layout, dtype, tolerance): the shipped models compute in bfloat16,
# whose rounding of the two frameworks' different summation orders adds up
# over the three steps.
MMDIT_CASES = {"sd3": (False, "float32", 2e-4), "flux": (True, "float32", 2e-4),
               "flux_bfloat16": (True, "bfloat16", 1e-2)}


@pytest.mark.parametrize("case", sorted(MMDIT_CASES))
def test_mmdit_sampling_matches_mlx(rng, stand_ins, sdpa_of_mlx_0_17, case):
    flux, dtype, tol = MMDIT_CASES[case]
    loaders = {}

    def build(framework):
        loaders[framework] = loader = Loader(FRAMEWORKS[framework], kernels=False)  # one config module for all files
        config = mmdit_config(loader.load("diffusionkit.mlx.config"), flux, dtype)
        return loader.load("diffusionkit.mlx.mmdit").MMDiT(config)

    mlx_model, alloy_model = pair(rng, build, dtype)
    batch = 2
    latent = rng.standard_normal((batch, 8, 8, 4)).astype(np.float32)
    text = rng.standard_normal((batch, 5, 40)).astype(np.float32)
    pooled = rng.standard_normal((batch, 24)).astype(np.float32)
    if dtype == "bfloat16":
        latent, text, pooled = (ml_dtypes_round(v) for v in (latent, text, pooled))
    want = euler_sampling(mx, loaders["mlx"], mlx_model, latent, text, pooled, flux, dtype)
    got = euler_sampling(ax, loaders["alloy"], alloy_model, latent, text, pooled, flux, dtype)
    for i, (g, w) in enumerate(zip(got, want)):
        assert w.shape == (batch, 8, 8, 4)
        close(g, w, f"latent after step {i + 1}", tol)
    # The cache offloaded the modulation weights: empty in both.
    offloaded = [p for _, p in tree_flatten(alloy_model.final_layer.adaLN_modulation.parameters())]
    assert offloaded and all(p.size == 0 for p in offloaded)

    # The gradient of a random projection of one step's output with respect
    # to the latent (through the cached modulation).
    cot = rng.standard_normal((batch, 8, 8, 4)).astype(np.float32)

    def grad_of(core, loader, model):
        sampling = loader.load("diffusionkit.mlx.sampler")
        sampler = sampling.FluxSampler(shift=1.0) if flux else sampling.ModelSamplingDiscreteFlow(shift=3.0)
        t = sampler.timestep(sampler.sigma(core.array([400.0])))[0]
        tokens = core.expand_dims(core.array(text), 2)
        return core.grad(lambda x: (model(x, tokens, core.broadcast_to(t, [batch])) * core.array(cot)).sum())

    close(grad_of(ax, loaders["alloy"], alloy_model)(ax.array(latent)),
          grad_of(mx, loaders["mlx"], mlx_model)(mx.array(latent)), "MMDiT gradient with respect to the latent",
          max(tol, 1e-3))


def test_vae_decoder_and_encoder_match_mlx(rng, stand_ins):
    sizes = dict(block_out_channels=[16, 32], layers_per_block=1, resnet_groups=8)
    decoders = pair(rng, lambda fw: load(fw, "vae").VAEDecoder(in_channels=4, out_channels=3, **sizes))
    latent = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    want = decoders[0](mx.array(latent))
    got = decoders[1](ax.array(latent))
    assert want.shape == (1, 16, 16, 3)
    close(got, want, "VAE decoder")

    encoders = pair(rng, lambda fw: load(fw, "vae").VAEEncoder(in_channels=3, out_channels=8, **sizes))
    image = rng.standard_normal((1, 16, 16, 3)).astype(np.float32)
    want = arrays_in(encoders[0](mx.array(image)), mx)
    got = arrays_in(encoders[1](ax.array(image)), ax)
    assert want and len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        close(g, w, f"VAE encoder output {i}")

    cot = rng.standard_normal(want[0].shape).astype(np.float32)

    def grad_of(core, model):
        return core.grad(lambda x: (arrays_in(model(x), core)[0] * core.array(cot)).sum())

    close(grad_of(ax, encoders[1])(ax.array(image)), grad_of(mx, encoders[0])(mx.array(image)),
          "VAE encoder gradient", 1e-3)


def test_clip_text_encoder_matches_mlx(rng, stand_ins):
    def build(framework):
        loader = Loader(FRAMEWORKS[framework], kernels=False)
        clip = loader.load("diffusionkit.mlx.clip")
        config = loader.load("diffusionkit.mlx.config").CLIPTextModelConfig(
            num_layers=2, model_dims=32, num_heads=2, max_length=12, vocab_size=50, projection_dim=16)
        return clip.CLIPTextModel(config)

    models = pair(rng, build)
    tokens = rng.integers(0, 50, size=(2, 12)).astype(np.int32)
    want = arrays_in(models[0](mx.array(tokens)), mx)
    got = arrays_in(models[1](ax.array(tokens)), ax)
    assert want and len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        close(g, w, f"CLIP output {i}")

"""f5-tts-mlx's diffusion transformer (dit.py with convnext_v2.py and
rope.py, unchanged: written with einops' array-API functions on mx arrays)
on Alloy against real MLX: the same small configuration, fresh random
weights and inputs (noised mel frames, the masked conditioning audio,
text tokens, a time step per batch row), with and without the
classifier-free-guidance drops, give the same velocity field. (Its frame
mask calls `.expand`, a PyTorch method neither MLX's array nor Alloy's
has: the package's own sampler passes no mask.)"""
import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader
from real_mlx_code import as_alloy

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax


@pytest.mark.parametrize("drop", [False, True])
def test_dit_matches_mlx(rng, drop):
    batch, frames, mels = 2, 24, 20
    noised = rng.standard_normal((batch, frames, mels)).astype(np.float32)
    cond = rng.standard_normal((batch, frames, mels)).astype(np.float32)
    text = rng.integers(0, 50, (batch, 10))
    time = rng.random(batch).astype(np.float32)
    outputs, weights = {}, None
    for fw, core in (("mlx", mx), ("alloy", ax)):
        dit = Loader(FRAMEWORKS[fw], kernels=False).load("f5_tts_mlx.dit")
        model = dit.DiT(dim=64, depth=2, heads=4, dim_head=16, mel_dim=mels, text_num_embeds=50, text_dim=32,
                        conv_layers=1)
        if weights is None:
            weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.1).astype(np.float32)))
                       for k, v in tree_flatten(model.parameters())]
        model.load_weights(weights if fw == "mlx" else [(k, as_alloy(v)) for k, v in weights], strict=True)
        out = model(core.array(noised), core.array(cond), core.array(text), core.array(time), drop_audio_cond=drop,
                    drop_text=drop)
        outputs[fw] = np.array(out)
    assert outputs["alloy"].shape == outputs["mlx"].shape == (batch, frames, mels)
    assert np.max(np.abs(outputs["alloy"] - outputs["mlx"])) / np.max(np.abs(outputs["mlx"])) < 1e-5

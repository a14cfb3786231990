"""mlx-audio's neural audio codecs, unchanged, on Alloy against real MLX:
Descript's DAC and SNAC (strided and transposed 1-D convolutions, Snake
activations, weight-normalised layers, residual vector quantisation; SNAC
as its 24 kHz model, without the local attention, which mlx-audio's file
applies to channels-last input as if channels-first; through encode and
decode), loaded from the installed package with their
imports pointed at Alloy (real_mlx_code.py). Small configurations, the same
fresh random weights and audio on both sides; the codes must be equal and
every array must agree."""
import importlib.util
import sys
import types
import typing

import numpy as np
import pytest
from real_mlx_code import arrays_in, as_alloy, load

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax

def encode_decode(codec, audio):
    """SNAC as its users run it (its __call__ hands the decoder channels-first
    latents, which it does not take): codes, then audio from the codes."""
    codes = codec.encode(audio)
    return codes, codec.decode(codes)


def vocos(module, _):
    """A small Vocos from its own hyperparameter format (mel features, ConvNeXt
    backbone, ISTFT head)."""
    return module.Vocos.from_hparams(dict(
        feature_extractor=dict(class_path="vocos.feature_extractors.MelSpectrogramFeatures",
                               init_args=dict(sample_rate=16000, n_fft=256, hop_length=64, n_mels=16)),
        backbone=dict(init_args=dict(input_channels=16, dim=32, intermediate_dim=64, num_layers=2)),
        head=dict(init_args=dict(dim=32, n_fft=256, hop_length=64))))


def bigvgan(module, _):
    return module.BigVGAN(module.BigVGANConfig(
        num_mels=16, upsample_rates=[4, 2], upsample_kernel_sizes=[8, 4], upsample_initial_channel=32,
        resblock="1", resblock_kernel_sizes=[3, 5], resblock_dilation_sizes=[[1, 3], [1, 3]],
        activation="snakebeta", snake_logscale=True))


# name: (module, class or builder, settings, how it is run, input shape)
CODECS = {
    "dac": ("mlx_audio.codec.models.descript.dac", "DAC",
            dict(encoder_dim=8, encoder_rates=[2, 4], decoder_dim=32, decoder_rates=[4, 2], n_codebooks=4,
                 codebook_size=64, codebook_dim=4, sample_rate=16000), lambda codec, audio: codec(audio), (1, 1, 1024)),
    "snac": ("mlx_audio.codec.models.snac.snac", "SNAC",
             dict(sampling_rate=16000, encoder_dim=8, encoder_rates=[2, 4], decoder_dim=32, decoder_rates=[4, 2],
                  attn_window_size=None, codebook_size=64, codebook_dim=4, vq_strides=[2, 1], noise=False), encode_decode, (1, 1, 1024)),
    "vocos": ("mlx_audio.codec.models.vocos.vocos", vocos, None, lambda codec, audio: codec(audio), (2048,)),
    # mel frames in, audio out (anti-aliased Snake activations: up- and down-sampling filters)
    "bigvgan": ("mlx_audio.codec.models.bigvgan.bigvgan", bigvgan, None, lambda codec, mel: codec(mel), (1, 16, 20)),
}


@pytest.mark.parametrize("name", sorted(CODECS))
def test_codec_matches_mlx(rng, monkeypatch, name):
    module, cls, settings, run, shape = CODECS[name]

    def make(loaded):
        return cls(loaded, settings) if callable(cls) else getattr(loaded, cls)(**settings)

    # Packages their files import for what the test does not use (the hub
    # download of from_pretrained, a YAML config file; `Literal` from
    # typing_extensions), where they are not installed: stand-ins.
    for package, names in {"huggingface_hub": dict(snapshot_download=None), "yaml": dict(safe_load=None),
                           "typing_extensions": dict(Literal=typing.Literal)}.items():
        if importlib.util.find_spec(package) is None:
            monkeypatch.setitem(sys.modules, package, types.SimpleNamespace(**names))
    mlx_codec = make(load(module, "mlx"))
    weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.1).astype(np.float32)).astype(v.dtype))
               for k, v in tree_flatten(mlx_codec.parameters())]
    mlx_codec.load_weights(weights, strict=True)
    alloy_codec = make(load(module, "alloy"))
    alloy_codec.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)

    audio = (rng.standard_normal(shape) * 0.3).astype(np.float32)
    want = arrays_in(run(mlx_codec, mx.array(audio)), mx)
    got = arrays_in(run(alloy_codec, ax.array(audio)), ax)
    assert want and len(got) == len(want), f"{name}: {len(got)} arrays, MLX {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.array(g), np.array(w)
        assert g.shape == w.shape and g.dtype == w.dtype, f"{name} array {i}: {g.shape} {g.dtype}, MLX {w.shape} {w.dtype}"
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: codes {i}")
        else:
            scale = np.max(np.abs(w))
            assert scale > 0, f"{name} array {i}: MLX's values are all zero"
            err = np.max(np.abs(g - w)) / scale
            assert err < 1e-4, f"{name} array {i} {w.shape} differs from MLX's by {err:.2e} of its largest"

"""mlx-audio's signal processing (mlx_audio/dsp.py: windows, STFT and its
inverse, mel filterbanks, Kaldi fbank features and deltas), the front end of
its speech models, loaded unchanged from the installed package with its
imports pointed at Alloy (real_mlx_code.py), against the same file on real
MLX on fresh random audio. The random dither of the Kaldi features is drawn
after the same seed on both sides."""
import numpy as np
import pytest
from real_mlx_code import load

import mlx.core as mx

import alloy.core as ax

DSP = "mlx_audio.dsp"


@pytest.fixture(scope="module")
def dsp():
    return load(DSP, "mlx"), load(DSP, "alloy")


def agree(got, want, what, rtol=2e-5):
    got, want = np.array(got), np.array(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, MLX {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, MLX {want.dtype}"
    scale = np.max(np.abs(want))
    assert scale > 0, f"{what}: MLX's values are all zero"
    err = np.max(np.abs(got - want)) / scale
    assert err < rtol, f"{what} differs from MLX's by {err:.2e} of its largest"


@pytest.mark.parametrize("window", ["hann", "hamming", "blackman", "bartlett"])
@pytest.mark.parametrize("periodic", [False, True])
def test_windows(dsp, window, periodic):
    fn = {"hann": "hanning"}.get(window, window)
    for n in (3, 400, 512):  # (their formulas divide by n - 1)
        agree(getattr(dsp[1], fn)(n, periodic), getattr(dsp[0], fn)(n, periodic), f"{fn}({n})")


STFTS = [dict(n_fft=400, hop_length=160), dict(n_fft=512, win_length=400, window="hamming"),
         dict(n_fft=256, center=False), dict(n_fft=320, pad_mode="constant", window="blackman")]


@pytest.mark.parametrize("settings", STFTS, ids=[str(i) for i in range(len(STFTS))])
def test_stft_and_istft(dsp, rng, settings):
    audio = rng.standard_normal(4000).astype(np.float32)
    want = dsp[0].stft(mx.array(audio), **settings)
    got = dsp[1].stft(ax.array(audio), **settings)
    agree(got, want, "stft")
    if settings.get("center", True) and "win_length" not in settings:
        kw = dict(hop_length=settings.get("hop_length"), window=settings.get("window", "hann"), length=len(audio))
        # istft takes (frequencies, frames)
        back_want = dsp[0].istft(want.T, **kw)
        back_got = dsp[1].istft(got.T, **kw)
        agree(back_got, back_want, "istft")


@pytest.mark.parametrize("norm,scale", [(None, "htk"), ("slaney", "slaney"), ("slaney", "htk")])
def test_mel_filters(dsp, norm, scale):
    for sr, n_fft, n_mels in ((16000, 400, 80), (24000, 1024, 128)):
        kw = dict(norm=norm, mel_scale=scale)
        agree(dsp[1].mel_filters(sr, n_fft, n_mels, **kw), dsp[0].mel_filters(sr, n_fft, n_mels, **kw),
              f"mel_filters({sr}, {n_fft}, {n_mels}, {kw})")


@pytest.mark.parametrize("settings", [dict(sample_rate=16000, win_len=400, win_inc=160, num_mels=80, dither=0.0),
                                      dict(sample_rate=48000, dither=1.0),
                                      dict(sample_rate=16000, win_len=400, win_inc=160, num_mels=40,
                                           win_type="povey", dither=0.0, snip_edges=False)])
def test_kaldi_fbank_and_deltas(dsp, rng, settings):
    audio = (rng.standard_normal(16000) * 0.1).astype(np.float32)
    seed = int(rng.integers(2**31))
    mx.random.seed(seed)
    want = dsp[0].compute_fbank_kaldi(mx.array(audio), **settings)
    ax.random.seed(seed)
    got = dsp[1].compute_fbank_kaldi(ax.array(audio), **settings)
    agree(got, want, f"compute_fbank_kaldi({settings})", rtol=1e-4)
    agree(dsp[1].compute_deltas_kaldi(got), dsp[0].compute_deltas_kaldi(want), "compute_deltas_kaldi", rtol=1e-4)

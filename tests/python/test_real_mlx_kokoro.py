"""kokoro-mlx's text-to-speech model (model.py, modules.py, istftnet.py,
unchanged) on Alloy against real MLX: the whole forward from phonemes to
waveform (ALBERT encoder, LSTM duration and prosody predictors, AdaIN
residual blocks, weight-normalised convolutions and transposed
convolutions, the harmonic-plus-noise source, iSTFT) with a small
configuration (the decoder's 512 channels are fixed by the file), the same
fresh random weights and style vector, and the same seed for the source's
random phases and noise.

The predicted durations are rounded to whole frames, so both sides must
agree on every one of them for the waveforms to have the same length."""
import numpy as np
from real_mlx_code import FRAMEWORKS, Loader
from real_mlx_code import as_alloy

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax


def test_kokoro_speaks_as_mlx(rng):
    style = rng.standard_normal(256).astype(np.float32)
    seed = int(rng.integers(2**31))
    waves, weights = {}, None
    for fw, core in (("mlx", mx), ("alloy", ax)):
        loader = Loader(FRAMEWORKS[fw], kernels=False)
        config, model_file = loader.load("kokoro_mlx.config"), loader.load("kokoro_mlx.model")
        settings = config.KokoroConfig(
            istftnet=config.ISTFTNetConfig(upsample_kernel_sizes=[8, 4], upsample_rates=[4, 2], gen_istft_hop_size=4,
                                           gen_istft_n_fft=16, resblock_dilation_sizes=[[1, 3, 5], [1, 3, 5]],
                                           resblock_kernel_sizes=[3, 5], upsample_initial_channel=512),
            plbert=config.PLBertConfig(hidden_size=64, num_attention_heads=2, intermediate_size=128,
                                       max_position_embeddings=64, num_hidden_layers=2),
            vocab={c: i + 1 for i, c in enumerate("abcdefghij")}, hidden_dim=512, max_conv_dim=512, n_layer=1,
            n_token=20, style_dim=128, max_dur=8)
        model = model_file.KokoroModel(settings)
        if weights is None:
            weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.1).astype(np.float32)))
                       for k, v in tree_flatten(model.parameters())]
        model.load_weights(weights if fw == "mlx" else [(k, as_alloy(v)) for k, v in weights], strict=True)
        model.eval()
        core.random.seed(seed)
        waves[fw] = np.array(model.forward("bjhadg", core.array(style)))
    assert waves["mlx"].ndim == 1 and waves["mlx"].size > 0
    assert waves["alloy"].shape == waves["mlx"].shape, "the predicted durations differ"
    # normal draws to the last bit (erfinv), convolutions summed in other orders
    assert np.max(np.abs(waves["alloy"] - waves["mlx"])) / np.max(np.abs(waves["mlx"])) < 1e-4

"""mlx-embeddings' text encoders (BERT, XLM-RoBERTa, ModernBERT with its
local/global attention, Qwen3), their files unchanged, on Alloy against real
MLX: the same tiny configuration, fresh random weights and a padded batch
with its attention mask give the same hidden states, pooled outputs and
normalised embeddings."""
import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader
from mlx_lm_tiny_configs import TINY, args_from
from real_mlx_code import as_alloy

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax

CONFIG = dict(TINY, model_type="tiny", type_vocab_size=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
              global_attn_every_n_layers=2, local_attention=8, global_rope_theta=10000.0,
              local_rope_theta=10000.0, pad_token_id=0, architectures=["tiny"], max_position_embeddings=64)


@pytest.mark.parametrize("name", ["bert", "xlm_roberta", "modernbert", "qwen3"])
def test_encoder_matches_mlx(rng, name):
    tokens = rng.integers(1, 90, (2, 11))
    mask = np.ones((2, 11), np.int32)
    mask[1, 8:] = 0  # the second sequence padded
    outputs, weights = {}, None
    for fw, core in (("mlx", mx), ("alloy", ax)):
        module = Loader(FRAMEWORKS[fw], kernels=False).load("mlx_embeddings.models." + name)
        model = module.Model(args_from(CONFIG, module))
        if weights is None:
            weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.05).astype(np.float32)))
                       for k, v in tree_flatten(model.parameters())]
        model.load_weights(weights if fw == "mlx" else [(k, as_alloy(v)) for k, v in weights], strict=True)
        result = model(core.array(tokens), attention_mask=core.array(mask))
        outputs[fw] = {k: np.array(v) for k, v in vars(result).items() if hasattr(v, "shape")}
    assert outputs["alloy"].keys() == outputs["mlx"].keys() and "text_embeds" in outputs["mlx"]
    for k, want in outputs["mlx"].items():
        got = outputs["alloy"][k]
        assert got.shape == want.shape, k
        assert np.max(np.abs(got - want)) / np.max(np.abs(want)) < 1e-5, k

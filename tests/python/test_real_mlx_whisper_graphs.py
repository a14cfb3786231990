"""Two more public MLX packages, their files unchanged, on Alloy against
real MLX (loaded as in real_mlx_code.py; same fresh random weights and
inputs on both sides):

- mlx-whisper's model (whisper.py): the audio encoder (convolutions, GELU,
  sinusoidal positions, attention) and the text decoder's logits with
  cross-attention. Its tokenizer (tiktoken) is stood in for: the model never
  calls it.
- mlx-graphs' message-passing layers (GCN, GAT, GATv2, GIN, GraphSAGE and
  plain aggregations), which gather node features along edges and
  scatter-add, -max or -mean them back (`mlx_graphs.utils.scatter`).
"""
import os
import types

import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader
from real_mlx_code import as_alloy

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax


def same_weights(rng, module, scale):
    return [(k, mx.array((rng.standard_normal(v.shape) * scale).astype(np.float32)))
            for k, v in tree_flatten(module.parameters())]


def relative_error(got, want):
    return np.max(np.abs(got - want)) / np.max(np.abs(want))


def test_whisper_encoder_and_decoder_match_mlx(rng):
    mel = rng.standard_normal((2, 200, 80)).astype(np.float32)
    tokens = rng.integers(0, 1000, (2, 9))
    outputs, weights = {}, None
    for fw, core in (("mlx", mx), ("alloy", ax)):
        loader = Loader(FRAMEWORKS[fw], kernels=False, substitutes={
            "mlx_whisper.tokenizer": types.SimpleNamespace(Tokenizer=object, get_tokenizer=None)})
        whisper = loader.load("mlx_whisper.whisper")
        dims = whisper.ModelDimensions(n_mels=80, n_audio_ctx=100, n_audio_state=64, n_audio_head=4, n_audio_layer=2,
                                       n_vocab=1000, n_text_ctx=32, n_text_state=64, n_text_head=4, n_text_layer=2)
        model = whisper.Whisper(dims)
        weights = weights or same_weights(rng, model, 0.05)
        # strict=False: the decoder's causal mask and the alignment heads are
        # arrays the model makes, not parameters the file holds.
        model.load_weights(weights if fw == "mlx" else [(k, as_alloy(v)) for k, v in weights], strict=False)
        audio = model.embed_audio(core.array(mel))
        outputs[fw] = np.array(audio), np.array(model.logits(core.array(tokens), audio))
    # The encoder's two convolutions and GELUs sum in another order than MLX's;
    # on the GPU the convolutions are GEMMs of another blocking (1.3e-4 seen
    # there once in many runs, 1e-5 here).
    bound = 3e-4 if os.environ.get("ALLOY_TEST_DEVICE") == "gpu" else 1e-4
    assert relative_error(outputs["alloy"][0], outputs["mlx"][0]) < bound
    assert relative_error(outputs["alloy"][1], outputs["mlx"][1]) < bound


GRAPH_LAYERS = {
    "GCNConv": lambda conv, nn, f: conv.GCNConv(f, 16),
    "GCNConv with self loops": lambda conv, nn, f: conv.GCNConv(f, 16, add_self_loops=True),
    "GATConv": lambda conv, nn, f: conv.GATConv(f, 16, heads=2),
    "GATv2Conv": lambda conv, nn, f: conv.GATv2Conv(f, 16, heads=2, concat=False),
    "GINConv": lambda conv, nn, f: conv.GINConv(nn.Sequential(nn.Linear(f, 16), nn.ReLU(), nn.Linear(16, 16))),
    "SAGEConv": lambda conv, nn, f: conv.SAGEConv(f, 16),
    "SimpleConv mean": lambda conv, nn, f: conv.SimpleConv("mean"),
    "SimpleConv max": lambda conv, nn, f: conv.SimpleConv("max"),
}


@pytest.mark.parametrize("name", list(GRAPH_LAYERS))
def test_graph_layer_matches_mlx(rng, name):
    nodes, edges, features = 30, 120, 8
    edge_index = rng.integers(0, nodes, (2, edges)).astype(np.int32)
    x = rng.standard_normal((nodes, features)).astype(np.float32)
    outputs, weights = {}, None
    for fw, core in (("mlx", mx), ("alloy", ax)):
        loader = Loader(FRAMEWORKS[fw], kernels=False)
        layer = GRAPH_LAYERS[name](loader.load("mlx_graphs.nn.conv"), loader.framework.module("mlx.nn"), features)
        weights = weights if weights is not None else same_weights(rng, layer, 0.3)
        layer.load_weights(weights if fw == "mlx" else [(k, as_alloy(v)) for k, v in weights], strict=True)
        outputs[fw] = np.array(layer(core.array(edge_index), core.array(x)))
    assert outputs["alloy"].shape == outputs["mlx"].shape
    assert relative_error(outputs["alloy"], outputs["mlx"]) < 1e-5

"""Multi-head attention and the transformer stack built on it."""
import math

import numpy as np

import alloy.core as mx
from alloy.nn.layers.activations import relu
from alloy.nn.layers.base import Module
from alloy.nn.layers.dropout import Dropout
from alloy.nn.layers.linear import Linear
from alloy.nn.layers.normalization import LayerNorm
from alloy.nn.utils import checkpoint


def _lowest(dtype):
    """The most negative finite value of a floating dtype (MLX uses
    ``mx.finfo(dtype).min``; alloy.core may lack finfo)."""
    if hasattr(mx, "finfo"):
        return mx.finfo(dtype).min
    name = str(dtype).split(".")[-1]
    if name == "bfloat16":
        return -3.3895313892515355e38
    return float(np.finfo(np.dtype(name)).min)


class MultiHeadAttention(Module):
    """Projects queries, keys and values, splits them into ``num_heads``
    heads, attends with ``mx.fast.scaled_dot_product_attention`` (scale
    1/sqrt(head_dim)) and projects the concatenated heads back."""

    def __init__(self, dims, num_heads, query_input_dims=None, key_input_dims=None, value_input_dims=None,
                 value_dims=None, value_output_dims=None, bias=False):
        super().__init__()
        if dims % num_heads != 0:
            raise ValueError(
                "The input feature dimensions should be divisible by the "
                f"number of heads ({dims} % {num_heads}) != 0"
            )
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims

        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def _heads(self, x):
        # (B, L, D) -> (B, heads, L, D / heads)
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, -1).transpose(0, 2, 1, 3)

    def __call__(self, queries, keys, values, mask=None):
        queries = self._heads(self.query_proj(queries))
        keys = self._heads(self.key_proj(keys))
        values = self._heads(self.value_proj(values))
        scale = math.sqrt(1 / queries.shape[-1])
        out = mx.fast.scaled_dot_product_attention(queries, keys, values, scale=scale, mask=mask)
        batch, _, length, _ = out.shape
        out = out.transpose(0, 2, 1, 3).reshape(batch, length, -1)
        return self.out_proj(out)

    @staticmethod
    def create_additive_causal_mask(N, dtype=mx.float32):
        """An (N, N) mask to add to attention scores: 0 where key j <= query
        i, the dtype's lowest value above the diagonal."""
        indices = mx.arange(N)
        future = indices[:, None] < indices[None]
        return future.astype(dtype) * _lowest(dtype)


class TransformerEncoderLayer(Module):
    """Self-attention then an MLP, each with a residual connection; layer
    norms before each block (``norm_first``) or after each residual sum."""

    def __init__(self, dims, num_heads, mlp_dims=None, dropout=0.0, activation=relu, norm_first=True):
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, y):
        return self.linear2(self.dropout2(self.activation(self.linear1(y))))

    def __call__(self, x, mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + self._mlp(self.ln2(x))
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + self._mlp(x))


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory``, then an MLP, each
    with a residual connection and a layer norm (before or after)."""

    def __init__(self, dims, num_heads, mlp_dims=None, dropout=0.0, activation=relu, norm_first=True):
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, y):
        return self.linear2(self.dropout3(self.activation(self.linear1(y))))

    def __call__(self, x, memory, x_mask, memory_mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._mlp(self.ln3(x))
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + self._mlp(x))


class TransformerEncoder(Module):
    """``num_layers`` encoder layers and a final layer norm; with
    ``checkpoint`` each layer is recomputed during differentiation
    (nn.utils.checkpoint, which hands the layer's parameters in explicitly)."""

    def __init__(self, num_layers, dims, num_heads, mlp_dims=None, dropout=0.0, activation=relu, norm_first=True,
                 checkpoint=False):
        super().__init__()
        self.layers = [TransformerEncoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first)
                       for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x, mask):
        for layer in self.layers:
            x = checkpoint(layer)(x, mask) if self.checkpoint else layer(x, mask)
        return self.ln(x)


class TransformerDecoder(Module):
    """``num_layers`` decoder layers and a final layer norm."""

    def __init__(self, num_layers, dims, num_heads, mlp_dims=None, dropout=0.0, activation=relu, norm_first=True,
                 checkpoint=False):
        super().__init__()
        self.layers = [TransformerDecoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first)
                       for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x, memory, x_mask, memory_mask):
        for layer in self.layers:
            if self.checkpoint:
                x = checkpoint(layer)(x, memory, x_mask, memory_mask)
            else:
                x = layer(x, memory, x_mask, memory_mask)
        return self.ln(x)


class Transformer(Module):
    """An encoder over ``src`` and a decoder over ``tgt`` attending to the
    encoder's output (custom encoder/decoder modules may replace either)."""

    def __init__(self, dims=512, num_heads=8, num_encoder_layers=6, num_decoder_layers=6, mlp_dims=None,
                 dropout=0.0, activation=relu, custom_encoder=None, custom_decoder=None, norm_first=True,
                 checkpoint=False):
        super().__init__()
        self.encoder = custom_encoder or TransformerEncoder(num_encoder_layers, dims, num_heads, mlp_dims, dropout,
                                                            activation, norm_first, checkpoint)
        self.decoder = custom_decoder or TransformerDecoder(num_decoder_layers, dims, num_heads, mlp_dims, dropout,
                                                            activation, norm_first, checkpoint)

    def __call__(self, src, tgt, src_mask, tgt_mask, memory_mask):
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)

"""Multi-head attention."""
import math

import numpy as np

import alloy.core as mx
from alloy.nn.layers.base import Module
from alloy.nn.layers.linear import Linear


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

"""Positional encodings: rotary (RoPE), sinusoidal, and ALiBi biases."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


class RoPE(Module):
    """Rotates pairs of the first ``dims`` features by position-dependent
    angles (``mx.fast.rope``). ``traditional`` pairs adjacent features
    instead of the two halves; ``scale`` multiplies the positions."""

    def __init__(self, dims, traditional=False, base=10000, scale=1.0):
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self):
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x, offset=0):
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base, scale=self.scale,
                            offset=offset)


class SinusoidalPositionalEncoding(Module):
    """[sin(x f); cos(x f)] (or cos first) times ``scale``, for frequencies f
    spaced geometrically between ``max_freq`` and ``min_freq`` (times 2 pi
    with ``full_turns``); ``dims`` outputs per position."""

    def __init__(self, dims, min_freq=0.0001, max_freq=1, scale=None, cos_first=False, full_turns=False):
        super().__init__()
        if dims <= 0 or dims % 2:
            raise ValueError(f"[SinusoidalPositionalEncoding] dims must be positive and even but got {dims}.")
        half = dims // 2
        one_zero = 1 - mx.arange(0, half) / (half - 1)
        log_min, log_max = math.log(min_freq), math.log(max_freq)
        # frozen: a buffer, not a parameter
        self._sigmas = mx.exp(one_zero * (log_max - log_min) + log_min)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = scale if scale is not None else math.sqrt(2 / dims)
        self.cos_first = cos_first

    def __call__(self, x):
        y = x[..., None] * self._sigmas
        parts = [mx.cos(y), mx.sin(y)] if self.cos_first else [mx.sin(y), mx.cos(y)]
        return mx.concatenate(parts, axis=-1) * self.scale


class ALiBi(Module):
    """Attention with linear biases: adds -slope_h * |i - j| to the scores of
    head h for query i (counted from ``offset``) and key j."""

    @staticmethod
    def create_alibi_matrix(q_sequence_length, k_sequence_length, num_heads, offset, dtype=mx.float32):
        queries = mx.arange(offset, q_sequence_length + offset)[:, None]
        keys = mx.arange(k_sequence_length)[None, :]
        distance = mx.abs(queries - keys).astype(dtype)
        slopes = ALiBi.create_alibi_slope(num_heads).astype(dtype)
        return -distance[None, None] * slopes

    @staticmethod
    def create_alibi_slope(num_heads):
        # 2^(-8 h / n) for heads h = 1..n, as the ALiBi paper defines
        exponents = mx.arange(1, num_heads + 1).astype(mx.float32) * (-8.0 / num_heads)
        return mx.power(2.0, exponents)[:, None, None]

    def __call__(self, attention_scores, offset=0, mask=None):
        *_, heads, q_len, k_len = attention_scores.shape
        bias = self.create_alibi_matrix(q_len, k_len, heads, offset, attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias

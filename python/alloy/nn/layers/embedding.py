"""Embedding: a lookup table of vectors indexed by integer ids."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


class Embedding(Module):
    """``num_embeddings`` vectors of size ``dims``, drawn from N(0, 1/dims)."""

    def __init__(self, num_embeddings, dims):
        super().__init__()
        scale = math.sqrt(1 / dims)
        self.weight = mx.random.normal(shape=(num_embeddings, dims), scale=scale)

    def _extra_repr(self):
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x):
        return self.weight[x]

    def as_linear(self, x):
        """Uses the table as a linear map back to the vocabulary (tied output
        embeddings): x @ weight^T."""
        return x @ self.weight.T

    def to_quantized(self, group_size=None, bits=None, mode="affine"):
        from alloy.nn.layers.quantized import QuantizedEmbedding

        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)

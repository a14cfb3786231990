"""Quantized layers and ``nn.quantize``, on MLX's core quantization API
(``mx.quantize``, ``mx.dequantize``, ``mx.quantized_matmul``).

Weights are stored packed with per-group ``scales`` (and ``biases`` in the
affine mode) and are frozen: they are not trainable, only a float bias is.
"""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module
from alloy.utils import tree_map_with_path

# MLX's defaults when group_size / bits are left as None, per mode.
_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}


def _defaults(group_size, bits, mode):
    default_group, default_bits = _DEFAULTS.get(mode, (64, 4))
    return group_size or default_group, bits or default_bits


def _quantize_into(module, weight, group_size, bits, mode):
    # mx.quantize returns (w, scales, biases) in the affine mode and
    # (w, scales) in the floating-point modes.
    packed = mx.quantize(weight, group_size, bits, mode=mode)
    module.weight, module.scales = packed[0], packed[1]
    module.biases = packed[2] if len(packed) > 2 else None


class QuantizedLinear(Module):
    """A Linear layer whose weight is quantized to ``bits`` bits in groups
    of ``group_size`` along the input axis."""

    def __init__(self, input_dims, output_dims, bias=True, group_size=None, bits=None, mode="affine"):
        super().__init__()
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        _quantize_into(self, weight, self.group_size, self.bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def unfreeze(self, *args, **kwargs):
        # The packed weight, scales and biases can never be trained.
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)

    def _extra_repr(self):
        out_dims, in_dims = self.weight.shape
        in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
                f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}")

    def __call__(self, x):
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"], biases=self.get("biases"),
                                transpose=True, group_size=self.group_size, bits=self.bits, mode=self.mode)
        if "bias" in self:
            y = y + self["bias"]
        return y

    @classmethod
    def from_linear(cls, linear_layer, group_size=None, bits=None, mode="affine"):
        """A QuantizedLinear holding ``linear_layer``'s weight and bias."""
        output_dims, input_dims = linear_layer.weight.shape
        ql = cls(input_dims, output_dims, False, group_size, bits, mode=mode)
        _quantize_into(ql, linear_layer.weight, ql.group_size, ql.bits, mode)
        if "bias" in linear_layer:
            ql.bias = linear_layer.bias
        return ql


class QQLinear(Module):
    """A bias-free Linear layer whose input and weight are both quantized
    (``mx.qqmm``; modes ``"nvfp4"``, ``"mxfp8"``, ``"mxfp4"``).

    In training mode (the default) the weight is kept in floating point and
    quantized on every call, so it receives gradients. ``eval()`` packs it
    once (``weight`` becomes uint32 codes and ``scales`` appears); ``train()``
    unpacks it again. ``from_linear`` converts a bias-free ``nn.Linear``.
    """

    def __init__(self, input_dims, output_dims, group_size=None, bits=None, mode="nvfp4"):
        super().__init__()
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        scale = math.sqrt(1 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        self._quantized = False

    def _extra_repr(self):
        out_dims, in_dims = self.weight.shape
        if self.weight.dtype == mx.uint32:
            in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def quantize(self):
        """Packs the weight (idempotent)."""
        if not self._quantized:
            self.weight, self.scales = mx.quantize(self.weight, self.group_size, self.bits, mode=self.mode)
            self._quantized = True

    def dequantize(self):
        """Unpacks the weight back to floating point (idempotent)."""
        if self._quantized:
            self.weight = mx.dequantize(self.weight, scales=self.scales, group_size=self.group_size,
                                        bits=self.bits, mode=self.mode)
            del self.scales
            self._quantized = False

    def _set_training_mode(self, mode):
        super()._set_training_mode(mode)
        if mode:
            self.dequantize()
        else:
            self.quantize()

    def __call__(self, x):
        return mx.qqmm(x, self["weight"], scales=self.get("scales"), group_size=self.group_size,
                       bits=self.bits, mode=self.mode)

    @classmethod
    def from_linear(cls, linear_layer, group_size=None, bits=None, mode="nvfp4"):
        """A QQLinear holding ``linear_layer``'s weight, in its training mode."""
        output_dims, input_dims = linear_layer.weight.shape
        if linear_layer.get("bias") is not None:
            raise NotImplementedError("QQLinear does not support a bias: convert a Linear made with bias=False.")
        layer = cls(input_dims, output_dims, group_size, bits, mode=mode)
        layer.weight = linear_layer.weight
        layer.train(linear_layer.training)
        return layer


class QuantizedEmbedding(Module):
    """An Embedding whose table is quantized row by row."""

    def __init__(self, num_embeddings, dims, group_size=None, bits=None, mode="affine"):
        super().__init__()
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        self.num_embeddings = num_embeddings
        self.dims = dims
        weight = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1 / dims))
        _quantize_into(self, weight, self.group_size, self.bits, mode)
        self.freeze()

    def __call__(self, x):
        biases = self.get("biases")
        return mx.dequantize(self["weight"][x], scales=self["scales"][x],
                             biases=None if biases is None else biases[x],
                             group_size=self.group_size, bits=self.bits, mode=self.mode)

    def as_linear(self, x):
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"], biases=self.get("biases"),
                                   transpose=True, group_size=self.group_size, bits=self.bits, mode=self.mode)

    @classmethod
    def from_embedding(cls, embedding_layer, group_size=None, bits=None, mode="affine"):
        num_embeddings, dims = embedding_layer.weight.shape
        qe = cls(num_embeddings, dims, group_size, bits, mode=mode)
        _quantize_into(qe, embedding_layer.weight, qe.group_size, qe.bits, mode)
        return qe


def quantize(model, group_size=None, bits=None, *, mode="affine", quantize_input=False, class_predicate=None):
    """Replaces, in place, every leaf module that ``class_predicate(path,
    module)`` selects (by default: every module with ``to_quantized``) by its
    quantized form. The predicate may return a dict of arguments for that
    module's ``to_quantized`` instead of True."""
    if quantize_input:
        raise NotImplementedError("[quantize] quantize_input is not supported by alloy.nn yet")
    class_predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def maybe_quantize(path, m):
        choice = class_predicate(path, m)
        if not choice:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"Unable to quantize model of type {type(m)}")
        if isinstance(choice, bool):
            return m.to_quantized(group_size=group_size, bits=bits, mode=mode)
        if isinstance(choice, dict):
            return m.to_quantized(**choice)
        raise ValueError("``class_predicate`` must return a bool or a dict of parameters to pass to ``to_quantized``")

    leaves = tree_map_with_path(maybe_quantize, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)


"""Tensor-parallel linear layers and sharding helpers over an
``mx.distributed`` group, as ``mlx.nn.layers.distributed``.

Alloy's distributed group is the single process (rank 0 of 1), so each
shard is the whole weight and every collective returns its input; the layers
still split weights by rank and call the collectives where a multi-process
group would need them, so the code paths are the ones MLX runs."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module
from alloy.nn.layers.linear import Linear
from alloy.nn.layers.quantized import QuantizedLinear


def _group(group):
    return group if group is not None else mx.distributed.init()


def sum_gradients(group):
    """A function that is the identity forward and sums its cotangent over
    `group` backward (the identity for a group of one)."""
    group = _group(group)
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def f(x):
        return x

    @f.vjp
    def f(x, cotangent, output):  # noqa: F811
        return mx.distributed.all_sum(cotangent, group=group)

    return f


def _split(weight, axis, group, segments=1):
    """This rank's part of `weight` along `axis`, taken from each of
    `segments` equal pieces (fused QKV weights keep one part per piece)."""
    n, r = group.size(), group.rank()
    if n == 1:
        return weight
    pieces = mx.split(weight, segments, axis=axis) if segments > 1 else [weight]
    return mx.concatenate([mx.split(p, n, axis=axis)[r] for p in pieces], axis=axis)


class AllToShardedLinear(Module):
    """A Linear whose outputs are split across the group: every rank reads
    the whole input and produces its part of the output features."""

    def __init__(self, input_dims, output_dims, bias=True, group=None):
        super().__init__()
        self.group = _group(group)
        n = self.group.size()
        if output_dims % n != 0:
            raise ValueError(f"Cannot shard the output of size {output_dims} across {n} devices.")
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims // n, input_dims))
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims // n,))

    def __call__(self, x):
        x = sum_gradients(self.group)(x)
        y = x @ self["weight"].T
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer, *, segments=1, group=None):
        group = _group(group)
        out_dims, in_dims = linear_layer.weight.shape
        layer = cls(in_dims, out_dims, "bias" in linear_layer, group)
        layer.weight = _split(linear_layer.weight, 0, group, segments)
        if "bias" in linear_layer:
            layer.bias = _split(linear_layer.bias, 0, group, segments)
        return layer


class ShardedToAllLinear(Module):
    """A Linear whose inputs are split across the group: each rank reads its
    part of the input features and the partial products are summed."""

    def __init__(self, input_dims, output_dims, bias=True, group=None):
        super().__init__()
        self.group = _group(group)
        n = self.group.size()
        if input_dims % n != 0:
            raise ValueError(f"The input of size {input_dims} cannot be sharded across {n} devices.")
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims // n))
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def __call__(self, x):
        y = mx.distributed.all_sum(x @ self["weight"].T, group=self.group)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer, *, segments=1, group=None):
        group = _group(group)
        out_dims, in_dims = linear_layer.weight.shape
        layer = cls(in_dims, out_dims, "bias" in linear_layer, group)
        layer.weight = _split(linear_layer.weight, 1, group, segments)
        if "bias" in linear_layer:
            layer.bias = linear_layer.bias
        return layer


class QuantizedAllToShardedLinear(QuantizedLinear):
    """AllToShardedLinear with a quantized weight."""

    def __init__(self, input_dims, output_dims, bias=True, group_size=64, bits=4, mode="affine", group=None):
        self.__dict__["_group"] = _group(group)
        n = self._group.size()
        if output_dims % n != 0:
            raise ValueError(f"Cannot shard the output of size {output_dims} across {n} devices.")
        super().__init__(input_dims, output_dims // n, bias, group_size, bits, mode)

    def __call__(self, x):
        return super().__call__(sum_gradients(self._group)(x))


class QuantizedShardedToAllLinear(QuantizedLinear):
    """ShardedToAllLinear with a quantized weight."""

    def __init__(self, input_dims, output_dims, bias=True, group_size=64, bits=4, mode="affine", group=None):
        self.__dict__["_group"] = _group(group)
        n = self._group.size()
        if input_dims % n != 0:
            raise ValueError(f"The input of size {input_dims} cannot be sharded across {n} devices.")
        super().__init__(input_dims // n, output_dims, bias, group_size, bits, mode)

    def __call__(self, x):
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"], biases=self.get("biases"),
                                transpose=True, group_size=self.group_size, bits=self.bits, mode=self.mode)
        y = mx.distributed.all_sum(y, group=self._group)
        return y + self["bias"] if "bias" in self else y


def shard_linear(module, sharding, *, segments=1, group=None):
    """A new sharded layer holding this rank's part of a Linear (or
    QuantizedLinear kept as it is for a group of one)."""
    kinds = {"all-to-sharded": AllToShardedLinear, "sharded-to-all": ShardedToAllLinear}
    if sharding not in kinds:
        raise ValueError(f"Sharding must be one of {sorted(kinds)}, got {sharding!r}.")
    if isinstance(module, QuantizedLinear) and _group(group).size() == 1:
        return module
    if not isinstance(module, Linear):
        raise ValueError(f"[shard_linear] expects a Linear layer, got {type(module).__name__}.")
    return kinds[sharding].from_linear(module, segments=segments, group=group)


def shard_inplace(module, sharding, *, segments=1, group=None):
    """Replaces the module's parameters by this rank's parts. `sharding` is
    "all-to-sharded" (split the output axis), "sharded-to-all" (split the
    input axis), or a function (path, weight) -> axis or (axis, segments)."""
    group = _group(group)
    if isinstance(sharding, str):
        if sharding not in ("all-to-sharded", "sharded-to-all"):
            raise ValueError(f"Sharding must be 'all-to-sharded', 'sharded-to-all' or a callable, got {sharding!r}.")
        axis_of = (lambda path, w: 0) if sharding == "all-to-sharded" else \
            (lambda path, w: -1 if w.ndim > 1 else None)
    else:
        axis_of = sharding
    from alloy.utils import tree_map_with_path

    def shard(path, w):
        choice = axis_of(path, w)
        if choice is None:
            return w
        axis, segs = choice if isinstance(choice, tuple) else (choice, segments)
        return _split(w, axis, group, segs)

    module.update(tree_map_with_path(shard, module.parameters()))


def average_gradients(gradients, group=None, all_reduce_size=32 * 1024**2, communication_stream=None):
    """Averages a tree of gradients over the group (a group of one returns
    the tree as it is)."""
    group = _group(group)
    n = group.size()
    if n == 1:
        return gradients
    from alloy.utils import tree_map
    return tree_map(lambda g: mx.distributed.all_sum(g, group=group) / n, gradients)


class FullyShardedModule(Module):
    """Wraps a module whose parameters are sharded over the group and
    gathered for the forward pass (a group of one holds them whole);
    ``compute_dtype`` casts the gathered parameters."""

    def __init__(self, module, group=None, compute_dtype=None):
        super().__init__()
        self.module = module
        self.__dict__["_group"] = _group(group)
        self.__dict__["_compute_dtype"] = compute_dtype

    def __call__(self, *args, **kwargs):
        if self._compute_dtype is None:
            return self.module(*args, **kwargs)
        from alloy.utils import tree_map
        saved = self.module.parameters()
        self.module.update(tree_map(lambda p: p.astype(self._compute_dtype), saved))
        try:
            return self.module(*args, **kwargs)
        finally:
            self.module.update(saved)


def fully_shard(module, *, group=None, compute_dtype=None):
    """``module`` wrapped in a FullyShardedModule; a group of one leaves it
    unchanged (as MLX does, whatever the compute dtype)."""
    if _group(group).size() == 1:
        return module
    return FullyShardedModule(module, group=group, compute_dtype=compute_dtype)

"""Function transforms written over Python callables: mx.compile (with
enable_compile / disable_compile), mx.checkpoint and mx.vmap.

Limits, stated where users read them (README "Known limits"):
- compile does not trace or fuse: the compiled function runs `fun` itself on
  each call, so values, gradients and state updates are MLX's, and Python
  side effects inside `fun` happen on every call rather than once per input
  signature.
- vmap calls `fun` once per batch element and stacks the results (there are
  no per-primitive batching rules): MLX's values and errors, not its speed.
"""
import functools
import os


def _is_tree_leaf(x):
    return not isinstance(x, (list, tuple, dict))


def _leaves(tree):
    if isinstance(tree, (list, tuple)):
        for x in tree:
            yield from _leaves(x)
    elif isinstance(tree, dict):
        for x in tree.values():
            yield from _leaves(x)
    else:
        yield tree


def _map(fn, tree):
    if isinstance(tree, list):
        return [_map(fn, x) for x in tree]
    if isinstance(tree, tuple):
        return tuple(_map(fn, x) for x in tree)
    if isinstance(tree, dict):
        return {k: _map(fn, v) for k, v in tree.items()}
    return fn(tree)


def install(mx):
    state = {"enabled": os.environ.get("MLX_DISABLE_COMPILE", "") in ("", "0")}

    def compile(fun, inputs=None, outputs=None, shapeless=False):
        """A function giving the same outputs as `fun` (see the module's
        limits: it runs `fun` on each call; `inputs`/`outputs` state is read
        and written by `fun` itself, as it would be in MLX)."""
        if not callable(fun):
            raise TypeError(f"[compile] expects a callable, not {type(fun).__name__}.")

        @functools.wraps(fun)
        def compiled(*args, **kwargs):
            return fun(*args, **kwargs)

        return compiled

    def disable_compile():
        """Globally disables compilation (MLX_DISABLE_COMPILE does too)."""
        state["enabled"] = False

    def enable_compile():
        """Globally enables compilation, overriding MLX_DISABLE_COMPILE."""
        state["enabled"] = True

    def checkpoint(fun):
        """`fun`, recomputed during differentiation instead of keeping its
        intermediate values: a custom function without rules differentiates
        by running its body again under the trace."""
        wrapped = mx.custom_function(fun)

        @functools.wraps(fun)
        def checkpointed(*args, **kwargs):
            return wrapped(*args, **kwargs)

        return checkpointed

    def vmap(fun, in_axes=0, out_axes=0):
        """Maps `fun` over an axis of its inputs (see the module's limits)."""
        if not callable(fun):
            raise TypeError(f"[vmap] expects a callable, not {type(fun).__name__}.")

        def per_argument(axes, count, what):
            if isinstance(axes, (int, type(None))):
                return [axes] * count
            if isinstance(axes, (list, tuple)) and len(axes) == count:
                return list(axes)
            raise ValueError(f"[vmap] {what} must be an int, None or one entry per "
                             f"{'argument' if what == 'in_axes' else 'output'} ({count}), got {axes!r}.")

        def mapped_size(args, axes):
            size = None
            for arg, axis in zip(args, axes):
                if axis is None:
                    continue
                for leaf in _leaves(arg):
                    if not isinstance(leaf, mx.array):
                        raise ValueError(f"[vmap] in_axes maps a {type(leaf).__name__}; only arrays can be mapped.")
                    ax = axis + leaf.ndim if axis < 0 else axis
                    if leaf.ndim == 0 or not 0 <= ax < leaf.ndim:
                        raise IndexError(f"[vmap] invalid vectorization axis {axis} for an array of shape "
                                         f"{tuple(leaf.shape)}.")
                    if size is not None and leaf.shape[ax] != size:
                        raise ValueError(f"[vmap] inconsistent axis sizes: {size} and {leaf.shape[ax]}.")
                    size = leaf.shape[ax]
            if size is None:
                raise ValueError("[vmap] at least one input must be mapped (in_axes are all None).")
            return size

        @functools.wraps(fun)
        def vmapped(*args):
            axes = per_argument(in_axes, len(args), "in_axes")
            n = mapped_size(args, axes)
            results = []
            for i in range(n):
                call_args = [
                    arg if axis is None else _map(lambda leaf, ax=axis: mx.take(leaf, i, axis=ax), arg)
                    for arg, axis in zip(args, axes)
                ]
                results.append(fun(*call_args))
            first = results[0]
            single = _is_tree_leaf(first)
            outs = [first] if single else list(first)
            oaxes = per_argument(out_axes, len(outs), "out_axes")
            stacked = []
            for k, axis in enumerate(oaxes):
                items = [r if single else r[k] for r in results]
                if axis is None:
                    stacked.append(items[0])
                else:
                    stacked.append(mx.stack([mx.array(x) if not isinstance(x, mx.array) else x for x in items],
                                            axis=axis))
            if single:
                return stacked[0]
            return type(first)(stacked) if isinstance(first, tuple) else stacked

        return vmapped

    mx.compile = compile
    mx.disable_compile = disable_compile
    mx.enable_compile = enable_compile
    mx.checkpoint = checkpoint
    mx.vmap = vmap

"""Function transforms written over Python callables: mx.compile (with
enable_compile / disable_compile), mx.checkpoint and mx.vmap.

compile traces `fun` once per input signature (the tree of arguments, the
Python constants in it, the arrays' dtypes and shapes, or ranks when
shapeless) and later calls rebuild the traced graph of primitives (C++
alloy::compile), so Python side effects in `fun` happen at tracing only, as in
MLX. Arrays `fun` closes over are captured at the trace; `inputs=`/`outputs=`
name state trees (lists, dicts, Modules) read and written by `fun`: their
arrays become inputs and outputs of the graph, and each call writes the new
values back into them. The graph is not fused into fewer kernels.

Limits, stated where users read them (README "Known limits"):
- an array evaluated inside `fun` (`.item()`, `if x > 0`) is traced through,
  but Python control flow on its value is fixed at the trace (MLX raises
  instead);
- vmap calls `fun` once per batch element and stacks the results (there are
  no per-primitive batching rules): MLX's values and errors, not its speed.
"""
import functools
import os



def _wraps(fun):
    """functools.wraps, minus the attributes `fun` holds as None: the
    functions grad and value_and_grad return (nanobind functions) have a
    None __qualname__, which functools would refuse to copy."""
    names = tuple(a for a in functools.WRAPPER_ASSIGNMENTS if getattr(fun, a, None) is not None)
    return functools.wraps(fun, assigned=names)

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


class _RandomState(list):
    """mx.random.state: a one-item list whose item is the global key
    sequence's state, read and written through (so compile's inputs= and
    outputs= can carry it, as in MLX)."""

    def __init__(self, random):
        super().__init__()
        self._random = random

    def __len__(self):
        return 1

    def __iter__(self):
        yield self[0]

    def __getitem__(self, i):
        if i not in (0, -1):
            raise IndexError("random.state has one item")
        return self._random._global_key()

    def __setitem__(self, i, key):
        if i not in (0, -1):
            raise IndexError("random.state has one item")
        self._random._set_global_key(key)

    def __repr__(self):
        return f"[{self[0]!r}]"


def install(mx):
    state = {"enabled": os.environ.get("MLX_DISABLE_COMPILE", "") in ("", "0")}
    mx.random.state = _RandomState(mx.random)

    def compile(fun, inputs=None, outputs=None, shapeless=False):
        """`fun` traced once per input signature and replayed as a graph on
        later calls (see the module docstring)."""
        if not callable(fun):
            raise TypeError(f"[compile] expects a callable, not {type(fun).__name__}.")
        traced = {}  # signature key -> its flat compiled function and what its last trace found

        def key_of(tree, arrays):
            """The hashable structure of `tree` with its arrays taken out into `arrays`."""
            if isinstance(tree, mx.array):
                arrays.append(tree)
                return ("array",)
            if isinstance(tree, (list, tuple)):
                return (type(tree).__name__, tuple(key_of(x, arrays) for x in tree))
            if isinstance(tree, dict):
                return ("dict", tuple((k, key_of(v, arrays)) for k, v in tree.items()))
            if isinstance(tree, (bool, int, float, str, type(None))):
                return ("const", type(tree).__name__, tree)
            raise ValueError(f"[compile] Function arguments must be trees of arrays or constants (floats, ints, "
                             f"or strings), but received type {type(tree).__module__}.{type(tree).__qualname__}.")

        def rebuild(key, arrays):
            """The tree `key` describes, its arrays taken in order from the iterator `arrays`."""
            kind = key[0]
            if kind == "array":
                return next(arrays)
            if kind in ("list", "tuple"):
                items = [rebuild(k, arrays) for k in key[1]]
                return items if kind == "list" else tuple(items)
            if kind == "dict":
                return {k: rebuild(v, arrays) for k, v in key[1]}
            return key[2]

        def state_slots(tree):
            """(container, key) of each array in a state tree, in order."""
            slots = []

            def walk(node):
                items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(
                    node, (list, tuple)) else ()
                for k, v in items:
                    if isinstance(v, mx.array):
                        if isinstance(node, tuple):
                            raise ValueError("[compile] State trees must hold their arrays in lists or dicts "
                                             "(a tuple cannot be updated).")
                        slots.append((node, k))
                    else:
                        walk(v)

            if tree is not None:
                walk(tree)
            return slots

        @_wraps(fun)
        def compiled(*args, **kwargs):
            if not state["enabled"]:
                return fun(*args, **kwargs)
            arrays = []
            sig = key_of((args, kwargs), arrays)
            n_args = len(arrays)
            in_slots = state_slots(inputs)
            arrays += [c[k] for c, k in in_slots]
            key = (sig, len(in_slots), shapeless)
            entry = traced.get(key)
            if entry is None:
                # One flat function per key; the C++ side calls it whenever it
                # traces (a new shape), and it reads this call's state slots.
                entry = traced[key] = {"sig": sig, "n_args": n_args}
                entry["run"] = mx._compile_flat(lambda xs, e=entry: trace(e, xs), shapeless)
            entry["in_slots"] = in_slots
            results = entry["run"](arrays)
            n_out = len(results) - len(entry["out_slots"])
            # The state's containers as they are now (a Module may have
            # replaced a nested dict since the trace), where they still line up.
            slots = state_slots(outputs)
            if len(slots) != len(entry["out_slots"]):
                slots = entry["out_slots"]
            for (c, k), v in zip(slots, results[n_out:]):
                c[k] = v
            return rebuild(entry["out"], iter(results[:n_out]))

        def trace(entry, xs):
            """`fun` on tracers xs (arguments, then input state), flattened:
            its outputs, then the output state's arrays."""
            in_slots, n_args = entry["in_slots"], entry["n_args"]
            originals = [c[k] for c, k in in_slots]
            for (c, k), x in zip(in_slots, xs[n_args:]):
                c[k] = x
            try:
                call_args, call_kwargs = rebuild(entry["sig"], iter(xs[:n_args]))
                out = fun(*call_args, **call_kwargs)
                out_arrays = []
                entry["out"] = key_of(out, out_arrays)
                entry["out_slots"] = state_slots(outputs)
                return out_arrays + [c[k] for c, k in entry["out_slots"]]
            finally:
                for (c, k), x in zip(in_slots, originals):
                    c[k] = x

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

        @_wraps(fun)
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

        @_wraps(fun)
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

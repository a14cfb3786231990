"""``Module``: the base of every layer, as ``mlx.nn.Module`` behaves.

A module is a dict. Arrays, lists, tuples, dicts and sub-modules assigned as
attributes are stored as dict items (so they form the parameter tree that
``mx.grad`` and optimizers walk); anything else is a plain Python attribute.
Keys that start with an underscore are never parameters.
"""
import alloy.core as mx
from alloy.utils import tree_flatten, tree_unflatten

# What __setattr__ stores in the dict rather than as a Python attribute.
_TREE_TYPES = (mx.array, dict, list, tuple)


def _walk(owner, key, value, keep, leaf_map, is_leaf):
    """One node of ``filter_and_map``: maps a leaf, or rebuilds a container
    keeping the entries ``keep(owner, dotted_key, value)`` accepts. Entries of
    lists and plain dicts that are dropped stay as ``{}`` so positions hold."""
    if is_leaf(owner, key, value):
        return leaf_map(value)
    if isinstance(value, Module):
        return {k: _walk(value, k, v, keep, leaf_map, is_leaf) for k, v in value.items() if keep(value, k, v)}
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            path = f"{key}.{k}"
            out[k] = _walk(owner, path, v, keep, leaf_map, is_leaf) if keep(owner, path, v) else {}
        return out
    if isinstance(value, list):
        out = []
        for i, v in enumerate(value):
            path = f"{key}.{i}"
            out.append(_walk(owner, path, v, keep, leaf_map, is_leaf) if keep(owner, path, v) else {})
        return out
    raise RuntimeError(f"Unexpected leaf {type(value).__name__} found while traversing the module")


class Module(dict):
    """Base class for layers and models: parameters are its dict items."""

    __call__: callable

    def __init__(self):
        # object.__setattr__ keeps these two out of the parameter dict.
        object.__setattr__(self, "_no_grad", set())
        object.__setattr__(self, "_training", True)

    # ---- attributes ---------------------------------------------------------

    @property
    def training(self):
        """Whether the module is in training mode (``train()``/``eval()``)."""
        return self._training

    @property
    def state(self):
        """The module's own dict: every array, container and sub-module,
        underscored keys included."""
        return self

    def __getattr__(self, key):
        # Only reached when normal attribute lookup fails.
        if key in self:
            return self[key]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key, value):
        if isinstance(value, _TREE_TYPES):
            # A value moving into the dict must not stay shadowed by an
            # instance attribute of the same name.
            if key in self.__dict__:
                object.__delattr__(self, key)
            self[key] = value
        else:
            if key in self:
                del self[key]
            object.__setattr__(self, key, value)

    def __delattr__(self, key):
        if key in self:
            del self[key]
        else:
            object.__delattr__(self, key)

    def _extra_repr(self):
        return ""

    def __repr__(self):
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        text = f"{type(self).__name__}({self._extra_repr()}"
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            text += f"\n  ({name}): {body}"
        if children:
            text += "\n"
        return text + ")"

    # ---- filters ------------------------------------------------------------

    @staticmethod
    def is_module(value):
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module, key, value):
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module, key, value):
        # Tuples are stored in the dict (see __setattr__) but, as in MLX,
        # are not walked for parameters: they hold fixed configuration.
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module, key, value):
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(self, filter_fn, map_fn=None, is_leaf_fn=None):
        """The tree of this module's entries that ``filter_fn(module, key,
        value)`` keeps, leaves passed through ``map_fn``. ``is_leaf_fn``
        decides where to stop descending (default: at anything that is not a
        module, dict, list or tuple)."""
        map_fn = map_fn or (lambda x: x)
        is_leaf_fn = is_leaf_fn or (lambda m, k, v: not isinstance(v, (Module, dict, list)))
        return {k: _walk(self, k, v, filter_fn, map_fn, is_leaf_fn) for k, v in self.items() if filter_fn(self, k, v)}

    # ---- trees --------------------------------------------------------------

    def parameters(self):
        """Every array of the module and its sub-modules, as a nested dict."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self):
        """The parameters that are not frozen."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self):
        """The direct sub-modules (inside lists and dicts too)."""
        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=lambda m, k, v: isinstance(v, Module))

    def leaf_modules(self):
        """The sub-modules that have no sub-modules themselves."""

        def is_leaf_module(m, k, v):
            return isinstance(v, Module) and len(tree_flatten(v.children())) == 0

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    def update(self, parameters, strict=True):
        """Replaces arrays of the module with those in ``parameters`` (a tree
        shaped like ``parameters()``, possibly partial). With ``strict``, a
        name the module lacks or a non-array where an array was is an error."""

        def merge(dst, src):
            if isinstance(src, dict):
                for k, new in src.items():
                    if k in dst:
                        merge_one(dst, k, new)
                    elif strict:
                        raise ValueError(f'Module does not have parameter named "{k}".')
            elif isinstance(src, list):
                for i, new in enumerate(src):
                    merge_one(dst, i, new)
            elif strict:
                raise ValueError(f"Received invalid type: {type(src).__name__}.")

        def merge_one(dst, k, new):
            current = dst[k]
            if isinstance(current, mx.array):
                if strict and not isinstance(new, mx.array):
                    raise ValueError(f"Received invalid type: {type(new).__name__}.")
                dst[k] = new
            else:
                merge(current, new)

        merge(self, parameters)
        return self

    def update_modules(self, modules, strict=True):
        """Replaces sub-modules with those in ``modules`` (a tree shaped like
        ``children()`` or ``leaf_modules()``, possibly partial)."""

        def merge(dst, src):
            if isinstance(src, dict):
                for k, new in src.items():
                    if k in dst:
                        merge_one(dst, k, new)
                    elif strict:
                        raise ValueError(f'Module does not have sub-module named "{k}".')
            elif isinstance(src, list):
                for i, new in enumerate(src):
                    merge_one(dst, i, new)
            elif strict:
                raise ValueError(f"Received invalid type: {type(src).__name__}.")

        def merge_one(dst, k, new):
            current = dst[k]
            if isinstance(current, Module) and isinstance(new, Module):
                dst[k] = new
            elif isinstance(current, (dict, list)):
                merge(current, new)
            elif strict and new != {}:
                raise ValueError(f"Received invalid type: {type(new).__name__}.")

        merge(self, modules)
        return self

    def apply(self, map_fn, filter_fn=None):
        """Replaces each parameter ``p`` (those ``filter_fn`` keeps; by default
        all) with ``map_fn(p)``."""
        filter_fn = filter_fn or Module.valid_parameter_filter
        self.update(self.filter_and_map(filter_fn, map_fn))
        return self

    def apply_to_modules(self, apply_fn):
        """Calls ``apply_fn(dotted_name, module)`` on this module (name "")
        and every sub-module, depth first."""
        stack = [("", self)]
        while stack:
            name, module = stack.pop()
            apply_fn(name, module)
            prefix = f"{name}." if name else ""
            stack.extend(
                (prefix + k, m) for k, m in tree_flatten(module.children(), is_leaf=self.is_module)
            )
        return self

    def named_modules(self):
        """``(dotted_name, module)`` for this module (named "") and every
        sub-module, in ``apply_to_modules`` order."""
        found = []
        self.apply_to_modules(lambda name, m: found.append((name, m)))
        return found

    def modules(self):
        return [m for _, m in self.named_modules()]

    # ---- freezing and modes -------------------------------------------------

    def _validate_keys(self, keys, strict):
        keys = keys if isinstance(keys, list) else [keys]
        if strict:
            for k in keys:
                if k not in self:
                    raise KeyError(f"Module doesn't contain member {k}.")
        return keys

    def _own_parameter_names(self):
        # Dotted names of this module's own arrays, not those of sub-modules.
        own = self.filter_and_map(lambda m, k, v: not isinstance(v, Module) and m.valid_parameter_filter(m, k, v))
        return [k for k, _ in tree_flatten(own)]

    def freeze(self, *, recurse=True, keys=None, strict=False):
        """Excludes parameters from ``trainable_parameters()`` (and so from
        gradients in ``nn.value_and_grad``): all of them, or the named
        ``keys``, in this module and (``recurse``) its sub-modules."""

        def freeze_one(_, m):
            names = m._own_parameter_names() if keys is None else m._validate_keys(keys, strict)
            m._no_grad.update(names)

        if recurse:
            self.apply_to_modules(freeze_one)
        else:
            freeze_one("", self)
        return self

    def unfreeze(self, *, recurse=True, keys=None, strict=False):
        """Undoes ``freeze`` for all parameters or the named ``keys``."""

        def unfreeze_one(_, m):
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(m._validate_keys(keys, strict))

        if recurse:
            self.apply_to_modules(unfreeze_one)
        else:
            unfreeze_one("", self)
        return self

    def _set_training_mode(self, mode):
        object.__setattr__(self, "_training", mode)

    def train(self, mode=True):
        """Sets training mode on this module and every sub-module."""
        self.apply_to_modules(lambda _, m: m._set_training_mode(mode))
        return self

    def eval(self):
        return self.train(False)

    def set_dtype(self, dtype, predicate=None):
        """Casts the parameters whose dtype ``predicate`` accepts (by default
        the floating ones) to ``dtype``."""
        if predicate is None:
            def predicate(t):
                return mx.issubdtype(t, mx.floating)
        self.apply(lambda p: p.astype(dtype) if predicate(p.dtype) else p)

    # ---- files --------------------------------------------------------------

    def load_weights(self, file_or_weights, strict=True):
        """Loads parameters from a ``.npz``/``.safetensors`` file or a list of
        ``(dotted_name, array)``. With ``strict``, the names and shapes must
        match the module's parameters exactly."""
        weights = file_or_weights
        if isinstance(weights, str):
            weights = list(mx.load(weights).items())
        else:
            weights = list(weights)

        if strict:
            new = dict(weights)
            current = dict(tree_flatten(self.parameters()))
            extras = new.keys() - current.keys()
            if extras:
                names = ",\n".join(sorted(extras))
                raise ValueError(f"Received {len(extras)} parameters not in model: \n{names}.")
            missing = current.keys() - new.keys()
            if missing:
                names = ",\n".join(sorted(missing))
                raise ValueError(f"Missing {len(missing)} parameters: \n{names}.")
            for name, value in current.items():
                candidate = new[name]
                if not isinstance(candidate, mx.array):
                    raise ValueError(
                        f"Expected mx.array but received {type(candidate)} for parameter {name}"
                    )
                if tuple(candidate.shape) != tuple(value.shape):
                    raise ValueError(
                        f"Expected shape {tuple(value.shape)} but received shape "
                        f"{tuple(candidate.shape)} for parameter {name}"
                    )

        if weights:
            self.update(tree_unflatten(weights), strict=False)
        return self

    def save_weights(self, file):
        """Saves the parameters to ``file`` (``.npz`` or ``.safetensors``)
        under their dotted names."""
        params = dict(tree_flatten(self.parameters()))
        if file.endswith(".npz"):
            mx.savez(file, **params)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, params)
        else:
            raise ValueError("Unsupported file extension. Use '.npz' or '.safetensors'.")

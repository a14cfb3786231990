"""Real MLX as the oracle: the same call through mlx.core and alloy.core.

Differential tests build their inputs in numpy (fresh random values from the
`rng` fixture), hand the same values to both frameworks and compare what comes
back: values (against MLX run on the CPU, with a tolerance per dtype), shapes,
dtypes, Python types of scalars, and the exception type on bad input.

    from mlx_oracle import same, same_error, Dt

    same("tril", x, 1)                       # mx.tril(x, 1) in both
    same("sum", x, axis=Dt("int32"))         # Dt names a dtype in both
    same(lambda m, a: m.roll(a, 2), x)       # any expression; m is the module
    same_error("tril", np.zeros(3))          # both raise, same exception type

Arguments that are numpy arrays become arrays of each framework; `Dt(name)`
becomes that framework's dtype; lists/tuples/dicts are walked; anything else
is passed as it is. MLX runs on its CPU stream: the oracle needs no GPU.
"""
import numpy as np

import alloy.core as ax
import mlx.core as mlx_core

import ml_dtypes

# MLX computes on the CPU here; Alloy on the suite's device.
MLX_DEVICE = mlx_core.cpu


class Dt:
    """A dtype by name, turned into each framework's own dtype object."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Dt({self.name!r})"


def dtype_name(dtype):
    return str(dtype).split(".")[-1]


def _to_framework(value, module):
    if isinstance(value, Dt):
        return getattr(module, value.name)
    if isinstance(value, np.ndarray):
        if value.dtype == ml_dtypes.bfloat16:
            return module.array(value.astype(np.float32)).astype(module.bfloat16)
        return module.array(value)
    if isinstance(value, list):
        return [_to_framework(v, module) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_framework(v, module) for v in value)
    if isinstance(value, dict):
        return {k: _to_framework(v, module) for k, v in value.items()}
    return value


def to_numpy(a):
    """An array of either framework as numpy (bfloat16 widened to float32)."""
    if dtype_name(a.dtype) == "bfloat16":
        a = a.astype(_module_of(a).float32)
    return np.array(a)


def _module_of(a):
    return mlx_core if isinstance(a, mlx_core.array) else ax


# (rtol, atol) between two float32-class computations of the same formula.
TOLERANCE = {
    "float16": (4e-3, 4e-3),
    "bfloat16": (3e-2, 3e-2),
    "float32": (2e-5, 2e-6),
    "float64": (1e-12, 1e-12),
    "complex64": (2e-5, 2e-6),
}


def _call(fn, module, args, kwargs):
    if isinstance(fn, str):
        target = module
        for part in fn.split("."):
            target = getattr(target, part)
        return target(*_to_framework(args, module), **_to_framework(kwargs, module))
    return fn(module, *_to_framework(args, module), **_to_framework(kwargs, module))


def _run_mlx(fn, args, kwargs):
    with mlx_core.stream(MLX_DEVICE):
        out = _call(fn, mlx_core, args, kwargs)
        _eval_tree(out, mlx_core)
    return out


def _eval_tree(out, module):
    arrays = []

    def walk(v):
        if isinstance(v, module.array):
            arrays.append(v)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    walk(out)
    if arrays:
        module.eval(arrays)


def assert_same_value(got, want, rtol=None, atol=None, path="result"):
    """Compares an Alloy result tree with an MLX result tree."""
    if isinstance(want, mlx_core.array):
        assert isinstance(got, ax.array), f"{path}: expected an array, got {type(got).__name__}"
        assert tuple(got.shape) == tuple(want.shape), f"{path}: shape {got.shape} != MLX {want.shape}"
        assert dtype_name(got.dtype) == dtype_name(want.dtype), (
            f"{path}: dtype {dtype_name(got.dtype)} != MLX {dtype_name(want.dtype)}")
        name = dtype_name(want.dtype)
        g, w = to_numpy(got), to_numpy(want)
        if name in TOLERANCE:
            rt, at = TOLERANCE[name]
            scale = max(1.0, float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0)))
            np.testing.assert_allclose(g, w, rtol=rt if rtol is None else rtol,
                                       atol=(at if atol is None else atol) * scale, equal_nan=True, err_msg=path)
        else:
            np.testing.assert_array_equal(g, w, err_msg=path)
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)), f"{path}: expected a sequence, got {type(got).__name__}"
        assert len(got) == len(want), f"{path}: {len(got)} items != MLX {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_value(g, w, rtol, atol, f"{path}[{i}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{path}: keys differ"
        for k in want:
            assert_same_value(got[k], want[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(want, float):
        assert isinstance(got, float), f"{path}: {got!r} is not a float"
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=path)
    elif type(want).__module__.startswith("mlx"):
        # dtypes, devices, ...: compare by name
        assert str(got).split(".")[-1] == str(want).split(".")[-1], f"{path}: {got} != MLX {want}"
    else:
        assert type(got) is type(want) and got == want, f"{path}: {got!r} != MLX {want!r}"


def same(fn, *args, rtol=None, atol=None, **kwargs):
    """Runs `fn` through both frameworks and asserts the results agree.

    `fn` is a name under the module ("tril", "linalg.norm") or a callable
    taking the module first. Returns (alloy_result, mlx_result)."""
    want = _run_mlx(fn, args, kwargs)
    got = _call(fn, ax, args, kwargs)
    assert_same_value(got, want, rtol, atol)
    return got, want


def same_error(fn, *args, **kwargs):
    """Both frameworks raise, and Alloy's exception is MLX's type."""
    try:
        _run_mlx(fn, args, kwargs)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        want = type(e)
    else:
        raise AssertionError(f"MLX accepted {fn}{args}{kwargs}; the case is not an error case")
    try:
        got = _call(fn, ax, args, kwargs)
        _eval_tree(got, ax)
    except Exception as e:  # noqa: BLE001
        assert type(e).__name__ == want.__name__ or issubclass(type(e), want), (
            f"{fn}: Alloy raised {type(e).__name__}({e}), MLX raises {want.__name__}")
        return e
    raise AssertionError(f"{fn}: Alloy accepted what MLX rejects with {want.__name__}")


def random_array(rng, shape, dtype="float32", low=-2.0, high=2.0):
    """Fresh random values of a dtype, as numpy (bfloat16 via ml_dtypes)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        lo, hi = max(int(low * 10), info.min), min(int(high * 10), info.max)
        return rng.integers(lo, hi + 1, size=shape).astype(dtype)
    if dtype == "complex64":
        return (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(np.complex64)
    values = rng.uniform(low, high, shape)
    if dtype == "bfloat16":
        return values.astype(ml_dtypes.bfloat16)
    return values.astype(dtype)

"""Differential fuzz of argument kinds against real MLX: calls each function of
mlx.core (or a submodule, or mx.array's methods) with random positional and
keyword arguments drawn from a small pool (arrays of several dtypes and
shapes, ints, floats, None, tuples, lists, strings, bools, dtypes) through
mlx.core and alloy.core alike, and prints the calls MLX answers where Alloy
raises or answers with another shape or dtype, and with --values other
values (beyond float32 rounding). What Alloy accepts and MLX refuses is not printed: being
more lenient breaks no MLX program.

    python scripts/probes/mlx_parity_fuzz.py [--seed N] [--target core|methods|linalg|fft|random] [--tries N]
                                             [--values]

Found this way (sixty-second session): dtype=None refused, an int taken as
a Dtype, linspace's endpoint, count_nonzero's positional axis, stack's
axis=None, arange(stop, step, dtype), a[True] = v. Calls that crash MLX
itself (x.reshape() on 0.32.4) are skipped.
"""
import argparse
import sys
import warnings

import numpy as np

import alloy.core as ax
import mlx.core as mx

warnings.filterwarnings("ignore")

# Functions whose effects are global, or that take functions or files.
SKIP = {"save", "savez", "savez_compressed", "save_gguf", "save_safetensors", "load", "export_function",
        "import_function", "exporter", "set_default_device", "set_default_stream", "set_memory_limit",
        "set_cache_limit", "set_wired_limit", "clear_cache", "reset_peak_memory", "synchronize", "new_stream",
        "stream", "default_stream", "export_to_dot", "checkpoint", "compile", "custom_function", "vmap", "grad",
        "value_and_grad", "vjp", "jvp", "disable_compile", "enable_compile", "async_eval", "eval",
        "get_active_memory", "get_peak_memory", "get_cache_memory", "set_compile", "distributed", "metal", "cuda",
        "random", "fft", "linalg", "fast", "default_device", "device_count", "device_info", "is_available",
        "new_thread_unsafe_stream", "thread_local_stream", "seed", "key", "split"}

POOL = [("array", np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5),
        ("array", np.arange(6, dtype=np.int32).reshape(2, 3)),
        ("array", np.arange(9, dtype=np.float32).reshape(3, 3) * 0.37 + np.eye(3, dtype=np.float32) * 3),
        ("array", np.float32(2.0)), ("array", np.array([True, False])),
        ("array", np.zeros((0, 3), np.float32)), ("array", np.array([[0.5, -1.5, 2.25]], np.float16)),
        ("array", np.array([3, 250, 7], np.uint8)), ("array", np.array([1 + 2j, -0.5j], np.complex64)),
        ("array", np.array([np.nan, np.inf, -np.inf, -0.0, 1e-30], np.float32)),
        ("array", (np.arange(6, dtype=np.float32) * 0.7 - 1.9).reshape(2, 1, 3)),
        ("value", 1), ("value", -1), ("value", 0), ("value", 3), ("value", 2.5), ("value", None), ("value", True),
        ("value", (0,)), ("value", (1, 0)), ("value", (-3,)), ("value", (3, 2)), ("value", [2, 3]),
        ("value", [0, 1]), ("value", "a"), ("dtype", "float16"), ("dtype", "int32")]
ARRAYS = sum(kind == "array" for kind, _ in POOL)  # the pool's arrays come first: receivers of methods
# Decompositions whose vectors are defined up to sign (or phase): their
# values are not compared.
SIGN_FREE = {"svd", "eig", "eigh"}
KEYWORDS = ["axis", "keepdims", "dtype", "k", "n", "ord", "axes", "shape", "num", "decimals", "stop", "endpoint"]


def make(module, item):
    kind, value = item
    if kind == "array":
        return module.array(value)
    if kind == "dtype":
        return getattr(module, value)
    return value


def describe(item):
    kind, value = item
    return f"array{tuple(np.shape(value))}:{np.asarray(value).dtype}" if kind == "array" else repr(value)


class Values:
    """An array's values, equal to another's within float32 rounding (NaNs
    in the same places); kept out of the printed summary."""

    def __init__(self, v, core):
        self.v = np.array(v.astype(core.float32) if v.dtype == core.bfloat16 else v)

    def __eq__(self, other):
        a, b = self.v, other.v
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
        return bool(np.array_equal(a, b))

    def __repr__(self):
        return np.array2string(self.v, threshold=8, precision=4).replace("\n", "")


def outcome(call, values):
    def summary(v):
        if isinstance(v, (mx.array, ax.array)):
            core = mx if isinstance(v, mx.array) else ax
            core.eval(v)
            meta = ("array", tuple(v.shape), str(v.dtype).split(".")[-1])
            return meta + (Values(v, core),) if values else meta
        if isinstance(v, (list, tuple)):
            return tuple(summary(e) for e in v)
        return type(v).__name__
    try:
        return ("ok", summary(call()))
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return ("error", type(e).__name__)


def targets(name):
    if name == "methods":
        return [n for n in dir(mx.array) if not n.startswith("_") and hasattr(ax.array, n)
                and callable(getattr(mx.array, n))]
    m = mx if name == "core" else getattr(mx, name)
    a = ax if name == "core" else getattr(ax, name)
    return [n for n in dir(m) if not n.startswith("_") and n not in SKIP and hasattr(a, n)
            and callable(getattr(m, n)) and not isinstance(getattr(m, n), type)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--target", default="core", choices=["core", "methods", "linalg", "fft", "random"])
    p.add_argument("--tries", type=int, default=10, help="calls per function and argument count")
    p.add_argument("--values", action="store_true", help="compare the arrays' values too (not for random)")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    print(f"seed {seed}", file=sys.stderr)
    rng = np.random.default_rng(seed)
    found = {}
    for name in targets(args.target):
        for count in range(4):
            for _ in range(args.tries):
                items = [POOL[i] for i in rng.integers(0, len(POOL), count)]
                keywords = {}
                if rng.random() < 0.4:
                    keywords[KEYWORDS[rng.integers(0, len(KEYWORDS))]] = POOL[rng.integers(0, len(POOL))]
                receiver = POOL[rng.integers(0, ARRAYS)]
                if args.target == "methods" and name == "reshape" and not items:
                    continue  # MLX 0.32.4 crashes on x.reshape()
                results = []
                for module in (mx, ax):
                    if args.target == "methods":
                        fn = getattr(make(module, receiver), name)
                    else:
                        fn = getattr(module if args.target == "core" else getattr(module, args.target), name)
                    positional = [make(module, i) for i in items]
                    named = {k: make(module, v) for k, v in keywords.items()}
                    results.append(outcome(lambda: fn(*positional, **named), args.values and name not in SIGN_FREE))
                want, got = results
                if want[0] == "ok" and want != got:
                    call = (describe(receiver) + "." if args.target == "methods" else "") + name + "(" + ", ".join(
                        [describe(i) for i in items] + [f"{k}={describe(v)}" for k, v in keywords.items()]) + ")"
                    found.setdefault((name, str(want), str(got)), call)
    for (name, want, got), call in sorted(found.items()):
        print(f"{call}\n    MLX   {want}\n    Alloy {got}")
    print(f"{len(found)} differences", file=sys.stderr)


if __name__ == "__main__":
    main()

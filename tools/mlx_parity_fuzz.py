"""Differential fuzzing of alloy.core against real MLX (CPU): prints every
call where the two differ in value, dtype, shape or exception type.

    python tools/mlx_parity_fuzz.py [--seed N] [--only elementwise,reductions,indexing,shapes]

A tool for finding parity gaps, not a test: the README lists the differences
it leaves on purpose (integer matmul, softmax of integers, ...), and MLX
0.32.4's CPU backend crashes or hangs on some inputs (integer division by
zero, reductions and scatters of empty arrays, linalg of 0x0), which
the families below steer around. `--verbose` prints each call before making
it, so the last line of a hung run names the call. Each family draws fresh
random inputs from the seed it prints; comparisons go through
tests/python/mlx_oracle.py. A whole run takes about 10 minutes here.
"""
import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
import mlx.core as mlx_core  # noqa: E402
from mlx_oracle import random_array, same, same_error  # noqa: E402

DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "complex64"]
UNARY = ["abs", "negative", "sign", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "arcsin",
         "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sqrt", "rsqrt", "square",
         "floor", "ceil", "round", "sigmoid", "erf", "erfinv", "logical_not", "isnan", "isinf", "isfinite",
         "bitwise_invert", "real", "imag", "conjugate", "reciprocal", "degrees", "radians", "trunc", "isposinf",
         "isneginf", "nan_to_num", "stop_gradient", "positive"]
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum", "minimum", "equal",
          "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "arctan2", "logaddexp", "divmod",
          "outer", "kron", "isclose", "array_equal"]
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "logsumexp", "argmax", "argmin",
              "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort", "softmax"]


class Differences:
    def __init__(self, verbose=False):
        self.rows = []
        self.verbose = verbose

    def check(self, label, fn, *args):
        """fn(module, *arrays) through MLX (CPU) and Alloy; records a difference."""
        if self.verbose:
            print(label, flush=True)  # the last line names a call that hangs
        try:
            with mlx_core.stream(mlx_core.cpu):
                out = fn(mlx_core, *[mlx_core.array(a) if isinstance(a, np.ndarray) else a for a in args])
                if isinstance(out, (list, tuple)):
                    mlx_core.eval(*out)
                elif isinstance(out, mlx_core.array):
                    mlx_core.eval(out)
            mlx_error = None
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            mlx_error = type(e)
        try:
            if mlx_error is None:
                same(fn, *args)
            else:
                same_error(fn, *args)
        except AssertionError as e:
            self.rows.append((label, " ".join(str(e).split())[:200]))
        except Exception as e:  # noqa: BLE001
            self.rows.append((label, f"Alloy raised {type(e).__name__}: {e} (MLX: {mlx_error})"[:200]))


def nonzero(rng, shape, dtype):
    a = random_array(rng, shape, dtype)
    if dtype == "bool":
        return np.ones(shape, bool)  # a divisor: MLX traps on integer division by zero
    if dtype.startswith(("int", "uint")):
        a[a == 0] = 1
    return a


def elementwise(d, rng):
    for dt in DTYPES:
        a = random_array(rng, (3, 4), dt)
        for name in UNARY:
            d.check(f"{name}({dt})", lambda m, x, name=name: getattr(m, name)(x), a)
    for d1 in DTYPES:
        for d2 in DTYPES:
            a = nonzero(rng, (3, 4), d1)
            for name in BINARY:
                b = nonzero(rng, (3, 4), d2) if name in ("floor_divide", "remainder", "divmod") \
                    else random_array(rng, (3, 4), d2)
                if name in ("left_shift", "right_shift", "power") and d2.startswith(("int", "uint")):
                    b = np.abs(b) % 5
                d.check(f"{name}({d1},{d2})", lambda m, x, y, name=name: getattr(m, name)(x, y), a, b)


def reductions(d, rng):
    axis_forms = [{}, {"axis": 0}, {"axis": -1}, {"axis": (0, -1)}, {"keepdims": True},
                  {"axis": 1, "keepdims": True}, {"axis": 5}]
    for dt in ["bool", "uint8", "int8", "int32", "int64", "uint64", "float16", "bfloat16", "float32", "complex64"]:
        for shape in [(3, 4, 5), (0, 3), (4,)]:
            a = random_array(rng, shape, dt)
            for name in REDUCTIONS:
                if shape == (0, 3) and name in ("prod", "all", "any"):
                    continue  # MLX answers from uninitialised memory: 0/False, or hangs
                for kw in axis_forms:
                    tuple_axis = isinstance(kw.get("axis"), tuple)
                    if name in ("argmax", "argmin") and tuple_axis:
                        continue
                    if name.startswith("cum") or name in ("logcumsumexp", "sort", "argsort", "softmax"):
                        if "keepdims" in kw or (tuple_axis and name != "softmax"):
                            continue
                    d.check(f"{name}({dt},{shape},{kw})", lambda m, x, name=name, kw=kw: getattr(m, name)(x, **kw), a)


def indexing(d, rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)

    def one_index():
        kind = rng.integers(0, 8)
        if kind == 0:
            return int(rng.integers(-4, 4))
        if kind == 1:
            return slice(int(rng.integers(-5, 5)), int(rng.integers(-5, 6)), int(rng.choice([1, 2, -1, -2, 3])))
        if kind == 2:
            return None
        if kind == 3:
            return Ellipsis
        if kind == 4:
            return rng.integers(-4, 4, size=int(rng.integers(1, 4))).astype(np.int32)
        if kind == 5:
            return rng.integers(0, 4, size=(2, 2)).astype(np.int32)
        if kind == 6:
            return slice(None)
        return [int(v) for v in rng.integers(-3, 3, size=2)]

    for _ in range(600):
        index = [one_index() for _ in range(int(rng.integers(1, 4)))]
        arrays = [i for i in index if isinstance(i, np.ndarray)]

        def build(m, arrs, index=index):
            it = iter(arrs)
            return tuple(next(it) if isinstance(i, np.ndarray) else i for i in index)

        d.check(f"x[{index}]", lambda m, a, *arrs, build=build: a[build(m, arrs)], x, *arrays)
        try:
            if x[tuple(index)].size == 0:
                continue  # MLX's scatter of nothing can trap (SIGFPE)
        except Exception:  # noqa: BLE001 - numpy refuses it: so may both frameworks; [] covers that
            continue

        def assign(m, a, *arrs, build=build):
            b = m.array(a)
            b[build(m, arrs)] = 7.5
            return b

        d.check(f"x[{index}] = 7.5", assign, x, *arrays)
        d.check(f"x.at[{index}].add", lambda m, a, *arrs, build=build: a.at[build(m, arrs)].add(1.5), x, *arrays)


def shapes(d, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ax = lambda: int(rng.integers(-4, 4))  # noqa: E731
    for _ in range(300):
        a1, a2, k = ax(), ax(), int(rng.integers(-3, 5))
        shape = tuple(int(v) for v in rng.integers(-1, 7, size=rng.integers(1, 4)))
        mode = str(rng.choice(["constant", "edge", "reflect", "symmetric", "wrap"]))
        cases = {
            f"reshape{shape}": lambda m, a: m.reshape(a, shape),
            f"squeeze({a1})": lambda m, a: m.squeeze(a[:, :1], a1),
            f"expand_dims({a1})": lambda m, a: m.expand_dims(a, a1),
            f"split({k}, axis={a1})": lambda m, a: m.split(a, k, axis=a1),
            f"concatenate(axis={a1})": lambda m, a: m.concatenate([a, a[:1]], axis=a1),
            f"stack(axis={a1})": lambda m, a: m.stack([a, a], axis=a1),
            f"pad({k}, {mode})": lambda m, a: m.pad(a, abs(k), mode=mode),
            f"roll({k}, axis={a1})": lambda m, a: m.roll(a, k, axis=a1),
            f"swapaxes({a1}, {a2})": lambda m, a: m.swapaxes(a, a1, a2),
            f"moveaxis({a1}, {a2})": lambda m, a: m.moveaxis(a, a1, a2),
            f"flatten({a1}, {a2})": lambda m, a: m.flatten(a, a1, a2),
            f"repeat({abs(k)}, axis={a1})": lambda m, a: m.repeat(a, abs(k), axis=a1),
            f"tril({k})": lambda m, a: m.tril(a, k),
            f"diagonal({k}, {a1}, {a2})": lambda m, a: m.diagonal(a, k, a1, a2),
            f"trace({k}, {a1}, {a2})": lambda m, a: m.trace(a, k, a1, a2),
            f"topk({abs(k)}, axis={a1})": lambda m, a: m.topk(a, abs(k), axis=a1),
            f"tensordot(axes={abs(k) % 4})": lambda m, a: m.tensordot(a, a, axes=abs(k) % 4),
        }
        label = list(cases)[int(rng.integers(0, len(cases)))]
        d.check(label, cases[label], x)


FAMILIES = {"elementwise": elementwise, "reductions": reductions, "indexing": indexing, "shapes": shapes}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", default=",".join(FAMILIES))
    parser.add_argument("--verbose", action="store_true", help="print each call before making it")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    print(f"seed {seed}")
    d = Differences(args.verbose)
    for name in args.only.split(","):
        FAMILIES[name](d, np.random.default_rng([seed, list(FAMILIES).index(name)]))
    print(f"{len(d.rows)} differences")
    for label, what in d.rows:
        print(f"{label} :: {what}")


if __name__ == "__main__":
    main()

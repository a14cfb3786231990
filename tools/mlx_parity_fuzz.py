"""Differential fuzzing of alloy.core against real MLX (CPU): prints every
call where the two differ in value, dtype, shape or exception type.

    python tools/mlx_parity_fuzz.py [--seed N] [--only elementwise,reductions,...,fft]

A tool for finding parity gaps, not a test: the README lists the differences
it leaves on purpose (integer matmul, softmax of integers, ...), and MLX
0.32.4's CPU backend crashes or hangs on some inputs (integer division by
zero, reductions and scatters of empty arrays, linalg of 0x0), which
the families below steer around. `--verbose` prints each call before making
it, so the last line of a hung run names the call. Each family draws fresh
random inputs from the seed it prints; comparisons go through
tests/python/mlx_oracle.py. A whole run takes about 15 minutes here.
"""
import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
import mlx.core as mlx_core  # noqa: E402
from mlx_oracle import random_array, same, same_error  # noqa: E402
from parity_nn_layers import nn_layers  # noqa: E402

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


def creation(d, rng):
    for _ in range(150):
        dt = str(rng.choice(["int32", "int64", "uint8", "float16", "float32", "bfloat16"]))
        start, stop = float(np.round(rng.uniform(-6, 6), 1)), float(np.round(rng.uniform(-6, 6), 1))
        step = float(rng.choice([1, 2, -1, 0.5, -0.75, 3]))
        n, m, k = int(rng.integers(0, 5)), int(rng.integers(0, 5)), int(rng.integers(-3, 4))
        value = rng.choice([2, -1.5, 1, 0.25])
        cases = {
            f"arange({start}, {stop}, {step}, {dt})":
                lambda mm: mm.arange(start, stop, step, dtype=getattr(mm, dt)),
            f"arange(int {int(start)}, {int(stop)})": lambda mm: mm.arange(int(start), int(stop)),
            f"arange({stop})": lambda mm: mm.arange(stop),
            f"linspace({start}, {stop}, {n}, {dt})": lambda mm: mm.linspace(start, stop, n, dtype=getattr(mm, dt)),
            f"eye({n}, {m}, {k}, {dt})": lambda mm: mm.eye(n, m, k, dtype=getattr(mm, dt)),
            f"identity({n}, {dt})": lambda mm: mm.identity(n, dtype=getattr(mm, dt)),
            f"tri({n}, {m}, {k})": lambda mm: mm.tri(n, m, k),
            f"full(({n}, {m}), {value!r})": lambda mm: mm.full((n, m), value.item()),
            # (A float value with an integer dtype: MLX ignores the dtype, README lists it.)
            f"full(({n},), {value!r}, {dt})": lambda mm: mm.full((n,), float(value) if dt.startswith(("float", "bfloat"))
                                                               else int(value), dtype=getattr(mm, dt)),
            f"meshgrid(ij={bool(k > 0)})": lambda mm: mm.meshgrid(mm.arange(n), mm.arange(m) * 0.5,
                                                                 indexing="ij" if k > 0 else "xy"),
        }
        label = list(cases)[int(rng.integers(0, len(cases)))]
        d.check(label, lambda mm, label=label: cases[label](mm))


def linalg(d, rng):
    # MLX's linalg runs on its CPU stream only, and traps on 0x0 inverses:
    # sizes start at 1.
    for _ in range(120):
        n, batch = int(rng.integers(1, 5)), [(), (2,), (2, 3)][int(rng.integers(0, 3))]
        a = (rng.standard_normal(batch + (n, n)) + 3 * np.eye(n)).astype(np.float32)
        spd = (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(np.float32)
        b = rng.standard_normal(batch + (n, 2)).astype(np.float32)
        v = rng.standard_normal(batch + (3,)).astype(np.float32)
        rect = rng.standard_normal(batch + (n, n + 1)).astype(np.float32)
        ord_ = [None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2, 0, 3][int(rng.integers(0, 11))]
        axis = [None, -1, (-2, -1), 0][int(rng.integers(0, 4))]
        keep = bool(rng.integers(0, 2))
        upper = bool(rng.integers(0, 2))
        cases = {
            f"norm(ord={ord_}, axis={axis}, keepdims={keep})": (lambda m, x: m.linalg.norm(x, ord_, axis, keep), a),
            "inv": (lambda m, x: m.linalg.inv(x), a),
            "pinv": (lambda m, x: m.linalg.pinv(x), rect),
            "qr R": (lambda m, x: m.abs(m.linalg.qr(x)[1]), a),
            "svd S": (lambda m, x: m.linalg.svd(x, compute_uv=False), rect),
            f"cholesky(upper={upper})": (lambda m, x: m.linalg.cholesky(x, upper=upper), spd),
            f"cholesky_inv(upper={upper})": (lambda m, x: m.linalg.cholesky_inv(
                m.linalg.cholesky(x, upper=upper), upper=upper), spd),
            "eigvalsh": (lambda m, x: m.linalg.eigvalsh(x), spd),
            "eigh values": (lambda m, x: m.linalg.eigh(x)[0], spd),
            "solve": (lambda m, x, y: m.linalg.solve(x, y), a, b),
            f"solve_triangular(upper={upper})": (lambda m, x, y: m.linalg.solve_triangular(
                m.triu(x) if upper else m.tril(x), y, upper=upper), a, b),
            f"tri_inv(upper={upper})": (lambda m, x: m.linalg.tri_inv(m.triu(x) if upper else m.tril(x), upper=upper), a),
            "cross": (lambda m, x, y: m.linalg.cross(x, y), v, v[..., ::-1].copy()),
            "lu_factor LU": (lambda m, x: m.linalg.lu_factor(x)[0], a),
            "lu P@L@U": (lambda m, x: (lambda p, lo, up: m.matmul(m.matmul(p, lo), up))(*m.linalg.lu(x)), a),
            "det via slogdet-free lu": (lambda m, x: m.linalg.lu(x)[2].shape, a),
        }
        label = list(cases)[int(rng.integers(0, len(cases)))]
        fn, *args = cases[label]
        d.check(f"linalg.{label} {batch + (n, n)}", fn, *args)


def conv(d, rng):
    for _ in range(120):
        dims = int(rng.integers(1, 4))
        groups = int(rng.choice([1, 2]))
        cin, cout = 2 * int(rng.integers(1, 3)), 2 * int(rng.integers(1, 3))
        spatial = tuple(int(v) for v in rng.integers(3, 8, size=dims))
        ksize = tuple(int(v) for v in rng.integers(1, 4, size=dims))
        stride, pad, dil = int(rng.integers(1, 3)), int(rng.integers(0, 3)), int(rng.integers(1, 3))
        # (Where the dilated kernel spans more than the padded input, MLX 0.32.4
        # returns one output element per axis for strides above 1, from a
        # window that does not fit, README; Alloy refuses, as MLX at stride 1.)
        spatial = tuple(max(s_, dil * (k - 1) + 1 - 2 * pad) for s_, k in zip(spatial, ksize))
        x = rng.standard_normal((2,) + spatial + (cin,)).astype(np.float32)
        w = rng.standard_normal((cout,) + ksize + (cin // groups,)).astype(np.float32)
        wt = rng.standard_normal((cout,) + ksize + (cin,)).astype(np.float32)
        name = f"conv{dims}d"
        transpose = bool(rng.integers(0, 3) == 0)
        if transpose and pad > dil * (min(ksize) - 1):
            transpose = False  # MLX 0.32.4 crops the undilated input there: its shapes are wrong (README)
        if transpose:
            outpad = int(rng.integers(0, stride))
            d.check(f"conv_transpose{dims}d(stride={stride}, padding={pad}, dilation={dil}, output_padding={outpad})"
                    f" x{x.shape} w{wt.shape}",
                    lambda m, a, b: getattr(m, f"conv_transpose{dims}d")(a, b, stride=stride, padding=pad,
                                                                       dilation=dil, output_padding=outpad), x, wt)
        elif rng.integers(0, 4) == 0:
            flip = bool(rng.integers(0, 2))
            d.check(f"conv_general(stride={stride}, padding=({pad}, {pad + 1}), kernel_dilation={dil}, "
                    f"input_dilation=2, groups={groups}, flip={flip}) x{x.shape} w{w.shape}",
                    lambda m, a, b: m.conv_general(a, b, stride=stride, padding=([pad] * dims, [pad + 1] * dims),
                                                   kernel_dilation=dil, input_dilation=2, groups=groups, flip=flip),
                    x, w)
        else:
            d.check(f"{name}(stride={stride}, padding={pad}, dilation={dil}, groups={groups}) x{x.shape} w{w.shape}",
                    lambda m, a, b: getattr(m, name)(a, b, stride=stride, padding=pad, dilation=dil, groups=groups),
                    x, w)


def misc(d, rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    ints = rng.integers(-20, 20, size=(3, 4, 5)).astype(np.int32)
    specs = ["ijk->kji", "ijk->i", "ijk,ikl->ijl", "ij,jk->ik", "ii->i", "ijk->", "i,i->", "ij,ij->ij", "...k,kl->...l"]
    for _ in range(300):
        a1, k = int(rng.integers(-3, 3)), int(rng.integers(-3, 6))
        decimals = int(rng.integers(-1, 3))
        lo, hi = [None, -0.5][int(rng.integers(0, 2))], [None, 0.75][int(rng.integers(0, 2))]
        spec = specs[int(rng.integers(0, len(specs)))]
        bits, group = int(rng.choice([2, 3, 4, 5, 6, 8])), int(rng.choice([32, 64]))
        q = rng.standard_normal((4, 128)).astype(np.float32)
        cases = {
            f"einsum({spec})": (lambda m, a: m.einsum(spec, *{
                "ijk->kji": [a], "ijk->i": [a], "ijk,ikl->ijl": [a, m.swapaxes(a, 1, 2)[:, :, :3]],
                "ij,jk->ik": [a[0], a[1].T], "ii->i": [a[0, :3, :3]], "ijk->": [a], "i,i->": [a[0, 0], a[1, 0]],
                "ij,ij->ij": [a[0], a[1]], "...k,kl->...l": [a, a[0].T]}[spec]), x),
            f"clip({lo}, {hi})": (lambda m, a: m.clip(a, lo, hi) if lo is not None or hi is not None else a, x),
            f"round(decimals={decimals})": (lambda m, a: m.round(a * 10, decimals), x),
            f"round int(decimals={decimals})": (lambda m, a: m.round(a, decimals), ints),
            f"nan_to_num(nan={k}, posinf={hi})": (lambda m, a: m.nan_to_num(
                m.where(a > 1, m.inf, m.where(a < -1, m.nan, a)), nan=float(k), posinf=hi), x),
            f"partition kth={abs(k) % 5} sorted": (lambda m, a: m.sort(m.partition(a, abs(k) % 5, axis=-1), axis=-1), x),
            f"argpartition kth={abs(k) % 5} element": (lambda m, a: m.take_along_axis(
                a, m.argpartition(a, abs(k) % 5, axis=-1), axis=-1)[..., abs(k) % 5], x),
            f"sort(axis={a1})": (lambda m, a: m.sort(a, axis=a1), ints),
            f"argsort(axis={a1}) of distinct": (lambda m, a: m.argsort(a, axis=a1), x),
            f"cumsum(axis={a1}, reverse={k > 2}, inclusive={k % 2 == 0})": (lambda m, a: m.cumsum(
                a, axis=a1, reverse=k > 2, inclusive=k % 2 == 0), ints),
            f"cumprod(axis={a1}, reverse={k > 2}, inclusive={k % 2 == 0})": (lambda m, a: m.cumprod(
                a, axis=a1, reverse=k > 2, inclusive=k % 2 == 0), x),
            f"diag({k})": (lambda m, a: m.diag(a[0], k), x),
            f"diag vector({k})": (lambda m, a: m.diag(a[0, 0], k), x),
            "inner": (lambda m, a: m.inner(a, a[0]), x),
            f"as_strided((3, {abs(k) + 1}), (1, 2))": (lambda m, a: m.as_strided(a, (3, abs(k) + 1), (1, 2)), x),
            f"view({['int32', 'uint8', 'float16'][abs(k) % 3]})": (lambda m, a: m.view(
                a, getattr(m, ["int32", "uint8", "float16"][abs(k) % 3])), x),
            f"quantize round trip(bits={bits}, group={group})": (lambda m, a: m.dequantize(
                *m.quantize(a, group_size=group, bits=bits), group_size=group, bits=bits), q),
            f"quantized_matmul(bits={bits}, group={group})": (lambda m, a, w: m.quantized_matmul(
                a, *m.quantize(w, group_size=group, bits=bits), transpose=True, group_size=group, bits=bits),
                q[:2], q),
            f"hadamard_transform(scale={decimals})": (lambda m, a: m.hadamard_transform(
                a[:, :64], scale=None if decimals < 0 else 0.5 * decimals), q),
            f"addmm(alpha={k}, beta={decimals})": (lambda m, a: m.addmm(a[0, :, :4], a[0], a[1].T[:, :4][:5],
                                                                        alpha=float(k), beta=float(decimals)), x),
            f"where(scalars {k})": (lambda m, a: m.where(a > 0, k, 0.5), x),
            f"isclose(rtol={abs(k) * 0.1}, equal_nan={k > 0})": (lambda m, a: m.isclose(
                a, a + 0.05, rtol=abs(k) * 0.1, equal_nan=k > 0), x),
            f"allclose({abs(k) * 0.1})": (lambda m, a: m.allclose(a, a + 0.05, atol=abs(k) * 0.1), x),
            f"array_equal(equal_nan={k > 0})": (lambda m, a: m.array_equal(a, a, equal_nan=k > 0), x),
            f"bitwise count/ops int {k}": (lambda m, a: m.right_shift(m.left_shift(a, abs(k) % 4), 1), ints),
            f"std(ddof={abs(k) % 3})": (lambda m, a: m.std(a, axis=a1, ddof=abs(k) % 3), x),
            f"var(ddof={abs(k) % 3}) int": (lambda m, a: m.var(a, ddof=abs(k) % 3), ints),
            f"median? mean int axis {a1}": (lambda m, a: m.mean(a, axis=a1), ints),
            f"tile(({abs(k) % 3}, 2))": (lambda m, a: m.tile(a, (abs(k) % 3, 2)), x),
            f"broadcast_to((2, 3, 4, 5))": (lambda m, a: m.broadcast_to(a, (2, 3, 4, 5)), x),
            f"outer int,float": (lambda m, a, b: m.outer(a[0, 0], b[0, 0]), ints, x),
            f"logsumexp(axis={a1})": (lambda m, a: m.logsumexp(a, axis=a1), x),
            f"put_along_axis(axis={a1})": (lambda m, a, i: m.put_along_axis(a, i, m.array(9.0), axis=a1),
                                          x, np.zeros((1, 1, 1), np.int32)),
            f"slice_update": (lambda m, a: m.slice_update(a, m.ones((1, 2, 2)), m.array([1, 1, 1]), axes=(0, 1, 2)), x),
            f"slice dynamic": (lambda m, a: m.slice(a, m.array([1, 0]), (0, 1), (2, 3)), x),
        }
        label = list(cases)[int(rng.integers(0, len(cases)))]
        fn, *args = cases[label]
        d.check(label, fn, *args)


def random_draws(d, rng):
    # The same key gives the same bits: every sampler must agree exactly
    # (float32 rounding aside).
    for _ in range(150):
        seed = int(rng.integers(0, 2**31))
        shape = tuple(int(v) for v in rng.integers(0, 5, size=int(rng.integers(0, 3))))
        dt = str(rng.choice(["float32", "float16", "bfloat16"]))
        lo, hi = float(rng.uniform(-3, 0)), float(rng.uniform(0.1, 3))
        p = float(rng.uniform(0, 1))
        logits = rng.standard_normal((3, 6)).astype(np.float32)
        cases = {
            f"uniform({shape}, {dt})": lambda m: m.random.uniform(lo, hi, shape, dtype=getattr(m, dt), key=m.random.key(seed)),
            f"normal({shape}, {dt})": lambda m: m.random.normal(shape, dtype=getattr(m, dt), loc=lo, scale=hi,
                                                              key=m.random.key(seed)),
            f"randint({shape})": lambda m: m.random.randint(int(lo * 10), int(hi * 10) + 1, shape, key=m.random.key(seed)),
            f"bernoulli({p:.2f}, {shape})": lambda m: m.random.bernoulli(p, shape, key=m.random.key(seed)),
            f"truncated_normal({shape})": lambda m: m.random.truncated_normal(lo, hi, shape, key=m.random.key(seed)),
            f"gumbel({shape})": lambda m: m.random.gumbel(shape, key=m.random.key(seed)),
            f"laplace({shape})": lambda m: m.random.laplace(shape, loc=lo, scale=hi, key=m.random.key(seed)),
            "categorical": lambda m: m.random.categorical(m.array(logits), key=m.random.key(seed)),
            "categorical num_samples": lambda m: m.random.categorical(m.array(logits), num_samples=4,
                                                                       key=m.random.key(seed)),
            "categorical axis 0 shape": lambda m: m.random.categorical(m.array(logits), axis=0, shape=(2, 6),
                                                                        key=m.random.key(seed)),
            "permutation(7)": lambda m: m.random.permutation(7, key=m.random.key(seed)),
            "permutation(array, axis=1)": lambda m: m.random.permutation(m.array(logits), axis=1, key=m.random.key(seed)),
            "split(3)": lambda m: m.random.split(m.random.key(seed), 3),
            "multivariate_normal": lambda m: m.random.multivariate_normal(
                m.zeros(2), m.array([[2.0, 0.5], [0.5, 1.0]]), (3,), key=m.random.key(seed)),
        }
        label = list(cases)[int(rng.integers(0, len(cases)))]
        d.check(f"random.{label} seed {seed}", lambda m, label=label: cases[label](m))


def fft(d, rng):
    # Sizes start at 1: MLX traps on an FFT of size 0.
    for _ in range(150):
        shape = tuple(int(v) for v in rng.integers(1, 7, size=int(rng.integers(1, 4))))
        x = rng.standard_normal(shape).astype(np.float32)
        c = (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
        n = int(rng.integers(1, 8))
        axis = int(rng.integers(-len(shape), len(shape)))
        norm_ = None
        s = tuple(int(v) for v in rng.integers(1, 6, size=min(2, len(shape))))
        axes = tuple(range(-len(s), 0))
        cases = {
            f"fft(n={n}, axis={axis})": (lambda m, a: m.fft.fft(a, n, axis), c),
            f"ifft(n={n}, axis={axis})": (lambda m, a: m.fft.ifft(a, n, axis), c),
            f"fft real input(axis={axis})": (lambda m, a: m.fft.fft(a, axis=axis), x),
            f"rfft(n={n}, axis={axis})": (lambda m, a: m.fft.rfft(a, n, axis), x),
            f"irfft(n={n}, axis={axis})": (lambda m, a: m.fft.irfft(a, n, axis), c),
            f"fft2(s={s})": (lambda m, a: m.fft.fft2(a, s, axes), c),
            f"ifft2(s={s})": (lambda m, a: m.fft.ifft2(a, s, axes), c),
            f"fftn(s={s}, axes={axes})": (lambda m, a: m.fft.fftn(a, s, axes), c),
            f"rfftn(s={s})": (lambda m, a: m.fft.rfftn(a, s, axes), x),
            f"irfftn(s={s})": (lambda m, a: m.fft.irfftn(a, s, axes), c),
            f"rfft2()": (lambda m, a: m.fft.rfft2(a, axes=axes), x),
            f"irfft2()": (lambda m, a: m.fft.irfft2(a, axes=axes), c),
            f"fftshift(axes={axis})": (lambda m, a: m.fft.fftshift(a, axes=[axis]), x),
            f"ifftshift()": (lambda m, a: m.fft.ifftshift(a), x),
        }
        label = list(cases)[int(rng.integers(0, len(cases)))]
        fn, *args = cases[label]
        d.check(f"fft.{label} {shape}", fn, *args)
        del norm_


def nn_of(m):
    """mlx.nn beside mlx.core, alloy.nn beside alloy.core."""
    import importlib
    return importlib.import_module(("mlx" if m is mlx_core else "alloy") + ".nn")


ACTIVATIONS = ["celu", "elu", "gelu", "gelu_approx", "gelu_fast_approx", "glu", "hard_shrink", "hard_tanh",
               "hardswish", "leaky_relu", "log_sigmoid", "log_softmax", "mish", "relu", "relu2", "relu6", "selu",
               "sigmoid", "silu", "softmax", "softmin", "softplus", "softshrink", "softsign", "step", "tanh"]


def nn_functions(d, rng):
    x = (rng.standard_normal((4, 6)) * 3).astype(np.float32)
    for dt in ["float32", "float16", "bfloat16"]:
        xd = x.astype(np.float32)
        for name in ACTIVATIONS:
            d.check(f"nn.{name}({dt})", lambda m, a, name=name, dt=dt: getattr(nn_of(m), name)(a.astype(getattr(m, dt))),
                    xd)
    logits = rng.standard_normal((5, 7)).astype(np.float32)
    targets = rng.integers(0, 7, size=(5,)).astype(np.int32)
    probs = rng.uniform(0.05, 0.95, (5, 7)).astype(np.float32)
    y = rng.standard_normal((5, 7)).astype(np.float32)
    for reduction in ["none", "mean", "sum"]:
        for smoothing in [0.0, 0.2]:
            d.check(f"cross_entropy(class, smoothing={smoothing}, {reduction})",
                    lambda m, a, t, smoothing=smoothing, reduction=reduction: nn_of(m).losses.cross_entropy(
                        a, t, label_smoothing=smoothing, reduction=reduction), logits, targets)
        d.check(f"cross_entropy(probs, axis=0, {reduction})", lambda m, a, p, reduction=reduction:
                nn_of(m).losses.cross_entropy(a, p, axis=0, reduction=reduction), logits, probs)
        d.check(f"cross_entropy(weights, {reduction})", lambda m, a, t, w, reduction=reduction:
                nn_of(m).losses.cross_entropy(a, t, weights=w, reduction=reduction), logits, targets, probs[:, 0])
        for with_logits in [True, False]:
            d.check(f"binary_cross_entropy(with_logits={with_logits}, {reduction})",
                    lambda m, a, p, wl=with_logits, reduction=reduction: nn_of(m).losses.binary_cross_entropy(
                        a if wl else m.sigmoid(a), p > 0.5, with_logits=wl, reduction=reduction), logits, probs)
        losses = {
            "l1_loss": lambda L, a, b: L.l1_loss(a, b, reduction=reduction),
            "mse_loss": lambda L, a, b: L.mse_loss(a, b, reduction=reduction),
            "smooth_l1_loss": lambda L, a, b: L.smooth_l1_loss(a, b, beta=0.7, reduction=reduction),
            "huber_loss": lambda L, a, b: L.huber_loss(a, b, delta=0.5, reduction=reduction),
            "log_cosh_loss": lambda L, a, b: L.log_cosh_loss(a, b, reduction=reduction),
            "kl_div_loss": lambda L, a, b: L.kl_div_loss(a, b, reduction=reduction),
            "hinge_loss": lambda L, a, b: L.hinge_loss(a, b, reduction=reduction),
            "cosine_similarity_loss": lambda L, a, b: L.cosine_similarity_loss(a, b, reduction=reduction),
            "margin_ranking_loss": lambda L, a, b: L.margin_ranking_loss(a[:, 0], b[:, 0], m_sign(a[:, 1]),
                                                                         margin=0.3, reduction=reduction),
            "gaussian_nll_loss": lambda L, a, b: L.gaussian_nll_loss(a, b, abs(b) + 0.1, full=True,
                                                                     reduction=reduction),
            "triplet_loss": lambda L, a, b: L.triplet_loss(a, b, a[::-1], margin=0.5, reduction=reduction),
            "nll_loss": lambda L, a, b: L.nll_loss(a, m_argmax(b), reduction=reduction),
        }
        for name, fn in losses.items():
            d.check(f"losses.{name}({reduction})", lambda m, a, b, fn=fn: fn(nn_of(m).losses, a, b), y, logits)


def m_sign(a):
    return (a > 0).astype(a.dtype) * 2 - 1


def m_argmax(a):
    return a.argmax(axis=-1)


def fast_ops(d, rng):
    for _ in range(120):
        dt = str(rng.choice(["float32", "float16", "bfloat16"]))
        dims = int(rng.choice([8, 16, 32]))
        x = rng.standard_normal((2, 3, 5, dims)).astype(np.float32)
        w = rng.standard_normal((dims,)).astype(np.float32)
        b = rng.standard_normal((dims,)).astype(np.float32)
        eps = float(rng.choice([1e-5, 1e-2]))
        traditional = bool(rng.integers(0, 2))
        offset = int(rng.integers(0, 9))
        rope_dims = int(rng.choice([dims, dims // 2]))
        heads_q, heads_kv = [(4, 4), (4, 2), (4, 1)][int(rng.integers(0, 3))]
        lq, lk = int(rng.integers(1, 6)), int(rng.integers(1, 8))
        q = rng.standard_normal((1, heads_q, lq, dims)).astype(np.float32)
        k = rng.standard_normal((1, heads_kv, lk, dims)).astype(np.float32)
        v = rng.standard_normal((1, heads_kv, lk, dims)).astype(np.float32)
        mask_kind = str(rng.choice(["none", "causal", "bool", "additive"]))
        bool_mask = rng.random((lq, lk)) < 0.7
        bool_mask[:, 0] = True  # no row masked out entirely
        cases = {
            f"rms_norm({dt}, eps={eps})": (lambda m, a, w_: m.fast.rms_norm(
                a.astype(getattr(m, dt)), w_.astype(getattr(m, dt)), eps), x, w),
            f"rms_norm(no weight, {dt})": (lambda m, a: m.fast.rms_norm(a.astype(getattr(m, dt)), None, eps), x),
            f"layer_norm({dt}, eps={eps})": (lambda m, a, w_, b_: m.fast.layer_norm(
                a.astype(getattr(m, dt)), w_.astype(getattr(m, dt)), b_.astype(getattr(m, dt)), eps), x, w, b),
            f"layer_norm(no affine, {dt})": (lambda m, a: m.fast.layer_norm(a.astype(getattr(m, dt)), None, None,
                                                                              eps), x),
            f"rope(dims={rope_dims}, traditional={traditional}, offset={offset}, {dt})": (
                lambda m, a: m.fast.rope(a.astype(getattr(m, dt)), rope_dims, traditional=traditional, base=10000.0,
                                         scale=1.0, offset=offset), x),
            f"rope(freqs, dims={rope_dims}, traditional={traditional})": (
                lambda m, a: m.fast.rope(a, rope_dims, traditional=traditional, base=None, scale=0.5,
                                         offset=m.array(offset), freqs=m.arange(1, rope_dims // 2 + 1) * 0.25), x),
            f"sdpa(heads {heads_q}/{heads_kv}, lq {lq}, lk {lk}, mask {mask_kind}, {dt})": (
                lambda m, q_, k_, v_, bm: m.fast.scaled_dot_product_attention(
                    q_.astype(getattr(m, dt)), k_.astype(getattr(m, dt)), v_.astype(getattr(m, dt)), scale=0.3,
                    mask={"none": None, "causal": "causal", "bool": bm,
                          "additive": m.where(bm, 0.0, -4.0).astype(getattr(m, dt))}[mask_kind]),
                q, k, v, bool_mask),
            # (float32 logits: the CPU of MLX reduces half logits in their own type,
            # its GPU in float32 as Alloy does on both.)
            "fast.cross_entropy": (lambda m, a, t: m.fast.cross_entropy(a, t),
                                   x[0, 0], rng.integers(0, dims, size=(5,)).astype(np.int32)),
        }
        label = list(cases)[int(rng.integers(0, len(cases)))]
        fn, *args = cases[label]
        d.check(label, fn, *args)


GRAD_UNARY = ["abs", "negative", "sign", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
              "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sqrt", "rsqrt",
              "square", "floor", "ceil", "round", "sigmoid", "erf", "erfinv", "reciprocal", "degrees", "radians",
              "stop_gradient", "softmax", "logsumexp", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort",
              "max", "min", "prod", "mean", "var", "std", "sum", "real", "imag", "conjugate"]
GRAD_BINARY = ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "arctan2", "logaddexp",
               "remainder", "floor_divide", "outer", "kron", "matmul", "inner"]


def grads(d, rng):
    """Gradients (vjp of a random cotangent) through each op, and ties."""
    for _ in range(3):
        # Inside every domain (arccosh needs > 1 on the shifted copy).
        x = rng.uniform(0.2, 0.9, (3, 4)).astype(np.float32)
        y = rng.uniform(0.2, 0.9, (3, 4)).astype(np.float32)
        for name in GRAD_UNARY:
            def f(m, a, c, name=name):
                fn = getattr(m, name)
                arg = a + 1.5 if name == "arccosh" else a
                return m.grad(lambda t: (fn(t + 1.5 if name == "arccosh" else t).astype(m.float32) *
                                         c[: fn(arg).shape[0]] if fn(arg).ndim else fn(t)).sum())(a)
            d.check(f"grad {name}", f, x, rng.standard_normal((3, 4)).astype(np.float32))
        for name in GRAD_BINARY:
            def g(m, a, b, name=name):
                fn = getattr(m, name)
                if name in ("matmul",):
                    return m.grad(lambda s, t: fn(s, t.T).sum(), argnums=(0, 1))(a, b)
                return m.grad(lambda s, t: (fn(s, t) * fn(s, t)).sum(), argnums=(0, 1))(a, b)
            d.check(f"grad {name}", g, x, y)
    # Ties and edges: where MLX's vjps split or pick.
    t = np.array([[0.0, 1.0, 1.0, -1.0], [2.0, 2.0, 0.0, 0.5]], np.float32)
    for label, fn in {
        "grad max with ties": lambda m, a: m.grad(lambda s: m.max(s, axis=1).sum())(a),
        "grad min with ties": lambda m, a: m.grad(lambda s: m.min(s).sum())(a),
        "grad maximum(x, x)": lambda m, a: m.grad(lambda s: m.maximum(s, s[:, ::-1]).sum())(a),
        "grad abs at 0": lambda m, a: m.grad(lambda s: m.abs(s).sum())(a),
        "grad sqrt at 0": lambda m, a: m.grad(lambda s: m.sqrt(m.abs(s)).sum())(a),
        "grad prod with zeros": lambda m, a: m.grad(lambda s: m.prod(s, axis=1).sum())(a),
        "grad cumprod with zeros": lambda m, a: m.grad(lambda s: m.cumprod(s, axis=1).sum())(a),
        "grad argmax-take": lambda m, a: m.grad(lambda s: m.take_along_axis(
            s, m.argmax(s, axis=1, keepdims=True), axis=1).sum())(a),
        "grad sort ties": lambda m, a: m.grad(lambda s: (m.sort(s, axis=1) * m.arange(4)).sum())(a),
        "grad topk": lambda m, a: m.grad(lambda s: m.topk(s, 2, axis=1).sum())(a),
        "grad clip at bounds": lambda m, a: m.grad(lambda s: m.clip(s, 0.0, 1.0).sum())(a),
        "grad where": lambda m, a: m.grad(lambda s: m.where(s > 0.5, s * 2, s * s).sum())(a),
        "grad x[idx] repeated": lambda m, a: m.grad(lambda s: s[m.array([0, 0, 1]), m.array([1, 1, 2])].sum())(a),
        # (With a slice after the index array, .at[i, :].add has no gradient in
        # MLX 0.32.4: its vjp reshapes to the wrong shape.)
        "grad .at add repeated": lambda m, a: m.grad(lambda s: (m.zeros((2, 4)).at[m.array([0, 0])].add(s[:2]) *
                                                               m.arange(8).reshape(2, 4)).sum())(a),
        "grad scatter set": lambda m, a: m.grad(lambda s: m.put_along_axis(s, m.array([[1], [2]]), m.array(3.0),
                                                                           axis=1).sum())(a),
        "grad norm at 0": lambda m, a: m.grad(lambda s: m.linalg.norm(s * 0))(a),
        "grad logsumexp -inf": lambda m, a: m.grad(lambda s: m.logsumexp(m.where(s > 0.4, s, -m.inf), axis=1).sum())(a),
        "grad softmax precise": lambda m, a: m.grad(lambda s: (m.softmax(s, axis=1, precise=True) ** 2).sum())(a),
        "grad power 0**0": lambda m, a: m.grad(lambda s: m.power(s * 0, s * 0).sum(), argnums=(0,))(a),
        "grad divide by 0": lambda m, a: m.grad(lambda s: (1.0 / s).sum())(a),
        "vjp two outputs": lambda m, a: m.vjp(lambda s: (m.sin(s), m.cos(s)), [a], [a, a * 2])[1],
        "jvp": lambda m, a: m.jvp(lambda s: m.tanh(s) * s, [a], [m.ones_like(a)])[1],
        "vmap of grad": lambda m, a: m.vmap(m.grad(lambda s: (s ** 3).sum()))(a),
        "vmap matmul in_axes": lambda m, a: m.vmap(lambda s, u: s @ u, in_axes=(0, 1))(a[:, :2], a[:, 2:].T),
        "vmap out_axes": lambda m, a: m.vmap(lambda s: m.outer(s, s), out_axes=2)(a),
        "value_and_grad aux": lambda m, a: m.value_and_grad(lambda s: ((s ** 2).sum(), s.mean()))(a),
    }.items():
        d.check(label, fn, t)


VMAP_FUNCS = {
    "exp": lambda m, a: m.exp(a), "sum axis 0": lambda m, a: m.sum(a, axis=0), "softmax": lambda m, a: m.softmax(a),
    "sort": lambda m, a: m.sort(a), "argmax": lambda m, a: m.argmax(a), "cumsum": lambda m, a: m.cumsum(a),
    "matmul self": lambda m, a: a @ a.T, "take": lambda m, a: m.take(a, m.array([0, 2])), "transpose": lambda m, a: a.T,
    "reshape": lambda m, a: a.reshape(-1), "slice": lambda m, a: a[1:, ::2], "index array": lambda m, a: a[m.array([1, 0])],
    "concatenate": lambda m, a: m.concatenate([a, a * 2], axis=0), "pad": lambda m, a: m.pad(a, 1),
    "where": lambda m, a: m.where(a > 0, a, 0), "topk": lambda m, a: m.topk(a, 2), "var": lambda m, a: m.var(a),
    "logsumexp": lambda m, a: m.logsumexp(a, axis=-1), "expand_dims": lambda m, a: m.expand_dims(a, 0),
    "broadcast_to": lambda m, a: m.broadcast_to(a, (2,) + a.shape), "conv1d": lambda m, a: m.conv1d(
        a[None, :, :, None] if a.ndim == 2 else a[None, :, None, None], m.ones((2, 2, 1)))[0],
    "fft": lambda m, a: m.fft.fft(a), "astype": lambda m, a: a.astype(m.float16), "flatten": lambda m, a: m.flatten(a),
    "rms_norm": lambda m, a: m.fast.rms_norm(a, m.ones((a.shape[-1],)), 1e-5),
    "layer_norm": lambda m, a: m.fast.layer_norm(a, None, None, 1e-5),
    "scatter add": lambda m, a: a.at[m.array([0, 0])].add(1.0), "tril": lambda m, a: m.tril(a) if a.ndim == 2 else a,
    "inner": lambda m, a: m.inner(a, a), "linalg.norm": lambda m, a: m.linalg.norm(a),
}


def vmaps(d, rng):
    """vmap of each function over each axis of a 3-D input, out_axes 0 and -1,
    and of two-argument functions with in_axes mixing a mapped and a shared one."""
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    y = rng.standard_normal((4, 5)).astype(np.float32)
    for name, fn in VMAP_FUNCS.items():
        for in_axis in (0, 1, 2):
            for out_axis in (0, -1):
                d.check(f"vmap({name}, in_axes={in_axis}, out_axes={out_axis})",
                        lambda m, a, fn=fn, i=in_axis, o=out_axis: m.vmap(lambda t: fn(m, t), in_axes=i, out_axes=o)(a),
                        x)
    for label, (fn, axes) in {
        "add mapped + shared": (lambda m, a, b: a + b, (0, None)),
        "matmul mapped @ shared.T": (lambda m, a, b: a @ b.T, (0, None)),
        "matmul in_axes (1, 0)": (lambda m, a, b: a @ b, (1, 0)),
        "where mapped": (lambda m, a, b: m.where(a > b, a, b), (2, 1)),
        "take_along_axis mapped": (lambda m, a, b: m.take_along_axis(a, m.argsort(b, axis=-1), axis=-1), (0, None)),
        "vmap of vmap": (lambda m, a, b: m.vmap(lambda u, v: u * v)(a, b), (0, None)),
    }.items():
        d.check(f"vmap {label}", lambda m, a, b, fn=fn, axes=axes: m.vmap(lambda u, v: fn(m, u, v), in_axes=axes)(a, b),
                x, y)


# (Ops that keep values within a few units: MLX's CPU sin of large
# arguments differs from libm's in the fifth digit.)
CHAIN_OPS = [("sin", 1), ("tanh", 1), ("abs", 1), ("square", 1), ("sigmoid", 1), ("negative", 1),
             ("add", 2), ("multiply", 2), ("subtract", 2), ("maximum", 2), ("minimum", 2), ("divide", 2)]


def compiled(d, rng):
    """mx.compile of random elementwise chains (with broadcasting, Python
    scalars, dtype changes and a trailing reduction) against MLX's compile;
    shapeless compiles called at two shapes; random state through compile."""
    for _ in range(60):
        steps = [CHAIN_OPS[int(i)] for i in rng.integers(0, len(CHAIN_OPS), size=int(rng.integers(2, 9)))]
        scalar = float(np.round(rng.uniform(-2, 2), 2))
        dt = str(rng.choice(["float32", "float16", "bfloat16"]))
        reduce_last = bool(rng.integers(0, 2))
        shapeless = bool(rng.integers(0, 2))

        def chain(m, a, b, steps=steps, scalar=scalar, dt=dt, reduce_last=reduce_last):
            # Both operands in the chain's dtype: the comparison's tolerance is its.
            y, b = a.astype(getattr(m, dt)), b.astype(getattr(m, dt))
            for k, (name, arity) in enumerate(steps):
                if arity == 1:
                    y = getattr(m, name)(y)
                else:
                    other = b if k % 2 else scalar
                    y = getattr(m, name)(y, other) if name != "divide" else getattr(m, name)(y, m.abs(b) + 1)
            return m.sum(y, axis=-1) if reduce_last else y

        a = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
        b = rng.uniform(-1, 1, (4,)).astype(np.float32)
        label = f"compile({'shapeless ' if shapeless else ''}{[n for n, _ in steps]}, {dt}, scalar {scalar}" \
                f"{', sum' if reduce_last else ''})"
        d.check(label, lambda m, x, y, chain=chain, shapeless=shapeless:
                m.compile(lambda u, v: chain(m, u, v), shapeless=shapeless)(x, y), a, b)
        if shapeless:
            a2 = rng.uniform(-1, 1, (5, 4)).astype(np.float32)

            def twice(m, x, x2, y, chain=chain):
                f = m.compile(lambda u, v: chain(m, u, v), shapeless=True)
                return [f(x, y), f(x2, y)]
            d.check(label + " at two shapes", twice, a, a2, b)
    d.check("compile with random state", lambda m, x: (m.random.seed(3), m.compile(
        lambda u: u + m.random.uniform(shape=u.shape), inputs=[m.random.state], outputs=[m.random.state])(x))[1],
        rng.standard_normal((3, 4)).astype(np.float32))
    d.check("compile of a closure", lambda m, x, y: m.compile(lambda u: u * y + m.exp(y))(x),
            rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4,)).astype(np.float32))
    d.check("compile grad", lambda m, x: m.compile(m.grad(lambda u: (m.tanh(u) ** 3).sum()))(x),
            rng.standard_normal((3, 4)).astype(np.float32))


FAMILIES = {"elementwise": elementwise, "reductions": reductions, "indexing": indexing, "shapes": shapes,
            "creation": creation, "linalg": linalg, "conv": conv, "misc": misc, "random": random_draws, "fft": fft,
            "nn": nn_functions, "nn_layers": nn_layers, "fast": fast_ops, "grad": grads, "vmap": vmaps,
            "compile": compiled}


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

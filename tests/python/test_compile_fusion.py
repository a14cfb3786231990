"""mx.compile fuses elementwise chains (issue 16, item 3), on the device the
suite runs on (ALLOY_TEST_DEVICE): the traced graph's chains of unary and
binary ops, casts and broadcast scalars whose intermediates nothing else
reads run as one node (cache-sized blocks on the CPU, one generated kernel
on the GPU). The fused result must equal the uncompiled one bit for bit (the same
functors, compute types and roundings), for every dtype, layout and
broadcast; gradients and vmap through compiled functions replay unfused."""
import os
import subprocess
import sys

import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import assert_same_value

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")

FLOATS = ["float32", "float16", "bfloat16"]


def float_chain(m):
    def f(x, y):
        a = m.exp(x * 0.5) + y
        b = m.sin(a) * 2.0 - m.abs(y)
        c = m.sqrt(m.abs(b) + 1.0)
        return m.tanh(c * x) / (1.0 + m.square(a))
    return f


def int_chain(m):
    def f(x, y):
        a = x * 3 + y
        b = m.maximum(a, y) - m.minimum(x, 7)
        c = (b * b) // 5 + m.abs(a)
        return m.where(c > 10, c, -c).astype(m.float32) * 0.5 + (a < b)
    return f


def same_bits(got, want):
    g, w = np.array(got.astype(mx.float32) if got.dtype in (mx.bfloat16,) else got), np.array(
        want.astype(mx.float32) if want.dtype in (mx.bfloat16,) else want)
    assert g.dtype == w.dtype and g.shape == w.shape
    assert np.array_equal(g, w, equal_nan=g.dtype.kind == "f"), f"max diff {np.nanmax(np.abs(g.astype(np.float64) - w))}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_fused_float_chain_is_bit_exact(rng, dtype):
    x = mx.array(rng.standard_normal((257, 129)).astype(np.float32)).astype(getattr(mx, dtype))
    y = mx.array(rng.standard_normal((257, 129)).astype(np.float32)).astype(getattr(mx, dtype))
    f = float_chain(mx)
    same_bits(mx.compile(f)(x, y), f(x, y))
    # A transposed (strided) input and a row broadcast against a matrix.
    xt = mx.array(rng.standard_normal((129, 257)).astype(np.float32)).astype(getattr(mx, dtype)).T
    row = mx.array(rng.standard_normal((1, 129)).astype(np.float32)).astype(getattr(mx, dtype))
    same_bits(mx.compile(f)(xt, y), f(xt, y))
    same_bits(mx.compile(f)(x, row), f(x, row))


def test_fused_integer_chain_with_casts_and_comparisons(rng):
    x = mx.array(rng.integers(-50, 50, (1000, 37)).astype(np.int32))
    y = mx.array(rng.integers(-50, 50, (1000, 37)).astype(np.int32))
    f = int_chain(mx)
    same_bits(mx.compile(f)(x, y), f(x, y))
    # And the values are MLX's.
    xm, ym = mlx_core.array(np.array(x)), mlx_core.array(np.array(y))
    assert_same_value(mx.compile(f)(x, y), mlx_core.compile(int_chain(mlx_core))(xm, ym))


def test_intermediates_that_are_outputs_or_read_twice(rng):
    x = mx.array(rng.standard_normal(5000).astype(np.float32))

    def f(x):
        a = mx.exp(x) * 2.0          # read twice below: materialised
        b = mx.sin(a) + a
        c = b * b - 1.0              # an output and read again
        return c, mx.cos(c) * 3.0 + 1.0, a

    got, want = mx.compile(f)(x), f(x)
    for g, w in zip(got, want):
        same_bits(g, w)


def test_gradients_and_vmap_through_a_compiled_chain(rng):
    x = mx.array(rng.standard_normal((64, 33)).astype(np.float32))
    y = mx.array(rng.standard_normal((64, 33)).astype(np.float32))
    f = float_chain(mx)
    loss = lambda x, y: mx.sum(f(x, y))  # noqa: E731
    cl = mx.compile(loss)
    for g, w in zip(mx.grad(cl, argnums=(0, 1))(x, y), mx.grad(loss, argnums=(0, 1))(x, y)):
        same_bits(g, w)
    # grad traced inside compile: its backward chain fuses too.
    for g, w in zip(mx.compile(mx.grad(loss, argnums=(0, 1)))(x, y), mx.grad(loss, argnums=(0, 1))(x, y)):
        same_bits(g, w)
    same_bits(mx.vmap(mx.compile(f))(x, y), mx.vmap(f)(x, y))


def profiled_primitives(code):
    """{primitive: calls} from ALLOY_EVAL_PROFILE for a program run apart."""
    env = dict(os.environ, ALLOY_EVAL_PROFILE="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return {line.split()[0]: int(line.split()[1]) for line in r.stderr.splitlines()
            if len(line.split()) == 4 and line.split()[1].isdigit()}


def test_the_chain_runs_as_one_node():
    # The eval profile names each primitive evaluated: the compiled call runs
    # a single fused node ("Compiled") and none of the ops it replaced.
    code = (
        "import numpy as np, alloy.core as mx\n"
        f"mx.set_default_device(mx.{DEVICE})\n"
        "x = mx.array(np.linspace(-1, 1, 4096, dtype=np.float32))\n"
        "f = mx.compile(lambda x: mx.where(x > 0, mx.tanh(mx.exp(x * 0.5) + 1.0) * x, -x) - 2.0)\n"
        "mx.eval(f(x))\n")
    rows = profiled_primitives(code)
    assert rows.get("Compiled") == 1, rows
    for op in ("Multiply", "Exp", "Add", "Tanh", "Subtract", "Greater", "Select", "Negative"):
        assert op not in rows, rows


def test_values_read_twice_inside_the_chain_stay_in_it():
    # `a` and `b` are each read by two ops of the chain and by nothing else:
    # still one node, which reads each as often as it likes.
    code = (
        "import numpy as np, alloy.core as mx\n"
        f"mx.set_default_device(mx.{DEVICE})\n"
        "x = mx.array(np.linspace(-1, 1, 4096, dtype=np.float32))\n"
        "y = mx.array(np.linspace(2, -3, 4096, dtype=np.float32))\n"
        "def f(x, y):\n"
        "    a = x * 1.5 + y\n"
        "    b = a - x * 0.25\n"
        "    c = mx.maximum(b, y) * a\n"
        "    return (mx.minimum(c, 4.0) - b) ** 2\n"
        "mx.eval(mx.compile(f)(x, y))\n")
    rows = profiled_primitives(code)
    assert rows.get("Compiled") == 1, rows
    for op in ("Multiply", "Add", "Subtract", "Maximum", "Minimum", "Power"):
        assert op not in rows, rows


def test_a_shared_value_read_outside_the_chain_is_stored(rng):
    # `a` is read by the chain and by a matmul (not elementwise), and `b` by
    # the chain and returned: both are materialised, and every result is the
    # uncompiled one bit for bit.
    x = mx.array(rng.standard_normal((64, 64)).astype(np.float32))
    y = mx.array(rng.standard_normal((64, 64)).astype(np.float32))

    def f(x, y):
        a = mx.exp(x * 0.5) + y
        b = mx.sin(a) * a
        m = a @ y
        return mx.tanh(b + a) * m, b

    for g, w in zip(mx.compile(f)(x, y), f(x, y)):
        same_bits(g, w)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_a_trailing_reduction_ends_the_chain_bit_exact(rng, dtype):
    # Sums, products, max and min over all axes or trailing axes consume the
    # chain's values as they are made, in the Reduce kernel's order.
    big = dtype == "float32"
    shape = (3, 70001) if big else (5, 33, 17)  # float32: enough for a part per thread
    gen = (lambda s: rng.integers(-9, 9, s)) if dtype == "int32" else (lambda s: rng.standard_normal(s))
    x = mx.array(gen(shape).astype(np.float32)).astype(getattr(mx, dtype))
    y = mx.array(gen(shape).astype(np.float32)).astype(getattr(mx, dtype))
    cases = {
        "sum all": lambda x, y: mx.sum(x * y + x),
        "sum last": lambda x, y: mx.sum(mx.abs(x - y) * 2, axis=-1),
        "max last two": lambda x, y: mx.max(x * y - y, axis=(-2, -1)) if x.ndim == 3 else mx.max(x * y, axis=-1),
        "min all keepdims": lambda x, y: mx.min(mx.maximum(x, y) * 3, keepdims=True),
        "mean of squares": lambda x, y: mx.mean(mx.square(x - y)),
        "one op then sum": lambda x, y: mx.sum(x * y, axis=-1),
        "leading axis (not fused)": lambda x, y: mx.sum(x * y + 1, axis=0),
    }
    if dtype != "int32":
        cases["prod last"] = lambda x, y: mx.prod(mx.tanh(x * 0.1) + 1.0, axis=-1)
    for name, f in cases.items():
        got, want = mx.compile(f)(x, y), f(x, y)
        try:
            same_bits(got, want)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None


def test_a_reduced_chain_runs_as_one_node():
    code = (
        "import numpy as np, alloy.core as mx\n"
        f"mx.set_default_device(mx.{DEVICE})\n"
        "x = mx.array(np.linspace(-1, 1, 4096, dtype=np.float32).reshape(64, 64))\n"
        "y = mx.array(np.linspace(2, -3, 4096, dtype=np.float32).reshape(64, 64))\n"
        "f = mx.compile(lambda x, y: mx.sum(mx.square(x - y) * 0.5, axis=-1))\n"
        "mx.eval(f(x, y))\n")
    rows = profiled_primitives(code)
    assert rows.get("Compiled") == 1, rows
    for op in ("Sum", "Square", "Subtract", "Multiply"):
        assert op not in rows, rows

"""Two corners of mlx.core real code reaches, against real MLX:

- arithmetic on bool arrays, which MLX computes in bool (a - b of two masks is
  their difference as a mask, floor/sign/square of a mask is the mask);
- 0-d integer arrays wherever an int is asked for (a pad width, a shift, an
  axis, a shape entry), since MLX arrays convert through `__index__`;
- a Python bool as the whole index of an assignment (`a[cond] = v`).
"""
import operator

import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import random_array, same, same_error


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "power", "maximum", "minimum"])
def test_bool_binary_arithmetic(rng, name):
    a, b = random_array(rng, (5, 7), "bool"), random_array(rng, (7,), "bool")
    same(name, a, b)
    same(name, a, True)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "divmod"])
def test_bool_division_by_true(rng, name):
    # Division by false is undefined in MLX (its floor_divide and divmod give
    # different answers), so the divisors are true here.
    a = random_array(rng, (4, 6), "bool")
    same(name, a, np.ones((6,), bool))


def test_bool_operators(rng):
    a, b = random_array(rng, (3, 8), "bool"), random_array(rng, (3, 8), "bool")
    same(lambda m, x, y: x - y, a, b)
    same(lambda m, x, y: x ** y, a, b)
    same(lambda m, x, y: x * y + x, a, b)
    same(lambda m, x, y: x // m.array(True), a, b)


def test_bool_division_by_false_is_false():
    a = mx.array([True, False])
    assert mx.floor_divide(a, mx.array(False)).tolist() == [False, False]
    assert mx.remainder(a, False).tolist() == [False, False]


def test_bool_mixed_with_numbers_promotes(rng):
    a = random_array(rng, (9,), "bool")
    same("subtract", a, random_array(rng, (9,), "int32"))
    same("power", random_array(rng, (9,), "float32"), a)
    same("subtract", a, 2)
    same("floor_divide", a, random_array(rng, (9,), "float32", 0.5, 2.0))


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "sign", "square", "abs"])
def test_bool_unary_keeps_the_mask(rng, name):
    same(name, random_array(rng, (4, 5), "bool"))


def test_bool_shape_errors_name_the_op():
    a, b = np.zeros((2, 3), bool), np.zeros((4,), bool)
    for name in ["subtract", "power", "remainder", "floor_divide"]:
        e = same_error(name, a, b)
        assert name in str(e)
    same_error("negative", np.zeros((2,), bool))


def test_index_protocol():
    assert operator.index(mx.array(3)) == 3
    assert operator.index(mx.array(-2, dtype=mx.int64)) == -2
    assert operator.index(mx.array(7, dtype=mx.uint8)) == 7
    assert [10, 11, 12][mx.array(1)] == 11
    for bad in [mx.array(2.0), mx.array(True), mx.array([2])]:
        with pytest.raises(TypeError, match="0-dimensional integer"):
            operator.index(bad)


def _i(v):
    return np.array(v, dtype=np.int32)


INT_ARGUMENT_CASES = {
    "pad width": lambda m, x: m.pad(x, m.array(1)),
    "pad pair": lambda m, x: m.pad(x, (m.array(1), m.array(2))),
    "pad per axis": lambda m, x: m.pad(x, [(m.array(1), 0), (0, 1)]),
    "roll shift": lambda m, x: m.roll(x, m.array(1)),
    "roll shift on an axis": lambda m, x: m.roll(x, m.array(2), axis=1),
    "roll shifts": lambda m, x: m.roll(x, (m.array(1), 2), axis=(0, 1)),
    "tile reps": lambda m, x: m.tile(x, m.array(2)),
    "tile reps list": lambda m, x: m.tile(x, [m.array(2), 1]),
    "sum axis": lambda m, x: m.sum(x, axis=m.array(0)),
    "reshape entry": lambda m, x: m.reshape(x, (m.array(3), 8)),
    "zeros shape entry": lambda m, x: m.zeros((m.array(3), 2)),
    "expand_dims axis": lambda m, x: m.expand_dims(x, m.array(0)),
    "split sections": lambda m, x: m.split(x, m.array(2), axis=1)[1],
    "take axis": lambda m, x: m.take(x, m.array([0]), axis=m.array(0)),
    "moveaxis": lambda m, x: m.moveaxis(x, m.array(0), 1),
    "swapaxes": lambda m, x: m.swapaxes(x, m.array(0), 1),
    "repeat count": lambda m, x: m.repeat(x, m.array(2), axis=0),
    "topk k": lambda m, x: m.topk(x, m.array(2)),
    "eye n": lambda m, x: m.eye(m.array(3)),
    "tri n": lambda m, x: m.tri(m.array(3)),
    "triu k": lambda m, x: m.triu(x, m.array(1)),
    "diag k": lambda m, x: m.diag(x, m.array(1)),
    "broadcast_to entry": lambda m, x: m.broadcast_to(x, (m.array(2), 6, 4)),
    "flatten start": lambda m, x: m.flatten(x, m.array(0)),
    "index": lambda m, x: x[m.array(1)],
    "argmax axis": lambda m, x: m.argmax(x, axis=m.array(1)),
    "cumsum axis": lambda m, x: m.cumsum(x, axis=m.array(0)),
    "sort axis": lambda m, x: m.sort(x, axis=m.array(0)),
    "concatenate axis": lambda m, x: m.concatenate([x, x], axis=m.array(1)),
    "stack axis": lambda m, x: m.stack([x, x], axis=m.array(0)),
    # (only the kth element of a partition is defined)
    "partition kth": lambda m, x: m.partition(x, m.array(1))[:, 1],
    "linspace num": lambda m, x: m.linspace(0, 1, m.array(5)),
    "softmax axis": lambda m, x: m.softmax(x.astype(m.float32), axis=m.array(0)),
}


@pytest.mark.parametrize("case", sorted(INT_ARGUMENT_CASES))
def test_zero_d_int_arrays_as_ints(rng, case):
    same(INT_ARGUMENT_CASES[case], random_array(rng, (6, 4), "int32"))


def test_non_integer_arrays_are_not_ints(rng):
    x = random_array(rng, (3, 4), "float32")
    same_error(lambda m, a: m.roll(a, m.array(1.0)), x)
    same_error(lambda m, a: m.sum(a, axis=m.array(0.0)), x)


NOT_AN_INT_CASES = {
    "sum axis of a 0-d float array": lambda m, x: m.sum(x, axis=m.array(0.5)),
    "sum axis str": lambda m, x: m.sum(x, axis="a"),
    "sum axis float": lambda m, x: m.sum(x, axis=1.0),
    "transpose float axes": lambda m, x: m.transpose(x, (1.0, 0)),
    "reshape float entry": lambda m, x: m.reshape(x, (3.0, 8)),
    "expand_dims float": lambda m, x: m.expand_dims(x, 0.0),
    "roll float shift": lambda m, x: m.roll(x, 1.5),
    "tile float": lambda m, x: m.tile(x, 2.0),
    "pad float": lambda m, x: m.pad(x, 1.0),
    "split float": lambda m, x: m.split(x, 2.0),
    "concatenate float axis": lambda m, x: m.concatenate([x, x], axis=0.0),
    "softmax str axis": lambda m, x: m.softmax(x.astype(m.float32), axis="x"),
    "topk float k": lambda m, x: m.topk(x, 1.0),
}


@pytest.mark.parametrize("case", sorted(NOT_AN_INT_CASES))
def test_what_is_not_an_int_is_a_type_error(rng, case):
    e = same_error(NOT_AN_INT_CASES[case], random_array(rng, (6, 4), "int32"))
    assert isinstance(e, TypeError)


TAKE_NOTHING_CASES = {
    "take from an empty array": lambda m, i: m.take(m.zeros((0,)), i),
    "take along an empty axis": lambda m, i: m.take(m.zeros((0, 3)), i, axis=0),
    "take nothing from a full array": lambda m, i: m.take(m.ones((2, 3)), i, axis=1),
    "take 2-d indices from an empty array": lambda m, i: m.take(m.zeros((0,)), i.reshape(2, 0)),
    "take_along_axis of an empty axis": lambda m, i: m.take_along_axis(m.zeros((0, 3)), i.reshape(0, 3), axis=0),
    "index an empty array": lambda m, i: m.zeros((0, 4))[i],
}


@pytest.mark.parametrize("case", sorted(TAKE_NOTHING_CASES))
def test_taking_nothing_from_empty_arrays(case):
    same(TAKE_NOTHING_CASES[case], np.zeros((0,), np.int32))


def test_taking_something_from_an_empty_axis_is_an_error():
    same_error(lambda m, i: m.take(m.zeros((0, 3)), i, axis=0), np.array([0], np.int32))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"])
def test_bitwise_ops_refuse_floats_with_mlxs_error_type(rng, name):
    e = same_error(name, random_array(rng, (3,), "float32"), random_array(rng, (3,), "int32"))
    assert isinstance(e, RuntimeError) and name in str(e)


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift])
def test_bitwise_operators_refuse_floats_with_mlxs_error_type(rng, op):
    # The operators check before the op is made and raise ValueError in MLX
    # (its functions, above, RuntimeError from the op).
    ints, floats = random_array(rng, (3,), "int32"), random_array(rng, (3,), "float32")
    e = same_error(lambda m, a: op(a, 1.5), ints)
    assert isinstance(e, ValueError) and "Floating point types not allowed" in str(e), e
    same_error(lambda m, a, b: op(a, b), floats, floats)
    same_error(lambda m, a, b: op(b, a), ints, floats)
    same(lambda m, a, b: op(a, b), ints, np.abs(ints) % 5)


@pytest.mark.parametrize("array_dtype", ["int8", "uint32", "float16", "bfloat16", "float32"])
@pytest.mark.parametrize("other", ["np_int64", "np_float32", "np_float64", "np_bool", "np_0d_float", "np_1d_int",
                                   "np_1d_float"])
def test_numpy_operands_take_the_arrays_dtype_as_in_mlx(rng, array_dtype, other):
    # MLX converts a numpy operand beside an array to the array's dtype
    # (np.float32(2) * float16 array is float16; np.array([2.7]) + int8 is
    # int8, truncated); Alloy promoted them as arrays of their own dtype.
    x = random_array(rng, (4,), array_dtype)
    value = {"np_int64": np.int64(rng.integers(1, 9)), "np_float32": np.float32(rng.uniform(0.5, 3)),
             "np_float64": np.float64(rng.uniform(0.5, 3)), "np_bool": np.bool_(True),
             "np_0d_float": np.array(rng.uniform(0.5, 3)), "np_1d_int": rng.integers(1, 9, 4),
             "np_1d_float": rng.uniform(0.5, 3, 4)}[other]
    # Operators with the array on the left (on the right, numpy's own
    # operator runs first), and the functions both ways round.
    for op in (operator.add, operator.mul, operator.sub):
        same(lambda m, a: op(a, value), x)
    for name in ("add", "multiply", "subtract", "maximum"):
        same(lambda m, a: getattr(m, name)(a, value), x)
        same(lambda m, a: getattr(m, name)(value, a), x)
    same(lambda m, a: m.where(a > 0, a, value), x)
    # No array among the operands: each keeps its own dtype.
    same(lambda m: m.add(np.ones(2, np.float16), 2.5))


def set_with_bool(flag, value):
    def run(m, a):
        a = m.array(a)
        a[flag] = value(m) if callable(value) else value
        return a
    return run


@pytest.mark.parametrize("flag", [True, False])
def test_assigning_through_a_python_bool_sets_all_or_nothing(rng, flag):
    x = random_array(rng, (2, 3), "float32")
    same(set_with_bool(flag, 5.0), x)
    row = random_array(rng, (3,), "float32")
    same(set_with_bool(flag, lambda m: m.array(row)), x)
    same(set_with_bool(flag, lambda m: m.ones((1, 2, 3))), x)
    same_error(set_with_bool(flag, lambda m: m.ones((4,))), x)

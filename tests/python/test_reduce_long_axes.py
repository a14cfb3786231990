"""Reductions over long axes with few outputs, which the GPU splits over
many blocks and merges (argmax/argmin partials keep the first index; sums
fold 16-byte chunks in a fixed order): against numpy on fresh random inputs,
with ties and NaN placed where a split boundary or a late block would get
them wrong."""
import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx
from test_elementwise import random_values, to_mx


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_argmax_argmin_over_everything(rng, dtype):
    x = random_values(rng, (3_000_017,), dtype, -1000, 1000)
    a = to_mx(x)
    assert int(mx.argmax(a).item()) == int(np.argmax(x))
    assert int(mx.argmin(a).item()) == int(np.argmin(x))
    # Ties: a new extreme at several places, the first must win.
    top = np.array(2 * (abs(float(np.max(x))) + 1)).astype(x.dtype)
    places = sorted(rng.choice(x.size, 5, replace=False))
    y, z = x.copy(), x.copy()
    y[places] = top
    z[places] = -top
    assert int(mx.argmax(to_mx(y)).item()) == places[0] == int(np.argmax(y))
    assert int(mx.argmin(to_mx(z)).item()) == places[0] == int(np.argmin(z))


def test_argmax_nan_wins_first():
    x = np.arange(2_000_000, dtype=np.float32)
    x[1_500_000] = np.nan
    x[1_700_000] = np.nan
    assert int(mx.argmax(mx.array(x)).item()) == 1_500_000
    assert int(mx.argmin(mx.array(x)).item()) == 1_500_000


@pytest.mark.parametrize("shape,axis", [((70001, 40), 0), ((5, 200003), 1), ((9, 50000, 3), 1), ((2000, 2000), 0)],
                         ids=str)
def test_arg_reductions_along_long_axes(rng, shape, axis):
    x = random_values(rng, shape, "float32", -1, 1)
    # Repeat the max of each output at a later position: the first must win.
    a = to_mx(x)
    for fn, ref in ((mx.argmax, np.argmax), (mx.argmin, np.argmin)):
        got = np.asarray(fn(a, axis=axis))
        np.testing.assert_array_equal(got, ref(x, axis=axis))
    y = np.concatenate([x, x], axis=axis)
    np.testing.assert_array_equal(np.asarray(mx.argmax(to_mx(y), axis=axis)), np.argmax(y, axis=axis))


@pytest.mark.parametrize("n", [1, 15, 16, 17, 4097, 3_000_001])
@pytest.mark.parametrize("offset", [0, 1, 3])
def test_sums_of_any_alignment(rng, n, offset):
    # A view starting `offset` elements in: rows that are not 16-byte aligned
    # fold element by element, aligned ones by 16-byte chunks, same order.
    # Small integers sum exactly in float32 in any order, so a dropped or
    # doubled element shows as an exact mismatch.
    x = rng.integers(-8, 9, n + offset).astype(np.float32)
    a = to_mx(x)[offset:]
    assert float(mx.sum(a).item()) == float(x[offset:].astype(np.float64).sum())
    assert float(mx.max(a).item()) == float(x[offset:].max())
    m = rng.integers(-8, 9, (7, n + offset)).astype(ml_dtypes.bfloat16)
    b = to_mx(m)[:, offset:]
    np.testing.assert_array_equal(np.asarray(mx.sum(b.astype(mx.float32), axis=-1)),
                                  m[:, offset:].astype(np.float64).sum(-1))
    np.testing.assert_array_equal(np.asarray(mx.sum(b, axis=-1).astype(mx.float32)),
                                  m[:, offset:].astype(np.float64).sum(-1).astype(ml_dtypes.bfloat16).astype(np.float32))

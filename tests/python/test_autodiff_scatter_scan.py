"""Autodiff of a.at[idx].multiply / .divide / .maximum / .minimum (Scatter with
prod, max, min) and of cumprod, cummax, cummin: VJPs and JVPs against central
finite differences in float64 (CPU) or float32 (GPU run), with repeated
indices and exact zeros; ties, where finite differences see only the average
of one-sided slopes, against a float64 numpy model of the rule.

Rules tested (see src/primitives/indexing.cpp and scan.cpp):
- scatter max/min: the original value and every update equal to the result
  share the derivative equally (JAX's rule; MLX gives each the whole of it).
- cummax/cummin: each output's derivative goes to the one input holding the
  running extreme, the latest in scan order among equal ones (MLX's rule).
- scatter prod and cumprod: exact products of the other factors, so exact
  zeros give finite, exact derivatives.
"""
import os

import numpy as np
import pytest

import alloy.core as mx

ON_GPU = os.environ.get("ALLOY_TEST_DEVICE", "cpu") == "gpu"
DT = mx.float32 if ON_GPU else mx.float64
NP_DT = np.float32 if ON_GPU else np.float64
EPS = 1e-2 if ON_GPU else 1e-6
TOL = 2e-2 if ON_GPU else 1e-6
# Finite differences need inputs further apart than this from any kink.
GAP = 0.1


def arr(x):
    return mx.array(np.asarray(x, dtype=NP_DT), dtype=DT)


def idx_arr(i):
    return mx.array(np.asarray(i, dtype=np.int32))


def host(a):
    return np.array(a).astype(np.float64)


def finite(y):
    """Outputs with the constant infinities of exclusive cummax/cummin at 0."""
    return np.where(np.isfinite(y), y, 0.0)


def fd_vjp(f, xs, cot, i):
    """d sum(cot * f(xs)) / d xs[i] by central differences."""
    x0 = [np.array(x, dtype=np.float64) for x in xs]
    g = np.zeros_like(x0[i])
    for pos in np.ndindex(x0[i].shape):
        vals = []
        for h in (EPS, -EPS):
            xh = [x.copy() for x in x0]
            xh[i][pos] += h
            vals.append(float((finite(host(f(*[arr(v) for v in xh]))) * cot).sum()))
        g[pos] = (vals[0] - vals[1]) / (2 * EPS)
    return g


def fd_jvp(f, xs, ts):
    """d f(xs + h ts) / dh at 0 by central differences."""
    plus = finite(host(f(*[arr(x + EPS * t) for x, t in zip(xs, ts)])))
    minus = finite(host(f(*[arr(x - EPS * t) for x, t in zip(xs, ts)])))
    return (plus - minus) / (2 * EPS)


def close(got, want):
    got = host(got)
    assert np.all(np.isfinite(got)), got
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


def check_against_finite_differences(rng, f, xs):
    """VJP (random cotangent) and JVP (random tangents) of f at xs."""
    out = f(*[arr(x) for x in xs])
    cot = rng.standard_normal(out.shape)
    _, vjps = mx.vjp(f, [arr(x) for x in xs], [arr(cot)])
    for i, g in enumerate(vjps):
        close(g, fd_vjp(f, xs, cot, i))
    ts = [rng.standard_normal(np.shape(x)) for x in xs]
    _, (jt,) = mx.jvp(f, [arr(x) for x in xs], [arr(t) for t in ts])
    close(jt, fd_jvp(f, xs, ts))


def spread(rng, shape, low=-2.0):
    """Values at least GAP apart (no ties, no kinks within the step)."""
    n = int(np.prod(shape))
    return (low + GAP * 2 * rng.permutation(n)).reshape(shape) + rng.uniform(0, GAP / 4)


# ---- scatter prod --------------------------------------------------------------

# Rows of a (5, 3) array hit by 6 update rows: repeated, negative and
# out-of-range (dropped) indices.
ROWS = {
    "unique": [4, 0, 2, 1, 3, -2],
    "repeated": [2, 0, 2, 4, 2, 0],
    "negative_and_dropped": [-1, 4, 7, -6, 1, -5],
}


@pytest.mark.parametrize("rows", sorted(ROWS))
@pytest.mark.parametrize("method", ["multiply", "divide"])
def test_scatter_prod_matches_finite_differences(rng, rows, method):
    idx = idx_arr(ROWS[rows])
    a = rng.uniform(-1.5, 1.5, (5, 3))
    u = rng.choice([-1, 1], (6, 3)) * rng.uniform(0.6, 1.4, (6, 3))
    f = lambda x, v: getattr(x.at[idx], method)(v)
    check_against_finite_differences(rng, f, [a, u])


@pytest.mark.parametrize("rows", sorted(ROWS))
@pytest.mark.parametrize("method", ["add", "subtract"])
def test_scatter_add_matches_finite_differences(rng, rows, method):
    idx = idx_arr(ROWS[rows])
    f = lambda x, v: getattr(x.at[idx], method)(v)
    check_against_finite_differences(rng, f, [rng.standard_normal((5, 3)), rng.standard_normal((6, 3))])


def test_scatter_set_with_negative_and_dropped_indices(rng):
    idx = idx_arr([4, 0, 9, -4, -9])  # distinct rows 4, 0, 1; two dropped

    def f(x, v):
        y = x * 1.0
        y[idx] = v
        return y

    check_against_finite_differences(rng, f, [rng.standard_normal((5, 3)), rng.standard_normal((5, 3))])


# Update rows (of 6, landing on rows [2, 0, 2, 4, 2, 0]) zeroed, and entries
# of a zeroed: one zero among three updates of a row, two zeros, a zero in a.
ZEROS = {
    "one_zero_update": ([0], []),
    "two_zero_updates_same_row": ([0, 4], []),
    "zero_updates_everywhere": ([0, 1, 2, 3, 4, 5], []),
    "zero_in_a": ([], [2, 4]),
    "zeros_in_both": ([2, 5], [0, 2]),
}


@pytest.mark.parametrize("case", sorted(ZEROS))
def test_scatter_multiply_with_exact_zeros(rng, case):
    zero_u_rows, zero_a_rows = ZEROS[case]
    idx = idx_arr(ROWS["repeated"])
    a = rng.uniform(-1.5, 1.5, (5, 3))
    u = rng.uniform(0.6, 1.4, (6, 3))
    u[zero_u_rows, 1:] = 0.0  # columns 1 and 2; column 0 keeps nonzeros
    a[zero_a_rows, ::2] = 0.0
    f = lambda x, v: x.at[idx].multiply(v)
    # The function is multilinear, so central differences are exact there.
    check_against_finite_differences(rng, f, [a, u])


def test_scatter_multiply_with_slice_and_two_index_arrays(rng):
    a = rng.uniform(-1.5, 1.5, (4, 5))
    u = rng.uniform(0.6, 1.4, (2, 3, 4))
    u[0, 1, 2] = 0.0
    i = idx_arr([[1, 3, 1], [3, 1, 1]])
    f = lambda x, v: x.at[i, 1:].multiply(v)
    check_against_finite_differences(rng, f, [a, u])


# ---- scatter max / min ---------------------------------------------------------

@pytest.mark.parametrize("rows", sorted(ROWS))
@pytest.mark.parametrize("method", ["maximum", "minimum"])
def test_scatter_extreme_matches_finite_differences(rng, rows, method):
    idx = idx_arr(ROWS[rows])
    vals = spread(rng, (11, 3))
    a, u = vals[:5], vals[5:]
    f = lambda x, v: getattr(x.at[idx], method)(v)
    check_against_finite_differences(rng, f, [a, u])


def scatter_extreme_model(a, rows, u, method, cot, ta, tu):
    """(grad a, grad u, jvp) of a.at[rows].method(u) for (n, m) a and (k, m) u:
    the original value and each update equal to the result share equally."""
    pick = max if method == "maximum" else min
    n = a.shape[0]
    ga, gu, jt = np.zeros_like(a), np.zeros_like(u), np.zeros_like(a)
    for p in range(n):
        for col in range(a.shape[1]):
            hits = [k for k, r in enumerate(rows) if (r + n if r < 0 else r) == p]
            result = pick([a[p, col]] + [u[k, col] for k in hits])
            winners = [k for k in hits if u[k, col] == result]
            a_wins = a[p, col] == result
            share = 1.0 / (len(winners) + a_wins)
            ga[p, col] = cot[p, col] * share * a_wins
            jt[p, col] = share * (ta[p, col] * a_wins + sum(tu[k, col] for k in winners))
            for k in winners:
                gu[k, col] = cot[p, col] * share
    return ga, gu, jt


@pytest.mark.parametrize("method", ["maximum", "minimum"])
def test_scatter_extreme_ties_share_equally(rng, method):
    rows = [2, 0, 2, 4, 2, 0, 1, 7]
    # Quarter steps are exact in float32, so ties survive the GPU run.
    a = rng.integers(-8, 9, (5, 4)) / 4.0
    u = rng.integers(-8, 9, (8, 4)) / 4.0
    sign = 1 if method == "maximum" else -1
    u[0, 0] = u[2, 0] = u[4, 0] = a[2, 0] + sign * 1.0  # three updates tie, a loses
    u[0, 1] = u[2, 1] = a[2, 1]                         # a and two updates tie
    u[4, 1] = a[2, 1] - sign * 1.0
    u[1, 2] = a[0, 2]                                   # a and one update tie
    u[5, 2] = a[0, 2] - sign * 0.5
    u[6, 3] = a[1, 3]                                   # unique index, tie with a
    u[3, :] = a[4, :] - sign * 1.0                      # a wins alone
    u[7, :] = a[4, :]  # dropped (index 7), though equal to where a gather clamps it
    idx = idx_arr(rows)
    cot = rng.standard_normal(a.shape)
    ta, tu = rng.standard_normal(a.shape), rng.standard_normal(u.shape)
    f = lambda x, v: getattr(x.at[idx], method)(v)
    _, (ga, gu) = mx.vjp(f, [arr(a), arr(u)], [arr(cot)])
    _, (jt,) = mx.jvp(f, [arr(a), arr(u)], [arr(ta), arr(tu)])
    want_ga, want_gu, want_jt = scatter_extreme_model(a, rows, u, method, cot, ta, tu)
    close(ga, want_ga)
    close(gu, want_gu)
    close(jt, want_jt)
    assert abs(host(ga)[2, 1] - cot[2, 1] / 3) < TOL  # the three-way tie, spelled out


# ---- cumprod -------------------------------------------------------------------

SCAN_FLAGS = [(False, True), (True, True), (False, False), (True, False)]  # (reverse, inclusive)
SCAN_IDS = ["forward", "reverse", "forward_exclusive", "reverse_exclusive"]

# Positions (along the scanned axis of length 6) set to exactly zero.
CUMPROD_ZEROS = {
    "none": [],
    "one": [2],
    "first": [0],
    "last": [5],
    "two": [1, 4],
    "adjacent": [2, 3],
    "all": [0, 1, 2, 3, 4, 5],
}


@pytest.mark.parametrize("zeros", sorted(CUMPROD_ZEROS))
@pytest.mark.parametrize("flags", SCAN_FLAGS, ids=SCAN_IDS)
@pytest.mark.parametrize("axis", [1, 0])
def test_cumprod_matches_finite_differences_with_zeros(rng, zeros, flags, axis):
    reverse, inclusive = flags
    x = rng.choice([-1, 1], (3, 6)) * rng.uniform(0.5, 1.5, (3, 6))
    x[1, CUMPROD_ZEROS[zeros]] = 0.0   # row 1 has the zeros, rows 0 and 2 none
    x[2, 3] = 0.0 if zeros != "none" else x[2, 3]
    if axis == 0:
        x = np.ascontiguousarray(x.T)
    f = lambda a: mx.cumprod(a, axis=axis, reverse=reverse, inclusive=inclusive)
    check_against_finite_differences(rng, f, [x])


# ---- cummax / cummin -----------------------------------------------------------

@pytest.mark.parametrize("flags", SCAN_FLAGS, ids=SCAN_IDS)
@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("axis", [1, 0])
def test_cumextreme_matches_finite_differences(rng, flags, op, axis):
    reverse, inclusive = flags
    x = spread(rng, (4, 7))
    f = lambda a: getattr(mx, op)(a, axis=axis, reverse=reverse, inclusive=inclusive)
    check_against_finite_differences(rng, f, [x])


def cumextreme_owner(line, op, reverse, inclusive):
    """Per output position, the input index it reads (None for an exclusive
    scan's first), the latest in scan order among equal values."""
    n = len(line)
    order = list(range(n))[::-1] if reverse else list(range(n))
    better = (lambda v, b: v >= b) if op == "cummax" else (lambda v, b: v <= b)
    owner, best, inclusive_owner = [None] * n, None, {}
    for j in order:
        if best is None or better(line[j], line[best]):
            best = j
        inclusive_owner[j] = best
    for step, j in enumerate(order):
        if inclusive:
            owner[j] = inclusive_owner[j]
        elif step > 0:
            owner[j] = inclusive_owner[order[step - 1]]
    return owner


@pytest.mark.parametrize("flags", SCAN_FLAGS, ids=SCAN_IDS)
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cumextreme_ties_go_to_the_latest_in_scan_order(rng, flags, op):
    reverse, inclusive = flags
    x = rng.integers(-2, 3, (5, 8)) / 2.0  # few distinct values: many ties
    x[0] = [1, 1, 1, 1, 1, 1, 1, 1]
    x[1] = [0, 2, 1, 2, 2, 0, 2, 1] if op == "cummax" else [0, -2, 1, -2, -2, 0, -2, 1]
    cot = rng.standard_normal(x.shape)
    t = rng.standard_normal(x.shape)
    f = lambda a: getattr(mx, op)(a, axis=1, reverse=reverse, inclusive=inclusive)
    _, (g,) = mx.vjp(f, [arr(x)], [arr(cot)])
    _, (jt,) = mx.jvp(f, [arr(x)], [arr(t)])
    want_g, want_jt = np.zeros_like(x), np.zeros_like(x)
    for r in range(x.shape[0]):
        for j, o in enumerate(cumextreme_owner(x[r], op, reverse, inclusive)):
            if o is not None:
                want_g[r, o] += cot[r, j]
                want_jt[r, j] = t[r, o]
    close(g, want_g)
    close(jt, want_jt)
    # A constant row sends every inclusive output to its own position.
    if inclusive:
        close(host(g)[0], cot[0])


# ---- grad of a loss through each -----------------------------------------------

# Each body maps x (4, 4) and v (4, 4), drawn together with no ties, to (4, 4).
LOSSES = {
    "scatter_multiply": lambda x, v: x.at[idx_arr([1, 3, 1, 0])].multiply(v * 0.5 + 1.0),
    "scatter_divide": lambda x, v: x.at[idx_arr([2, 2, 0, 3])].divide(v + 3.0),
    "scatter_maximum": lambda x, v: x.at[idx_arr([1, 3, 1, 0])].maximum(v),
    "scatter_minimum": lambda x, v: x.at[idx_arr([2, 2, 0, -1])].minimum(v),
    "cumprod": lambda x, v: mx.cumprod(x * v, axis=1, reverse=True),
    "cummax": lambda x, v: mx.cummax(x, axis=0) * mx.cumsum(v, axis=0),
    "cummin": lambda x, v: mx.cummin(x, axis=1, inclusive=False) + v,
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_grad_of_loss_through_scatter_and_scans(rng, name):
    body = LOSSES[name]
    w = rng.standard_normal((4, 4))
    # tanh of an exclusive scan's infinite first entry is a constant +-1.
    loss = lambda x, v: mx.sum(mx.tanh(body(x, v)) * arr(w))
    vals = spread(rng, (8, 4), low=-1.6) / 2.0
    x, v = vals[:4], vals[4:]
    if name == "cumprod":
        x[1, 2] = 0.0  # an exact zero in the running product
    gx, gv = mx.grad(loss, argnums=(0, 1))(arr(x), arr(v))
    close(gx, fd_vjp(loss, [x, v], np.ones(()), 0))
    close(gv, fd_vjp(loss, [x, v], np.ones(()), 1))

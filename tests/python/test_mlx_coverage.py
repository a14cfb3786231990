"""Which public names of real MLX (mlx.core and its submodules, mx.array's
methods, mlx.nn, mlx.optimizers, mlx.utils) Alloy does not have yet.

NOT_YET lists each missing name with the reason; the test fails when a name
is missing that is not listed, and also when a listed name has arrived (so
the list, which the README repeats, stays true). Run this file with -s to
print the coverage figures.
"""
import inspect
import types

import alloy.core as ax
import alloy.nn
import alloy.optimizers
import alloy.utils
import mlx.core as mlx_core
import mlx.nn
import mlx.optimizers
import mlx.utils

NOT_YET = {
    "core": {},
    "core.linalg": {},
    "core.fft": {},
    "core.random": {},
    "core.fast": {},
    "core.array": {},
    "nn": {},
    "nn.losses": {},
    "nn.init": {},
    "optimizers": {},
    "utils": {},
}


def _public(module, own_prefix=None):
    """Public names of `module`; for Python packages, only what the package
    itself defines (not typing names or modules it imports)."""
    names = set()
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if own_prefix is not None:
            if isinstance(obj, types.ModuleType):
                continue
            origin = getattr(obj, "__module__", None) or ""
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not origin.startswith(own_prefix):
                continue
        names.add(name)
    return names


PAIRS = {
    "core": (mlx_core, ax, None),
    **{f"core.{s}": (getattr(mlx_core, s), getattr(ax, s, None), None)
       for s in ["linalg", "fft", "random", "fast", "metal", "cuda", "distributed"]},
    "core.array": (mlx_core.array, ax.array, None),
    "nn": (mlx.nn, alloy.nn, "mlx.nn"),
    "nn.losses": (mlx.nn.losses, alloy.nn.losses, "mlx.nn"),
    "nn.init": (mlx.nn.init, alloy.nn.init, "mlx.nn"),
    "optimizers": (mlx.optimizers, alloy.optimizers, "mlx.optimizers"),
    "utils": (mlx.utils, alloy.utils, "mlx.utils"),
}


def missing_names():
    out = {}
    for key, (theirs, ours, prefix) in PAIRS.items():
        wanted = _public(theirs, prefix)
        have = {n for n in dir(ours) if not n.startswith("_")} if ours is not None else set()
        out[key] = sorted(wanted - have), len(wanted)
    return out


def test_missing_names_are_exactly_the_listed_ones():
    report = missing_names()
    problems = []
    for key, (missing, total) in report.items():
        listed = NOT_YET.get(key, {})
        print(f"{key}: {total - len(missing)}/{total} names present; missing {len(missing)}")
        unlisted = sorted(set(missing) - set(listed))
        arrived = sorted(set(listed) - set(missing))
        if unlisted:
            problems.append(f"{key}: missing and not listed in NOT_YET: {unlisted}")
        if arrived:
            problems.append(f"{key}: now present, remove from NOT_YET: {arrived}")
    assert not problems, "\n".join(problems)


def test_every_listed_name_exists_in_mlx():
    # A reason for a name MLX does not have would be a stale entry.
    for key, listed in NOT_YET.items():
        theirs, _, prefix = PAIRS[key]
        assert set(listed) <= _public(theirs, prefix), key

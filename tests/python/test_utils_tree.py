"""alloy.utils tree functions against mlx.utils on the same nested trees
(leaves are Python numbers, so both frameworks see identical input)."""
import pytest

import alloy.utils as au
import mlx.utils as mu


def random_tree(rng, depth=3):
    """A random nest of dicts, lists and tuples with integer leaves."""
    if depth == 0 or rng.random() < 0.2:
        return int(rng.integers(-100, 100))
    kind = rng.integers(3)
    n = int(rng.integers(1, 4))
    children = [random_tree(rng, depth - 1) for _ in range(n)]
    if kind == 0:
        return {f"k{i}": c for i, c in enumerate(children)}
    return children if kind == 1 else tuple(children)


def test_unflatten_makes_a_list_only_of_integer_keys():
    # A level with one non-integer key is a dict (Alloy read the first key
    # and then failed on int("x")); "1" and "01" are two keys, so a dict too.
    for flat in ([("a.0", 1), ("a.x", 2)], [("a.x", 1), ("a.0", 2)], [("a.1", 1), ("a.01", 2)],
                 [("a.2", 1), ("a.0", 2)], [("0", 1), ("b", 2)]):
        assert au.tree_unflatten(flat) == mu.tree_unflatten(flat), flat


@pytest.mark.parametrize("trial", range(4))
def test_flatten_unflatten_map_reduce(rng, trial):
    tree = {"root": random_tree(rng), "other": [random_tree(rng), 3]}
    flat = au.tree_flatten(tree)
    assert flat == mu.tree_flatten(tree)
    assert au.tree_flatten(tree, destination={}) == mu.tree_flatten(tree, destination={})
    # Tuples come back as lists: the dotted keys only record positions.
    assert au.tree_unflatten(flat) == mu.tree_unflatten(flat)
    assert au.tree_unflatten(dict(flat)) == mu.tree_unflatten(dict(flat))
    assert au.tree_map(lambda x: x * 2 + 1, tree) == mu.tree_map(lambda x: x * 2 + 1, tree)
    assert au.tree_map(lambda a, b: a - b, tree, tree) == mu.tree_map(lambda a, b: a - b, tree, tree)
    assert au.tree_reduce(lambda a, b: a * 3 + b, tree) == mu.tree_reduce(lambda a, b: a * 3 + b, tree)
    assert au.tree_reduce(lambda a, b: a + b, tree, 7) == mu.tree_reduce(lambda a, b: a + b, tree, 7)
    f = lambda path, x: (path, x)
    assert au.tree_map_with_path(f, tree) == mu.tree_map_with_path(f, tree)


def test_is_leaf_and_prefix():
    tree = {"a": [1, [2, 3]], "b": {"c": (4, 5)}}
    leaf = lambda x: isinstance(x, (list, tuple))
    assert au.tree_flatten(tree, is_leaf=leaf) == mu.tree_flatten(tree, is_leaf=leaf)
    assert au.tree_map(len, tree, is_leaf=leaf) == mu.tree_map(len, tree, is_leaf=leaf)
    assert au.tree_flatten(tree, prefix=".p") == mu.tree_flatten(tree, prefix=".p")
    assert au.tree_reduce(lambda a, b: a + len(b), tree, 0, is_leaf=leaf) == \
        mu.tree_reduce(lambda a, b: a + len(b), tree, 0, is_leaf=leaf)


def test_unflatten_fills_list_gaps():
    flat = [("x.0", 1), ("x.3", 2), ("y", 5), ("x.1.z", 4)]
    assert au.tree_unflatten(flat) == mu.tree_unflatten(flat)
    assert au.tree_unflatten([("", 9)]) == mu.tree_unflatten([("", 9)])


def test_merge():
    a = {"x": 1, "l": [1, {}], "d": {"p": 2}}
    b = {"y": 2, "l": [{}, 3], "d": {"q": 4}}
    assert au.tree_merge(a, b) == mu.tree_merge(a, b)
    assert au.tree_merge({"x": 1}, {"x": 2}, lambda p, q: p + q) == mu.tree_merge({"x": 1}, {"x": 2}, lambda p, q: p + q)
    with pytest.raises(ValueError):
        au.tree_merge({"x": 1}, {"x": 2})
    with pytest.raises(ValueError):
        mu.tree_merge({"x": 1}, {"x": 2})
    with pytest.raises(ValueError):
        au.tree_flatten([1], destination=5)

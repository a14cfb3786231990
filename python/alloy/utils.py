"""Trees of arrays: nested lists, tuples and dicts, as ``mlx.utils`` handles them.

A tree's leaves are whatever is not a list, tuple or dict (or whatever
``is_leaf`` accepts). Flattened keys join the path with dots; list positions
are written as integers, which is how ``tree_unflatten`` knows to rebuild a
list.
"""
from collections import defaultdict


def tree_map(fn, tree, *rest, is_leaf=None):
    """Applies ``fn`` to the leaves of ``tree`` (and the matching nodes of
    each tree in ``rest``) and returns a tree of the same structure."""
    if is_leaf is not None and is_leaf(tree):
        return fn(tree, *rest)
    if isinstance(tree, (list, tuple)):
        children = [tree_map(fn, child, *(r[i] for r in rest), is_leaf=is_leaf) for i, child in enumerate(tree)]
        return type(tree)(children)
    if isinstance(tree, dict):
        return {k: tree_map(fn, child, *(r[k] for r in rest), is_leaf=is_leaf) for k, child in tree.items()}
    return fn(tree, *rest)


def tree_map_with_path(fn, tree, *rest, is_leaf=None, path=None):
    """Like ``tree_map`` but ``fn(path, leaf, *rest_leaves)`` also receives the
    dotted path of the leaf (``None`` for a bare leaf at the root)."""
    if is_leaf is not None and is_leaf(tree):
        return fn(path, tree, *rest)

    def sub(key):
        return key if path is None else f"{path}.{key}"

    if isinstance(tree, (list, tuple)):
        children = [
            tree_map_with_path(fn, child, *(r[i] for r in rest), is_leaf=is_leaf, path=sub(i))
            for i, child in enumerate(tree)
        ]
        return type(tree)(children)
    if isinstance(tree, dict):
        return {
            k: tree_map_with_path(fn, child, *(r[k] for r in rest), is_leaf=is_leaf, path=sub(k))
            for k, child in tree.items()
        }
    return fn(path, tree, *rest)


def tree_flatten(tree, prefix="", is_leaf=None, destination=None):
    """The leaves of ``tree`` as ``(dotted_key, leaf)`` pairs in traversal
    order; into ``destination`` when given (a list, or a dict keyed by path)."""
    if destination is None:
        destination = []
    if isinstance(destination, dict):
        def add(key, value):
            destination[key] = value
    elif isinstance(destination, list):
        def add(key, value):
            destination.append((key, value))
    else:
        raise ValueError("Destination should be either a list or a dictionary or None")

    def walk(node, path):
        if is_leaf is not None and is_leaf(node):
            add(path, node)
        elif isinstance(node, (list, tuple)):
            for i, child in enumerate(node):
                walk(child, f"{path}.{i}" if path else str(i))
        elif isinstance(node, dict):
            for k, child in node.items():
                walk(child, f"{path}.{k}" if path else str(k))
        else:
            add(path, node)

    walk(tree, prefix[1:] if prefix.startswith(".") else prefix)
    return destination


def tree_unflatten(tree):
    """Rebuilds the nested tree from ``(dotted_key, leaf)`` pairs (or a dict of
    them). A level whose keys are integers becomes a list; missing positions
    are filled with empty dicts so later positions keep their index."""
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    if not items:
        return {}

    groups = defaultdict(list)
    for key, value in items:
        head, _, tail = key.partition(".")
        groups[head].append((tail, value))

    # A list when every key of the level is an integer, and no two name the
    # same one ("1" and "01"); otherwise a dict, as MLX decides.
    try:
        indices = {int(head): head for head in groups}
    except ValueError:
        indices = {}
    if groups and len(indices) == len(groups):
        result = []
        for index, head in sorted(indices.items()):
            result.extend({} for _ in range(index - len(result)))
            result.append(tree_unflatten(groups[head]))
        return result
    return {head: tree_unflatten(children) for head, children in groups.items()}


def tree_reduce(fn, tree, initializer=None, is_leaf=None):
    """Folds ``fn(accumulator, leaf)`` over the leaves in traversal order; with
    no initializer the first leaf starts the accumulation."""
    sentinel = object()
    acc = sentinel if initializer is None else initializer

    def walk(node):
        nonlocal acc
        if (is_leaf is None or not is_leaf(node)) and isinstance(node, (list, tuple, dict)):
            for child in node.values() if isinstance(node, dict) else node:
                walk(child)
            return
        acc = node if acc is sentinel else fn(acc, node)

    walk(tree)
    # An empty tree with no initializer reduces to None, as in MLX.
    return None if acc is sentinel else acc


def tree_merge(tree_a, tree_b, merge_fn=None):
    """Merges two trees that do not both have a leaf at the same place, or
    combines such leaves with ``merge_fn(a, b)``. Empty nodes count as absent."""

    def empty(node):
        return isinstance(node, (list, tuple, dict)) and len(node) == 0

    if empty(tree_a) or tree_a is None:
        return tree_b
    if empty(tree_b) or tree_b is None:
        return tree_a
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        size = max(len(tree_a), len(tree_b))
        merged = [
            tree_merge(tree_a[i] if i < len(tree_a) else None, tree_b[i] if i < len(tree_b) else None, merge_fn)
            for i in range(size)
        ]
        return type(tree_a)(merged)
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        keys = list(tree_a) + [k for k in tree_b if k not in tree_a]
        return {k: tree_merge(tree_a.get(k), tree_b.get(k), merge_fn) for k in keys}
    if merge_fn is None:
        raise ValueError(
            "Trees contain elements at the same locations but no merge function was provided"
        )
    return merge_fn(tree_a, tree_b)

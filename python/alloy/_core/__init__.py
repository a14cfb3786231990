"""The parts of ``alloy.core`` written in Python.

The extension calls :func:`extend` once at import, handing itself over, so
these functions live under ``alloy.core`` exactly where MLX has them:
function transforms over Python callables (``compile``, ``checkpoint``,
``vmap``) and the stream context managers.
"""
from . import evaluation, streams, transforms


def extend(core):
    for part in (transforms, streams, evaluation):
        part.install(core)

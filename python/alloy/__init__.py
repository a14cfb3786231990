"""Alloy: MLX-compatible arrays whose Metal kernels run on NVIDIA GPUs and CPUs.

Use it as MLX: ``import alloy.core as mx``.
"""

import importlib.util as _importlib_util
import os as _os


def _mlx_include_dir():
    """The include directory of an installed mlx package, found without
    importing it (metal_kernel headers may #include MLX's kernel headers)."""
    try:
        spec = _importlib_util.find_spec("mlx")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        inc = _os.path.join(root, "include")
        if _os.path.isdir(_os.path.join(inc, "mlx", "backend", "metal", "kernels")):
            return inc
    return None


if "ALLOY_MLX_INCLUDE" not in _os.environ:
    _inc = _mlx_include_dir()
    if _inc:
        _os.environ["ALLOY_MLX_INCLUDE"] = _inc

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


def _nvidia_wheel_roots():
    """The sys.path folders holding NVIDIA's pip wheels (nvidia/cu13/lib,
    nvidia/cublas/lib ...), where the library looks for CUDA before
    CUDA_HOME and the toolkit's usual places."""
    import sys

    roots = []
    for entry in sys.path:
        if entry and _os.path.isdir(_os.path.join(entry, "nvidia")) and entry not in roots:
            roots.append(entry)
    return roots


if "ALLOY_PYTHON_SITE_DIRS" not in _os.environ:
    _roots = _nvidia_wheel_roots()
    if _roots:
        _os.environ["ALLOY_PYTHON_SITE_DIRS"] = ":".join(_roots)

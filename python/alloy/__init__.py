"""Alloy: MLX-compatible arrays whose Metal kernels run on NVIDIA GPUs and CPUs.

Use it as MLX: ``import alloy.core as mx``.
"""

import os as _os
import sys as _sys


def _mlx_include_dir():
    """The include directory of an installed mlx package, found without
    importing it (metal_kernel headers may #include MLX's kernel headers):
    the first sys.path folder whose mlx/ has them, as an import would find
    an installed wheel. (importlib.util.find_spec did this before; importing
    it took 2 of the 13 ms of `import alloy.core`, part of issue 17's cold
    start.) ALLOY_MLX_INCLUDE names another place."""
    for entry in _sys.path:
        inc = _os.path.join(entry or ".", "mlx", "include")
        if _os.path.isdir(_os.path.join(inc, "mlx", "backend", "metal", "kernels")):
            return inc
    return None


_installed_mlx_include = None
if "ALLOY_MLX_INCLUDE" not in _os.environ:
    _installed_mlx_include = _mlx_include_dir()
    if _installed_mlx_include:
        _os.environ["ALLOY_MLX_INCLUDE"] = _installed_mlx_include


def _offer_mlx_include(inc):
    """Code written for MLX reads MLX's kernel headers itself, at
    Path(mx.__file__).parent / "include" (mtplx, jang and mlx-vlm inline
    them into their kernels' headers). Alloy's mx.__file__ is alloy/core...so,
    so the package offers the same place: alloy/include, a link to the
    installed mlx package's headers, made at import where the package folder
    is writable (a read-only install goes without, as does
    ALLOY_MLX_INCLUDE_LINK=0). Every process using the install shares it, so
    one that exists and leads somewhere is left as it is (a process's own
    ALLOY_MLX_INCLUDE does not move it); a dangling one is mended."""
    link = _os.path.join(_os.path.dirname(__file__), "include")
    tmp = f"{link}.{_os.getpid()}.tmp"
    try:
        _os.symlink(inc, tmp)
        _os.replace(tmp, link)  # atomic: another process may be doing the same
    except OSError:
        try:
            _os.unlink(tmp)
        except OSError:
            pass


if _os.environ.get("ALLOY_MLX_INCLUDE_LINK", "1") != "0" and not _os.path.exists(
        _os.path.join(_os.path.dirname(__file__), "include")):
    _installed_mlx_include = _installed_mlx_include or _mlx_include_dir()
    if _installed_mlx_include:
        _offer_mlx_include(_installed_mlx_include)


def _nvidia_wheel_roots():
    """The sys.path folders holding NVIDIA's pip wheels (nvidia/cu13/lib,
    nvidia/cublas/lib ...), where the library looks for CUDA before
    CUDA_HOME and the toolkit's usual places."""
    roots = []
    for entry in _sys.path:
        if entry and _os.path.isdir(_os.path.join(entry, "nvidia")) and entry not in roots:
            roots.append(entry)
    return roots


if "ALLOY_PYTHON_SITE_DIRS" not in _os.environ:
    _roots = _nvidia_wheel_roots()
    if _roots:
        _os.environ["ALLOY_PYTHON_SITE_DIRS"] = ":".join(_roots)

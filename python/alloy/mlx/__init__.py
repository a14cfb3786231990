"""Alloy inside real MLX: ``import alloy.mlx`` and MLX's own
``mlx.core.fast.metal_kernel`` runs on Linux.

Importing this module calls :func:`install`, which

* replaces ``mlx.core.fast.metal_kernel`` with Alloy's, so a kernel's Metal
  body is translated to C++ on MLX's CPU backend and to CUDA on MLX's CUDA
  backend (``mlx[cuda13]``); its outputs are ordinary MLX arrays;
* makes the checks real code runs before it builds Metal kernels pass:
  ``mx.metal.is_available()`` returns True and ``mx.metal.device_info()``
  describes the device the kernels run on; on an MLX without a GPU backend,
  ``mx.default_device()`` returns the CPU device in a form that also answers
  ``== mx.gpu`` (it is still the CPU for everything it is passed to).

``install(metal_checks=False)``, or ``ALLOY_MLX_METAL_CHECKS=mlx`` in the
environment, keeps MLX's own answers to those checks; :func:`uninstall`
restores everything. Code that bound ``metal_kernel`` before the import
(``from mlx.core.fast import metal_kernel``) keeps MLX's.

The plugin is compiled against the MLX that was installed when Alloy was
built; importing it under another MLX raises ImportError naming both.
"""

import os as _os

import mlx.core as _mx

SUPPORTED_MLX = "0.32"  # the series this plugin is written against

_mlx_version = _mx.__version__
if not (_mlx_version == SUPPORTED_MLX or _mlx_version.startswith(SUPPORTED_MLX + ".")):
    raise ImportError(
        f"alloy.mlx supports MLX {SUPPORTED_MLX}.x; this Python has MLX {_mlx_version}. "
        f"Install it with: pip install 'mlx[cpu]=={SUPPORTED_MLX}.*' (or mlx[cuda13]), then rebuild Alloy."
    )

import alloy as _alloy  # noqa: E402  (finds CUDA's pip wheels for the JIT)

try:
    from . import _ext  # noqa: E402
except ImportError as e:  # not built (no MLX at build time), or built for another libmlx
    raise ImportError(
        "alloy.mlx is not built in this installation of Alloy (" + str(e) + "). Install MLX "
        f"(pip install 'mlx[cpu]=={SUPPORTED_MLX}.*'), then rebuild Alloy in that environment: "
        "pip install --no-build-isolation ."
    ) from None

_built_for = _ext.built_for_mlx_version()
if _built_for != _mlx_version.split(".dev")[0]:
    raise ImportError(
        f"alloy.mlx was built against MLX {_built_for}; this Python has MLX {_mlx_version}. "
        f"Rebuild Alloy with this MLX installed (pip install --no-build-isolation .), or pip install mlx=={_built_for}."
    )

metal_kernel = _ext.metal_kernel

_saved = {}


class _CpuDeviceAnsweringGpu(_mx.Device):
    """The CPU device, which also compares equal to ``mx.gpu``: real code
    checks ``mx.default_device() == mx.gpu`` before taking its Metal kernel
    path, and on an MLX without a GPU that path runs on the CPU."""

    def __eq__(self, other):
        if other == _mx.gpu or (isinstance(other, _mx.Device) and other.type == _mx.gpu):
            return True
        return _mx.Device.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = _mx.Device.__hash__


def _metal_device_info():
    """What mx.metal.device_info() reports on Apple GPUs, for the device the
    kernels run on here."""
    info = dict(_mx.device_info())
    total = info.get("memory_size")
    if not total:
        try:
            total = _os.sysconf("SC_PAGE_SIZE") * _os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError):
            total = 0
    info.setdefault("device_name", info.get("architecture", "cpu"))
    info.setdefault("architecture", "alloy")
    info.setdefault("memory_size", total)
    info.setdefault("max_buffer_length", total)
    info.setdefault("max_recommended_working_set_size", total)
    info.setdefault("resource_limit", 499000)
    return info


def _metal_is_available():
    return True


def _has_gpu_backend():
    try:
        return bool(_mx.cuda.is_available())
    except AttributeError:
        return False


def installed():
    """Whether mlx.core.fast.metal_kernel is Alloy's now."""
    return _mx.fast.metal_kernel is metal_kernel


def install(metal_checks=None):
    """Make mlx.core.fast.metal_kernel Alloy's. With ``metal_checks`` (the
    default, unless ALLOY_MLX_METAL_CHECKS=mlx), also answer real code's
    Metal checks so that its kernel path runs (see the module's doc)."""
    if metal_checks is None:
        metal_checks = _os.environ.get("ALLOY_MLX_METAL_CHECKS", "alloy").lower() != "mlx"
    uninstall()
    _saved["fast.metal_kernel"] = _mx.fast.metal_kernel
    _mx.fast.metal_kernel = metal_kernel
    if metal_checks:
        _saved["metal.is_available"] = _mx.metal.is_available
        _saved["metal.device_info"] = _mx.metal.device_info
        _mx.metal.is_available = _metal_is_available
        _mx.metal.device_info = _metal_device_info
        if not _has_gpu_backend():
            real_default_device = _mx.default_device
            _saved["default_device"] = real_default_device

            def default_device():
                d = real_default_device()
                return _CpuDeviceAnsweringGpu(d.type) if d.type == _mx.cpu else d

            default_device.__doc__ = real_default_device.__doc__
            _mx.default_device = default_device


def uninstall():
    """Restore MLX's own metal_kernel and Metal checks."""
    for name, value in _saved.items():
        module, _, attr = name.rpartition(".")
        setattr(getattr(_mx, module) if module else _mx, attr, value)
    _saved.clear()


install()

"""Run a program written for MLX on Alloy without editing its imports.

After ``install()``, ``import mlx.core as mx``, ``import mlx.nn as nn``,
``from mlx.utils import tree_flatten`` and every other ``mlx.*`` module name
give Alloy's module of the same path (``alloy.core``, ``alloy.nn``,
``alloy.utils``...). Three ways in:

- ``python -m alloy.as_mlx script.py [args]`` runs a script (or
  ``python -m alloy.as_mlx -m package.module [args]`` a module) this way;
- ``pytest -p alloy.as_mlx ...`` runs a test suite written for MLX this way;
- ``import alloy.as_mlx; alloy.as_mlx.install()`` before the program's first
  ``import mlx``.

Real MLX and Alloy-as-MLX cannot share a process: ``install()`` raises if
real MLX is already imported, and ``import mlx`` is Alloy's until
``uninstall()``. To keep MLX and run its Metal kernels on Linux, use
``import alloy.mlx`` (the plugin) instead.
"""
import importlib
import importlib.abc
import importlib.util
import runpy
import sys

_PREFIX, _TARGET = "mlx", "alloy"


def _alloy_name(name):
    return _TARGET + name[len(_PREFIX):]


def _is_mlx_name(name):
    return name == _PREFIX or name.startswith(_PREFIX + ".")


class _AliasLoader(importlib.abc.Loader):
    """Hands out Alloy's module itself: `mlx.core` *is* `alloy.core`, so
    arrays, dtypes and classes are the same objects under both names."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass  # already executed under its own name


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if not _is_mlx_name(name):
            return None
        alloy_name = _alloy_name(name)
        if importlib.util.find_spec(alloy_name) is None:
            raise ModuleNotFoundError(
                f"No module named {name!r}: Alloy (running this program as MLX, alloy.as_mlx) has no "
                f"{alloy_name!r}", name=name)
        module = importlib.import_module(alloy_name)
        return importlib.util.spec_from_loader(name, _AliasLoader(alloy_name),
                                               is_package=hasattr(module, "__path__"))


_finder = _AliasFinder()


def installed():
    return _finder in sys.meta_path


def install():
    """Makes `import mlx...` give Alloy's modules from now on."""
    if installed():
        return
    real = [n for n, m in sys.modules.items()
            if _is_mlx_name(n) and m is not None and not getattr(m, "__name__", "").startswith(_TARGET)]
    if real:
        raise RuntimeError(
            f"[alloy.as_mlx] real MLX is already imported ({', '.join(sorted(real)[:3])}); install "
            "alloy.as_mlx before the program's first `import mlx`, in a process of its own.")
    sys.meta_path.insert(0, _finder)


def uninstall():
    """Undoes install(): `mlx` names imported so far are forgotten."""
    if installed():
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if _is_mlx_name(n)]:
        if getattr(sys.modules[name], "__name__", "").startswith(_TARGET):
            del sys.modules[name]


def pytest_configure(config):
    """`pytest -p alloy.as_mlx`: the suite's `import mlx` gives Alloy."""
    install()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m alloy.as_mlx script.py [args] | -m module [args]\n\n" + __doc__.strip())
        return 0 if argv else 2
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("alloy.as_mlx: -m needs a module name", file=sys.stderr)
            return 2
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A package's file loaded on its Metal-kernel path or on its ops path, on
either framework, its metal_kernel launches counted: the loads of the checks
that Alloy's suite (tests/python, alloy.core) and alloy.mlx's suite
(tests/mlx_plugin, real MLX) share (jang_checks.py, rapid_checks.py).

- Alloy: real_mlx_code.load(kernels=True / False), whose view of alloy.core
  answers the file's Metal checks (`mx.metal.is_available()`,
  `mx.default_device() == mx.gpu`) as asked.
- Real MLX with alloy.mlx: the kernel path is the file as it is, its Metal
  checks answered by the plugin (docs/design/mlx-plugin.md); the core the
  file sees only counts its metal_kernel launches. The ops path answers "no
  Metal, CPU", as MLX does on a machine without Metal.

`kernels_launched(module)` names the kernels the files of that load
launched (the file and the siblings it imported)."""
from real_mlx_code import FRAMEWORKS, CountingCore, DeviceView, Loader, core_of, load


def _load_mlx(name, view, kernels, substitutes):
    loader = Loader(FRAMEWORKS["mlx"], kernels, substitutes)
    loader.view = view  # every mlx.core / mlx.core.fast import of the files goes to it
    module = loader.load(name)
    module.__dict__["__port_loader__"] = loader
    return module


def load_kernel_path(name, framework, substitutes=None):
    """`name` on its Metal-kernel path on `framework` ("alloy" or "mlx")."""
    if framework == "alloy":
        return load(name, "alloy", kernels=True, substitutes=substitutes)
    return _load_mlx(name, CountingCore(core_of("mlx")), True, substitutes)


def load_ops_path(name, framework, substitutes=None):
    """`name` on its ops fallback on `framework` (its Metal checks answered
    "no Metal, CPU")."""
    if framework == "alloy":
        return load(name, "alloy", kernels=False, substitutes=substitutes)
    return _load_mlx(name, DeviceView(core_of("mlx"), False), False, substitutes)


def kernels_launched(module):
    """The names of the Metal kernels the files of `module`'s load launched."""
    return module.__port_loader__.kernels_launched()


def launches(module):
    """How many Metal kernel launches the files of `module`'s load made."""
    return module.__port_loader__.launches()


def launched_during(module, call):
    """call()'s result, and the names of the kernels the files of `module`'s
    load launched while it ran."""
    order = module.__port_loader__.view.counter["order"]
    before = len(order)
    result = call()
    return result, set(order[before:])

"""Load a source file of an installed MLX package (mlx-lm, mlx-audio, ...) as
it is, with only its imports pointed elsewhere; and run one entry point of it
three ways (run_three: Alloy's kernel path, Alloy's ops fallback, real MLX's
fallback) to compare them (assert_agree).

    mod = load("mlx_lm.models.ssm", FRAMEWORKS["alloy"], kernels=True)

The file is read from the installed package at test time (nothing of it is
copied into this repository), parsed, and every import statement that names
MLX or a sibling module of the package is turned into an assignment from a
table of modules; every other line runs unchanged.

- `import mlx.core as mx`, `from mlx.core.fast import metal_kernel`,
  `import mlx.nn as nn`, `from mlx.utils import tree_map`: taken from the
  framework the test names, Alloy (`alloy.*`) or real MLX (`mlx.*`, so the
  real-MLX load is the unmodified file).
- Relative imports (`from .base import X`, `from ..utils import f`): the
  sibling is loaded the same way, unless the test hands in a substitute for it
  (for a sibling whose own imports are heavy and whose one helper the test
  needs).

The package's `__init__.py` files never run: mlx_lm's imports transformers,
which these tests neither need nor install.

Which path a file takes: the files pick their Metal kernel only where
`mx.metal.is_available()` is true, most also only where
`mx.default_device() == mx.gpu` (an Apple GPU). Alloy runs Metal kernels on
every device, the CPU included, so for Alloy the module's `mx` is a view of
alloy.core that answers those two questions as the test asks (kernels=True:
"GPU, metal available"; kernels=False: "CPU, no metal", as real MLX answers
on a machine without Metal) and passes everything else straight through.
Real MLX is loaded with no view: on this CPU-only build it has no Metal, so it
takes the file's ops fallback on its own.
"""
import ast
import dataclasses
import importlib
import importlib.util
import pathlib
import sys
import types

import numpy as np
import pytest

_INSTALL_HINT = {
    "mlx_lm": "mlx-lm==0.32.2",
    "mlx_audio": "mlx-audio==0.6.2",
    "mlx_vlm": "mlx-vlm==0.7.10",
    "mflux": "mflux==0.24.0",
    "parakeet_mlx": "parakeet-mlx==0.7.0",
    "zmlx": "zmlx==0.10.0",
    "mhc_mlx": "mhc-mlx==0.6.3",
    "natten_mlx": "natten-mlx==0.3.3",
    "demucs_mlx": "demucs-mlx==1.6.1",
    "mlx_whisper": "mlx-whisper==0.4.3",
    "mlx_graphs": "mlx-graphs==0.0.10",
    "mlx_optimizers": "mlx-optimizers==0.4.1",
    "kokoro_mlx": "kokoro-mlx==0.1.4",
    "mlx_embeddings": "mlx-embeddings==0.1.0",
    "f5_tts_mlx": "f5-tts-mlx==0.2.6",
    "mlxim": "mlx-image==0.1.10",
    "diffusionkit": "diffusionkit==0.5.2",
    "rapid_mlx": "rapid-mlx==0.16.10",
    "jang_tools": "jang==2.5.50",
    "llguidance": "llguidance==1.9.1",
}


def package_dir(package):
    """The installed package's directory, found without running its __init__."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        hint = _INSTALL_HINT.get(package, package)
        pytest.fail(
            f"{package} is not installed in this environment; these tests run its "
            f"source files on Alloy. Install it with: pip install --no-deps '{hint}' "
            "(the Makefile's venv step does)",
            pytrace=False,
        )
    return pathlib.Path(list(spec.submodule_search_locations)[0])


# Stand-ins for the mlx-vlm modules that the Nemotron diffusion language
# file imports for generation and visualisation (they pull in tokenizers and
# image tools); the functions the tests call never reach them.
MLX_VLM_DIFFUSION_STAND_INS = {
    "mlx_vlm.generate.common": types.SimpleNamespace(GenerationResult=object),
    "mlx_vlm.models.diffusion_visualizer": types.SimpleNamespace(DiffusionUnmaskingVisualizer=object),
}


def enter_package(package):
    """Lets `import package.sub.module` run the package's module files, but not
    its __init__ (mlx-lm's pulls in its command-line tools: huggingface_hub,
    transformers), so its modules import unchanged under their own names. For
    suites that import the files as they are (alloy.mlx on real MLX)."""
    if package in sys.modules:
        return
    module = types.ModuleType(package)
    module.__path__ = [str(package_dir(package))]
    module.__spec__ = importlib.util.find_spec(package)
    sys.modules[package] = module


class _MetalView:
    def __init__(self, metal, available):
        self._metal = metal
        self._available = available

    def is_available(self):
        return self._available

    def __getattr__(self, name):
        return getattr(self._metal, name)


class _FastView:
    """alloy.core.fast whose metal_kernel objects count their launches, so a
    test can tell which path a file took."""

    def __init__(self, fast, counter):
        self._fast = fast
        self._counter = counter

    def metal_kernel(self, *args, **kwargs):
        kernel = self._fast.metal_kernel(*args, **kwargs)
        counter = self._counter
        name = kwargs.get("name", args[0] if args else "")

        def launch(*a, **kw):
            counter["launches"] += 1
            counter["names"].add(name)
            counter["order"].append(name)
            return kernel(*a, **kw)

        return launch

    def __getattr__(self, name):
        return getattr(self._fast, name)


class CountingCore(types.ModuleType):
    """A framework's core (alloy.core or mlx.core) whose fast.metal_kernel
    objects count their launches; every other name is the core's own.
    `counter`: launches, the set of kernel names, and the names in order."""

    def __init__(self, core):
        super().__init__(core.__name__)
        self._core = core
        self.counter = {"launches": 0, "names": set(), "order": []}
        self.fast = _FastView(core.fast, self.counter)

    def __getattr__(self, name):
        return getattr(self._core, name)


class DeviceView(CountingCore):
    """alloy.core as the file sees it: default_device() and metal.is_available()
    answer as asked, fast.metal_kernel counts launches."""

    def __init__(self, core, kernels):
        super().__init__(core)
        self._kernels = kernels
        self.metal = _MetalView(core.metal, kernels)

    def default_device(self):
        return self._core.gpu if self._kernels else self._core.cpu


class Framework:
    """Where `mlx.<sub>` imports of a loaded file go."""

    def __init__(self, name, prefix):
        self.name = name
        self.prefix = prefix  # "alloy" or "mlx"

    def module(self, mlx_name, view=None):
        """The framework's module for `mlx_name`; for Alloy, mlx.core and
        mlx.core.fast come from `view` when one is given."""
        sub = mlx_name[len("mlx"):]  # "" or ".core", ".nn", ".core.fast", ...
        if view is not None and sub == ".core":
            return view
        if view is not None and sub == ".core.fast":
            return view.fast
        return importlib.import_module(self.prefix + sub)


FRAMEWORKS = {"alloy": Framework("alloy", "alloy"), "mlx": Framework("mlx", "mlx")}


class _Imports(ast.NodeTransformer):
    """Turns each import of MLX or of a sibling into `name = __port__(module, attr)`."""

    def __init__(self, package):
        self.package = package  # the loaded file's package, e.g. "mlx_lm.models"

    @staticmethod
    def _assign(target, module, attr, node):
        call = ast.Call(
            func=ast.Name("__port__", ast.Load()),
            args=[ast.Constant(module), ast.Constant(attr)],
            keywords=[],
        )
        return ast.copy_location(ast.Assign([ast.Name(target, ast.Store())], call), node)

    @staticmethod
    def _is_mlx(name):
        return name == "mlx" or name.startswith("mlx.")

    def _is_sibling(self, name):
        """`from mflux.models.x import y` in a file of mflux: loaded like a
        relative import, against the same framework."""
        top = self.package.split(".")[0]
        return name == top or name.startswith(top + ".")

    def visit_Import(self, node):
        kept, out = [], []
        for alias in node.names:
            if not self._is_mlx(alias.name):
                kept.append(alias)
            elif alias.asname is None:
                # `import mlx.nn`: as in Python, the submodule is imported and
                # the name `mlx` is bound to the package.
                out.append(self._assign("mlx", alias.name, None, node))
                out.append(self._assign("mlx", "mlx", None, node))
            else:
                out.append(self._assign(alias.asname, alias.name, None, node))
        if kept:
            out.insert(0, ast.copy_location(ast.Import(kept), node))
        return out

    def visit_ImportFrom(self, node):
        if node.level:
            base = self.package.split(".")
            if node.level > 1:
                base = base[: -(node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        elif node.module and (self._is_mlx(node.module) or self._is_sibling(node.module)):
            module = node.module  # MLX, or the file's own package named in full
        else:
            return node  # __future__, stdlib, numpy: unchanged
        out = []
        for alias in node.names:
            if alias.name == "*":
                # `from .sub import *`: __port_all__ binds the module's public
                # names in the importing module's globals, as Python does.
                call = ast.Call(func=ast.Name("__port_all__", ast.Load()),
                                args=[ast.Constant(module), ast.Call(ast.Name("globals", ast.Load()), [], [])],
                                keywords=[])
                out.append(ast.copy_location(ast.Expr(call), node))
                continue
            out.append(self._assign(alias.asname or alias.name, module, alias.name, node))
        return out


def _binds_other_than_submodule(init_file, name):
    """Whether a package's __init__.py binds `name` to something of its own
    (`from .scatter import scatter`, a def, an assignment) rather than to the
    submodule of that name. Read, not run: __init__ files may import what
    these tests do not install, and only the ones that must run are loaded."""
    if not init_file.is_file():
        return False
    for node in ast.walk(ast.parse(init_file.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if any((alias.asname or alias.name) == name for alias in node.names):
                return True
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


class Loader:
    """Loads files of installed packages against one framework and one kernel
    choice; each sibling module is loaded once per Loader."""

    def __init__(self, framework, kernels, substitutes=None):
        self.framework = framework
        self.kernels = kernels
        self.loaded = {}
        core = importlib.import_module(framework.prefix + ".core")
        self.view = DeviceView(core, kernels) if framework.prefix == "alloy" else None
        # {module name: stand-in}, or a function of this Loader's `mx` giving one.
        if callable(substitutes):
            substitutes = substitutes(self.core())
        self.substitutes = dict(substitutes or {})

    def core(self):
        """The `mx` that files loaded by this Loader get."""
        return self.view if self.view is not None else self.framework.module("mlx.core")

    def launches(self):
        """Metal kernel launches by files of this Loader (Alloy only)."""
        return self.view.counter["launches"]

    def kernels_launched(self):
        """The names of the Metal kernels files of this Loader launched (Alloy only)."""
        return set(self.view.counter["names"])

    def _module(self, name):
        if self._is_mlx(name):
            return self.framework.module(name, self.view)
        if name in self.substitutes:
            return self.substitutes[name]
        return self.load(name)

    @staticmethod
    def _is_mlx(name):
        return name == "mlx" or name.startswith("mlx.")

    def _port(self, module, attr):
        if attr is None:
            return self._module(module)
        if not self._is_mlx(module) and module not in self.substitutes:
            # `from .pkg import name`: as Python does, the package's own
            # attribute first (its __init__ may bind `name` to a function of
            # the submodule of the same name: mlx-graphs' utils.scatter), then
            # the submodule.
            path = self._path(module)
            if path.is_dir() and (path.joinpath(attr).is_dir() or path.joinpath(attr + ".py").is_file()):
                if _binds_other_than_submodule(path / "__init__.py", attr):
                    return getattr(self._module(module), attr)
                return self._module(f"{module}.{attr}")
        target = self._module(module)
        if hasattr(target, attr):
            return getattr(target, attr)
        if self._is_mlx(module):
            # `from mlx.nn.layers import distributed`: a submodule
            return self._module(f"{module}.{attr}")
        raise ImportError(f"cannot import name {attr!r} from {module!r}")

    def _port_all(self, module, namespace):
        source = self._module(module)
        names = getattr(source, "__all__", None)
        if names is None:
            names = [n for n in vars(source) if not n.startswith("_")]
        for n in names:
            namespace[n] = getattr(source, n)

    @staticmethod
    def _path(name):
        top, *rest = name.split(".")
        return package_dir(top).joinpath(*rest)

    def source_path(self, name):
        path = self._path(name)
        # A package: its __init__.py. As in Python's import, a module file
        # wins over a folder of the same name without one (natten-mlx's
        # _core/nanobind.py beside the C++ sources in _core/nanobind/).
        if path.is_dir() and (path.joinpath("__init__.py").is_file() or not path.with_suffix(".py").is_file()):
            return path / "__init__.py"
        return path.with_suffix(".py")

    def load(self, name):
        if name in self.loaded:
            return self.loaded[name]
        path = self.source_path(name)
        if not path.is_file():
            # As Python's import would: files guard compiled extensions that
            # are not built here with `except ImportError`.
            raise ModuleNotFoundError(f"No module named {name!r} (no {path.name} in the installed package)", name=name)
        tree = ast.parse(path.read_text(), filename=str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.fix_missing_locations(_Imports(package).visit(tree))
        # Registered under a private name: dataclasses and pickling look a
        # class's module up in sys.modules.
        mode = "kernels" if self.kernels else "ops"
        module = types.ModuleType(f"_ported_{self.framework.name}_{mode}.{name}")
        module.__file__ = str(path)
        sys.modules[module.__name__] = module
        module.__dict__["__port__"] = self._port
        module.__dict__["__port_all__"] = self._port_all
        self.loaded[name] = module  # before exec: cyclic sibling imports
        exec(compile(tree, str(path), "exec"), module.__dict__)
        return module


def load(name, framework="alloy", kernels=False, substitutes=None):
    """Module `name` (e.g. "mlx_lm.models.ssm") loaded against `framework`
    ("alloy" or "mlx"); for Alloy, `kernels` picks the file's Metal-kernel path
    (True) or its ops fallback (False)."""
    if framework == "mlx" and kernels:
        raise ValueError("real MLX has no Metal here; it runs the ops fallback only")
    loader = Loader(FRAMEWORKS[framework], kernels, substitutes)
    module = loader.load(name)
    module.__dict__["__port_loader__"] = loader
    return module


# ---- running a file three ways ----------------------------------------------

# Float32 results of kernels against ops: different summation orders.
RTOL, ATOL = 2e-4, 2e-5

# The three runs of every test: (framework, kernels).
RUNS = {"kernel": ("alloy", True), "alloy_ops": ("alloy", False), "mlx_ops": ("mlx", False)}


def core_of(framework):
    return importlib.import_module(FRAMEWORKS[framework].prefix + ".core")


def to_framework(value, framework):
    if isinstance(value, np.ndarray):
        return core_of(framework).array(value)
    if isinstance(value, (list, tuple)):
        return type(value)(to_framework(v, framework) for v in value)
    return value


def as_alloy(value):
    """A real MLX array as an Alloy array of the same dtype and values (through
    float32 for bfloat16, which numpy lacks)."""
    name = str(value.dtype).split(".")[-1]
    if name == "bfloat16":
        value = value.astype(core_of("mlx").float32)
    alloy_core = core_of("alloy")
    return alloy_core.array(np.array(value)).astype(getattr(alloy_core, name))


def to_numpy(value):
    if isinstance(value, (list, tuple)):
        return [to_numpy(v) for v in value]
    return np.array(value)


def run_three(module_name, call, inputs, substitutes=None):
    """call(module, framework_inputs) on each run; results as numpy, by run."""
    results = {}
    for run, (framework, kernels) in RUNS.items():
        module = load(module_name, framework, kernels, substitutes)
        if framework == "mlx":
            mlx_core = core_of("mlx")
            with mlx_core.stream(mlx_core.cpu):
                out = call(module, to_framework(inputs, framework))
        else:
            out = call(module, to_framework(inputs, framework))
        results[run] = to_numpy(out)
        if framework == "alloy":
            # The run took the path it was meant to: Metal kernels launched
            # on the kernel run, none on the ops run.
            launches = module.__port_loader__.launches()
            assert (launches > 0) == kernels, f"{run}: {launches} metal_kernel launches"
            if kernels:
                results["kernels launched"] = module.__port_loader__.kernels_launched()
    return results


def assert_agree(results, names, rtol=RTOL, atol=ATOL, select=None, fallbacks=("alloy_ops", "mlx_ops")):
    """The kernel run against each fallback run, output by output."""
    for fallback in fallbacks:
        for name, got, want in zip(names, results["kernel"], results[fallback]):
            if select is not None and name in select:
                got, want = got[select[name]], want[select[name]]
            np.testing.assert_allclose(
                got, want, rtol=rtol, atol=atol, err_msg=f"{name}: kernel vs {fallback}"
            )


def normal(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


# ---- building a file's own config classes and reading its outputs -----------

def dataclass_from(cls, settings):
    """The config dataclass `cls` from `settings`: a field it lacks keeps its
    default, or is None where it has none (the file then takes its own)."""
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in settings:
            kwargs[f.name] = settings[f.name]
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[f.name] = None
    return cls(**kwargs)


def arrays_in(out, core):
    """Every array of `core` in a model's output (tuples, lists, dicts by
    sorted key, output objects by attribute), in order."""
    if isinstance(out, core.array):
        return [out]
    if isinstance(out, (tuple, list)):
        return [a for item in out for a in arrays_in(item, core)]
    if isinstance(out, dict):
        return [a for key in sorted(out) for a in arrays_in(out[key], core)]
    if out is None or isinstance(out, (int, float, bool, str)):
        return []
    return [a for item in vars(out).values() for a in arrays_in(item, core)]

"""The seed examples (examples/seeds) as MLX users wrote them: the files
differ from MLX's guide only in their import line, which is put back here
(`import mlx.core as mx`), so each runs on real MLX with alloy.mlx."""
import importlib.util
import pathlib
import sys

SEEDS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "seeds"


def load(name):
    """Runs examples/seeds/<name>.py as MLX code (its own asserts included)
    and returns the module."""
    source = (SEEDS / f"{name}.py").read_text()
    source = source.replace("import alloy.core as mx", "import mlx.core as mx")
    source = source.replace("import alloy.nn as nn", "import mlx.nn as nn")
    assert "alloy" not in source.split("\n", 1)[1], f"{name}.py still names alloy"
    spec = importlib.util.spec_from_loader(f"mlx_seed_{name}", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(SEEDS / f"{name}.py")
    sys.modules[spec.name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module

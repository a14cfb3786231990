"""alloy.as_mlx: a program written for MLX runs on Alloy with its imports
unchanged (`python -m alloy.as_mlx script.py`, `-m module`, `pytest -p
alloy.as_mlx`). Each program runs in a process of its own, once under real
MLX and once under Alloy, on the same data; their printed results agree."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

# An MLX program as users write it: a model, a loss, value_and_grad, an
# optimizer, compile, tree utilities, a random key, saving arrays.
PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten, tree_map

    seed = int(sys.argv[1])
    data = np.random.default_rng(seed)
    x = mx.array(data.standard_normal((64, 8)).astype(np.float32))
    y = mx.array(data.integers(0, 3, 64))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(8, 16), nn.Linear(16, 3)]
        def __call__(self, x):
            return self.layers[1](nn.gelu(self.layers[0](x)))

    model = MLP()
    weights = data.standard_normal(sum(v.size for _, v in tree_flatten(model.parameters()))).astype(np.float32)
    flat, at = [], 0
    for k, v in tree_flatten(model.parameters()):
        flat.append((k, mx.array(weights[at:at + v.size].reshape(v.shape) * 0.3)))
        at += v.size
    model.load_weights(flat)
    opt = optim.AdamW(learning_rate=1e-2)
    loss_fn = lambda m, x, y: nn.losses.cross_entropy(m(x), y, reduction="mean")
    step = nn.value_and_grad(model, loss_fn)

    @mx.compile
    def logits_of(x):
        return mx.softmax(x @ x.T, axis=-1).sum(axis=0)

    losses = []
    for _ in range(5):
        loss, grads = step(model, x, y)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        losses.append(loss.item())
    mx.random.seed(seed)
    draw = mx.random.uniform(shape=(4,))
    print(json.dumps(dict(framework=mx.__name__, losses=losses, compiled=np.array(logits_of(x)).tolist(),
                          draw=np.array(draw).tolist(),
                          norms=[float(mx.linalg.norm(v).item()) for _, v in tree_flatten(model.parameters())])))
""")


def run(args, cwd, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    done = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, f"{args} failed:\n{done.stderr[-3000:]}"
    return done.stdout


def test_a_script_written_for_mlx_runs_unchanged(tmp_path, rng):
    (tmp_path / "program.py").write_text(PROGRAM)
    seed = str(int(rng.integers(2**31)))
    want = json.loads(run(["program.py", seed], tmp_path).strip().splitlines()[-1])
    got = json.loads(run(["-m", "alloy.as_mlx", "program.py", seed], tmp_path).strip().splitlines()[-1])
    assert want["framework"] == "mlx.core" and got["framework"] == "alloy.core"
    np.testing.assert_allclose(got["losses"], want["losses"], rtol=1e-5)
    assert want["losses"][-1] < want["losses"][0]  # it trained
    np.testing.assert_allclose(got["norms"], want["norms"], rtol=1e-5)
    np.testing.assert_allclose(got["compiled"], want["compiled"], rtol=1e-5)
    assert got["draw"] == want["draw"]  # the same draws for a seed, bit for bit


def test_a_module_and_a_test_suite_written_for_mlx(tmp_path):
    (tmp_path / "mlx_using_module.py").write_text(textwrap.dedent("""
        import sys
        import mlx.core as mx
        import mlx.nn.layers.distributed
        from mlx.core import fast
        print(mx.__name__, fast.__name__, sys.argv[1:], mx.sum(mx.arange(5)).item())
    """))
    out = run(["-m", "alloy.as_mlx", "-m", "mlx_using_module", "a", "b"], tmp_path)
    assert out.split() == ["alloy.core", "alloy.core.fast", "['a',", "'b']", "10"]
    (tmp_path / "test_written_for_mlx.py").write_text(textwrap.dedent("""
        import mlx.core as mx
        import mlx.nn as nn

        def test_alloy_answers():
            assert mx.__name__ == "alloy.core"
            assert nn.Linear(3, 2)(mx.ones((1, 3))).shape == (1, 2)

        def test_a_failure_is_reported():
            assert mx.array([1, 2]).sum().item() == 4
    """))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "alloy.as_mlx",
                           "test_written_for_mlx.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "1 failed, 1 passed" in done.stdout, done.stdout[-2000:]


def test_errors_are_clear(tmp_path):
    code = ("import mlx.core\nimport alloy.as_mlx\n"
            "try:\n    alloy.as_mlx.install()\nexcept RuntimeError as e:\n    print(e)\n")
    assert "real MLX is already imported" in run(["-c", code], tmp_path)
    code = ("import alloy.as_mlx\nalloy.as_mlx.install()\n"
            "try:\n    import mlx.no_such_module\nexcept ModuleNotFoundError as e:\n    print(e)\n"
            "alloy.as_mlx.uninstall()\nimport mlx.core\nprint(mlx.core.__name__)\n")
    out = run(["-c", code], tmp_path).splitlines()
    assert "alloy.as_mlx" in out[0] and "'alloy.no_such_module'" in out[0]
    assert out[1] == "mlx.core"  # uninstalled: real MLX again

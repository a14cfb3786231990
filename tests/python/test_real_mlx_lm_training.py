"""mlx-lm's LoRA fine-tuning, its files unchanged, on Alloy against real MLX.

tuner/utils.py turns a tiny llama's last two blocks' projections into LoRA
layers (their A matrices drawn after the same seed), and tuner/trainer.py's
`train` runs: its step compiled with the model, optimizer and random state,
gradient checkpointing (mx.checkpoint), gradient accumulation, Adam, a
validation pass and the adapter file it saves. The reported training and
validation losses and the saved adapters must agree with real MLX's.

mlx-lm's terminal UI (cli_ui.py, which needs rich) and its hub/tokenizer
helpers (utils.py) are stood in for by the few names train() calls; its one
transformers import (a type annotation in datasets.py) gets an empty module.
"""
import contextlib
import sys
import types

import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader
from mlx_lm_tiny_configs import tiny_args
from real_mlx_code import as_alloy

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax


class _QuietTrainUI:
    """cli_ui.TrainUI's interface, printing nothing."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @contextlib.contextmanager
    def val_task(self, total):
        yield lambda *args, **kwargs: None

    def __getattr__(self, name):  # report_val, report_train, advance, report_save
        return lambda *args, **kwargs: None


def _stand_ins():
    return {
        "mlx_lm.cli_ui": types.SimpleNamespace(TrainUI=_QuietTrainUI, rprint=lambda *a, **k: None),
        "mlx_lm.utils": types.SimpleNamespace(
            maybe_set_recommended_wired_limit=lambda: None,
            get_total_parameters=lambda model: sum(v.size for _, v in tree_flatten(model.parameters())),
        ),
    }


def fine_tune(framework, core, weights, data, adapter_file, seed):
    loader = Loader(FRAMEWORKS[framework], kernels=False, substitutes=_stand_ins())
    trainer = loader.load("mlx_lm.tuner.trainer")
    tuner = loader.load("mlx_lm.tuner.utils")
    module = loader.load("mlx_lm.models.llama")
    optimizers = loader.framework.module("mlx.optimizers")
    model = module.Model(tiny_args("llama", module))
    model.load_weights(weights, strict=True)
    model.freeze()
    core.random.seed(seed)
    tuner.linear_to_lora_layers(model, 2, {"rank": 4, "scale": 10.0, "dropout": 0.0})

    reports = {"train": [], "val": []}

    class Record(trainer.TrainingCallback):
        def on_train_loss_report(self, info):
            reports["train"].append(info["train_loss"])

        def on_val_loss_report(self, info):
            reports["val"].append(info["val_loss"])

    args = trainer.TrainingArgs(batch_size=2, iters=6, val_batches=2, steps_per_report=1, steps_per_eval=3,
                                steps_per_save=100, max_seq_length=40, adapter_file=str(adapter_file),
                                grad_checkpoint=True, grad_accumulation_steps=2)
    np.random.seed(seed)  # iterate_batches shuffles with numpy's global generator
    trainer.train(model, optimizers.Adam(learning_rate=1e-2), data[:6], data[6:], args=args,
                  training_callback=Record())
    return reports


def test_lora_fine_tuning_matches_mlx(rng, monkeypatch, tmp_path):
    transformers = types.ModuleType("transformers")
    transformers.PreTrainedTokenizer = object
    monkeypatch.setitem(sys.modules, "transformers", transformers)
    module = Loader(FRAMEWORKS["mlx"], kernels=False).load("mlx_lm.models.llama")
    shapes = tree_flatten(module.Model(tiny_args("llama", module)).parameters())
    weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.05).astype(np.float32))) for k, v in shapes]
    data = [(list(rng.integers(1, 97, int(rng.integers(12, 30)))), 0) for _ in range(10)]
    seed = int(rng.integers(2**31))

    want = fine_tune("mlx", mx, weights, data, tmp_path / "mlx.safetensors", seed)
    got = fine_tune("alloy", ax, [(k, as_alloy(v)) for k, v in weights], data, tmp_path / "alloy.safetensors", seed)
    assert len(want["train"]) == 6 and len(want["val"]) == 3
    np.testing.assert_allclose(got["train"], want["train"], rtol=1e-3)
    np.testing.assert_allclose(got["val"], want["val"], rtol=1e-3)
    # The adapters train() saved, read back by real MLX.
    theirs, ours = mx.load(str(tmp_path / "mlx.safetensors")), mx.load(str(tmp_path / "alloy.safetensors"))
    # two blocks, seven projections each (q, k, v, o, gate, up, down), A and B
    assert sorted(ours) == sorted(theirs) and len(theirs) == 2 * 7 * 2
    for k in theirs:
        np.testing.assert_allclose(np.array(ours[k]), np.array(theirs[k]), rtol=2e-2, atol=2e-3, err_msg=k)

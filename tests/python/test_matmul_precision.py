"""float32 matmul precision (issue 16, item 4): exact float32 is the default;
`set_float32_matmul_precision("high")` (PyTorch's name) runs float32
matmuls on the GPU's TF32 tensor cores, within TF32's error bound, and the
setting is checked and can start from ALLOY_FLOAT32_MATMUL_PRECISION."""
import os
import subprocess
import sys

import numpy as np
import pytest

import alloy.core as mx

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")


@pytest.fixture
def restore_precision():
    before = mx.get_float32_matmul_precision()
    yield
    mx.set_float32_matmul_precision(before)


def test_the_default_is_float32_and_names_are_checked(restore_precision):
    assert mx.get_float32_matmul_precision() == "highest"
    mx.set_float32_matmul_precision("high")
    assert mx.get_float32_matmul_precision() == "high"
    mx.set_float32_matmul_precision("medium")  # TF32 too: at least medium's precision
    assert mx.get_float32_matmul_precision() == "high"
    mx.set_float32_matmul_precision("highest")
    assert mx.get_float32_matmul_precision() == "highest"
    with pytest.raises(ValueError, match=r"unknown precision 'fast'.*\"highest\".*\"high\""):
        mx.set_float32_matmul_precision("fast")
    assert mx.get_float32_matmul_precision() == "highest"


def test_the_environment_sets_the_starting_value():
    code = "import alloy.core as mx; print(mx.get_float32_matmul_precision())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, ALLOY_FLOAT32_MATMUL_PRECISION="high"))
    assert r.returncode == 0 and r.stdout.strip() == "high", r.stderr
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, ALLOY_FLOAT32_MATMUL_PRECISION="tf32"))
    assert r.returncode != 0 and "ValueError" in r.stderr and "ALLOY_FLOAT32_MATMUL_PRECISION" in r.stderr, r.stderr


def relative_errors(rng, precision, stream):
    """Max |C - C_ref| / (|A| |B|) elementwise over random float32 matmuls."""
    mx.set_float32_matmul_precision(precision)
    a = rng.standard_normal((256, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 192)).astype(np.float32)
    got = np.array(mx.matmul(mx.array(a), mx.array(b), stream=stream)).astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return np.max(np.abs(got - a64 @ b64) / (np.abs(a64) @ np.abs(b64)))


def test_the_cpu_stays_float32_when_tf32_is_asked_for(rng, restore_precision):
    # float32 products and sums: error within K unit roundoffs of |A||B|.
    assert relative_errors(rng, "high", mx.cpu) <= 1024 * 2.0**-24


@pytest.mark.skipif(DEVICE != "gpu", reason="TF32 tensor cores are a GPU path; ALLOY_TEST_DEVICE=gpu runs it")
def test_tf32_on_the_gpu_stays_within_its_bound(rng, restore_precision):
    err_f32 = relative_errors(rng, "highest", mx.gpu)
    err_tf32 = relative_errors(rng, "high", mx.gpu)
    # TF32 keeps 10 mantissa bits of each input (unit roundoff at most 2^-10
    # whether cuBLAS rounds or truncates); products and sums are float32.
    assert err_f32 <= 1024 * 2.0**-24, err_f32
    assert err_tf32 <= 2 * 2.0**-10 + 1024 * 2.0**-24, err_tf32
    # And TF32 really ran: its error is far above float32's.
    assert err_tf32 > 8 * err_f32, (err_tf32, err_f32)


FIRST_USE = r"""
import sys
import numpy as np
import alloy.core as mx
device = mx.gpu if sys.argv[1] == "gpu" else mx.cpu
mx.set_default_device(device)
rng = np.random.default_rng(int(sys.argv[2]))
mx.eval(mx.ones((4,)))  # the first GPU op: the cuBLAS thread starts here
if sys.argv[3] == "matmul":
    for m, n, k, dtype in ((64, 48, 80, np.float32), (33, 65, 17, np.float16), (128, 96, 256, np.float32)):
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        got = np.array(mx.array(a) @ mx.array(b)).astype(np.float64)
        want = a.astype(np.float64) @ b.astype(np.float64)
        tol = 2e-2 if dtype == np.float16 else 1e-4
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < tol, (m, n, k, dtype, err)
print("ok")
"""


@pytest.mark.parametrize("program", ["matmul", "exit"])
def test_first_matmul_and_exit_around_the_cublas_thread(rng, program):
    # On the GPU the first op starts a thread that loads cuBLAS and makes its
    # handle. A fresh process's first matmuls, issued while that thread may still run, give
    # float64's numbers; one that exits at once (the thread still working)
    # exits cleanly. On the CPU no thread starts and both hold trivially.
    seed = int(rng.integers(1 << 31))
    r = subprocess.run([sys.executable, "-c", FIRST_USE, DEVICE, str(seed), program], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, f"seed {seed}: {r.stderr}{r.stdout}"
    assert r.stdout.strip() == "ok", r.stdout + r.stderr

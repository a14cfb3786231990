"""What the metal4 drivers and tests/python/test_metal4_examples.py share:
loading a kernel, MXFP8 data made and decoded in numpy, and float64
references.

MXFP8 (OCP MX v1.0): E4M3 codes with one E8M0 scale per 32 consecutive
elements along K; value = decode_e4m3(code) * 2^(scale - 127). The decoders
here are ml_dtypes' (float8_e4m3fn, float8_e8m0fnu), independent of Alloy's.
"""
import pathlib
import sys

import ml_dtypes
import numpy as np

import alloy.core as mx

HERE = pathlib.Path(__file__).resolve().parent
sys.path.append(str(HERE.parent / "guide"))
import guide_common  # noqa: E402


def source(name):
    """The text of examples/metal4/<name>.metal."""
    return (HERE / f"{name}.metal").read_text(encoding="utf-8")


def library(name, **kw):
    return mx.fast.metal_library(source(name), **kw)


# Picking the device and timing a launch are the guide drivers' own.
device_from_argv = guide_common.device_from_argv
median_time = guide_common.median_time


# ---- MXFP8 in numpy ---------------------------------------------------------

def decode_e4m3(codes):
    return np.asarray(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def decode_e8m0(codes):
    return np.asarray(codes, np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)


def random_mxfp8(rng, rows, k, scale_lo=112, scale_hi=124):
    """(codes, scales) of a rows x k MXFP8 matrix: random finite E4M3 codes
    (never NaN) and random E8M0 scales in [scale_lo, scale_hi], one per 32
    elements of a row (the last block may be partial)."""
    codes = rng.integers(0, 256, size=(rows, k), dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] ^= 0x01  # S.1111.111 is NaN: use S.1111.110 (448)
    scales = rng.integers(scale_lo, scale_hi + 1, size=(rows, -(-k // 32)), dtype=np.uint8)
    return codes, scales


def dequantize(codes, scales):
    """float64 values of an MXFP8 matrix (rows x k)."""
    k = codes.shape[-1]
    block = np.repeat(decode_e8m0(scales), 32, axis=-1)[..., :k]
    return decode_e4m3(codes) * block


def mxfp8_from_float(x):
    """MXFP8 (codes, scales) of a float32 matrix through MLX's quantizer
    (mx.quantize mode="mxfp8", group 32): the packed words viewed as bytes."""
    wq, scales = mx.quantize(mx.array(x), group_size=32, bits=8, mode="mxfp8")
    return np.array(mx.view(wq, mx.uint8)), np.array(scales)


def report(what, got, ref, seconds, rtol, atol):
    """Prints the max error and the timing; exits non-zero on a mismatch."""
    got = np.asarray(got, np.float64)
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    ok = np.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=False)
    print(f"{what:<48} max|err| {err:.3e}  {'ok' if ok else 'MISMATCH'}  launch {seconds * 1e3:8.3f} ms (median)")
    if not ok:
        raise SystemExit(1)

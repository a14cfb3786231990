"""The WWDC26 attention snippets completed into a flash-attention forward
(examples/metal4/flash_attention.metal; the MXFP8 matmul examples are in
test_metal4_mxfp8.py), and matmul2d at SIMD-group scopes on half and bfloat
operands in every transpose, mode and edge (the shapes the GPU runs on its
tensor cores), against float64 numpy on fresh random inputs, on the test
device (ALLOY_TEST_DEVICE)."""
import functools
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx

from conftest import DEVICE

STREAM = mx.gpu if DEVICE == "gpu" else mx.cpu
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "metal4"
sys.path.insert(0, str(EXAMPLES))
import metal4_common as m4  # noqa: E402
import attention_driver as fa  # noqa: E402


@functools.lru_cache(maxsize=None)
def attention_kernel():
    return m4.library("flash_attention").kernel("flash_attention")


@pytest.mark.parametrize("heads,S", [(1, 64), (2, 100), (3, 37)])
def test_flash_attention_matches_float64_softmax(rng, heads, S):
    D = fa.D
    q, k, v = (rng.standard_normal((heads, S, D)).astype(np.float16) for _ in range(3))
    scale = float(1.0 / np.sqrt(D))
    poison = mx.array(np.full((heads, S, D), np.nan, np.float32))
    (out,) = attention_kernel()(args={"Q": mx.array(q), "K": mx.array(k), "V": mx.array(v), "O": poison, "S": S,
                                      "scale": scale},
                                grid=(-(-S // fa.ROWS), heads, 1), threadgroup=(128, 1, 1), dispatch="threadgroups",
                                stream=STREAM)
    np.testing.assert_allclose(np.array(out).astype(np.float64), fa.reference(q, k, v, scale), rtol=1e-4, atol=1e-4)


def test_flash_attention_with_large_scores_stays_finite(rng):
    """Scores of several hundred: the running max keeps exp() in range."""
    heads, S, D = 1, 96, fa.D
    q = (rng.standard_normal((heads, S, D)) * 4).astype(np.float16)
    k = (rng.standard_normal((heads, S, D)) * 4).astype(np.float16)
    v = rng.standard_normal((heads, S, D)).astype(np.float16)
    (out,) = attention_kernel()(args={"Q": mx.array(q), "K": mx.array(k), "V": mx.array(v),
                                      "O": ((heads, S, D), mx.float32), "S": S, "scale": 1.0},
                                grid=(2, heads, 1), threadgroup=(128, 1, 1), dispatch="threadgroups", stream=STREAM)
    got = np.array(out).astype(np.float64)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, fa.reference(q, k, v, 1.0), rtol=1e-3, atol=1e-3)


# The tiled kernel (examples/metal4/flash_attention_tiled.metal): K and V
# staged in threadgroup memory, Q held as a left-input cooperative tensor, P V
# in relaxed precision (P rounded to half), half output.
@pytest.mark.parametrize("D,nsimd,bk,prefetch,q_staged,heads,S,rows", [
    (128, 8, 64, 1, 0, 2, 100, 16), (128, 4, 32, 1, 0, 1, 200, 16), (64, 4, 64, 1, 0, 3, 37, 16),
    (64, 8, 32, 1, 0, 1, 129, 16), (128, 4, 64, 0, 1, 2, 150, 16), (64, 4, 32, 0, 0, 2, 77, 16),
    (128, 2, 128, 1, 1, 1, 300, 16), (128, 4, 32, 0, 1, 2, 230, 32), (64, 4, 64, 1, 0, 1, 100, 32)])
def test_tiled_flash_attention_matches_float64_softmax(rng, D, nsimd, bk, prefetch, q_staged, heads, S, rows):
    q, k, v = (rng.standard_normal((heads, S, D)).astype(np.float16) for _ in range(3))
    scale = float(1.0 / np.sqrt(D))
    poison = mx.array(np.full((heads, S, D), np.nan, np.float16))
    out = fa.run_tiled(mx.array(q), mx.array(k), mx.array(v), scale, nsimd=nsimd, bk=bk, out=poison, stream=STREAM,
                       prefetch=prefetch, q_shared=q_staged, rows=rows)
    want = fa.reference(q, k, v, scale)
    np.testing.assert_allclose(np.array(out).astype(np.float64), want, rtol=4e-3, atol=2e-3)


def test_tiled_flash_attention_with_large_scores_stays_finite(rng):
    heads, S, D = 1, 150, 128
    q = (rng.standard_normal((heads, S, D)) * 3).astype(np.float16)
    k = (rng.standard_normal((heads, S, D)) * 3).astype(np.float16)
    v = rng.standard_normal((heads, S, D)).astype(np.float16)
    out = np.array(fa.run_tiled(mx.array(q), mx.array(k), mx.array(v), 1.0, stream=STREAM)).astype(np.float64)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, fa.reference(q, k, v, 1.0), rtol=4e-3, atol=4e-3)


# ---- matmul2d at SIMD-group scopes: every shape the tensor cores take ------

GEMM = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
template <typename TA, typename TB, typename U, int TM, int TN, bool TL, bool TR, bool ACC, int SG, bool RELAXED>
kernel void gemm(tensor<device const TA, dextents<int, 2>> A [[buffer(0)]],
                 tensor<device const TB, dextents<int, 2>> B [[buffer(1)]],
                 tensor<device U, dextents<int, 2>> C [[buffer(2)]],
                 uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, TL, TR, RELAXED,
      ACC ? matmul2d_descriptor::mode::multiply_accumulate : matmul2d_descriptor::mode::multiply);
  matmul2d<desc, execution_simdgroups<SG>> op;
  auto a = TL ? A.slice(tgid.y * TM, 0) : A.slice(0, tgid.y * TM);
  auto b = TR ? B.slice(0, tgid.x * TN) : B.slice(tgid.x * TN, 0);
  op.run(a, b, C.slice(tgid.x * TN, tgid.y * TM));
}
"""
# (T, U, tile M, tile N, TL, TR, ACC, SIMD groups)
TC_VARIANTS = [(t, u, tm, tn, tl, tr, acc, sg)
               for t, u in (("half", "float"), ("bfloat", "float"), ("half", "half"), ("float", "float"))
               for tm, tn, sg in ((16, 8, 1), (64, 32, 4), (32, 64, 2))
               for tl in (False, True) for tr in (False, True) for acc in (False, True)
               if (t, u) == ("half", "float") or (tm, tn, tl, acc) == (64, 32, False, True)]
# K-major tiles of whole warpgroups: on sm_90a these run on wgmma (one and
# two warpgroups, N of 128 and 64 a instruction).
TC_VARIANTS += [("half", "float", 128, 128, False, True, False, 4), ("bfloat", "float", 128, 64, False, True, True, 4),
                ("half", "half", 128, 128, False, True, True, 8), ("bfloat", "float", 256, 64, False, True, False, 8)]


# float x float, exact and relaxed (on the GPU: TF32 MMAs, three of split
# operands or one), through each way the tensor cores read operands.
FLOAT_VARIANTS = [("float", "float", tm, tn, tl, tr, False, sg) for tm, tn, sg, tl, tr in
                  ((16, 8, 1, False, False), (64, 32, 4, False, True), (32, 64, 2, True, False),
                   (128, 128, 8, False, True))]


def instantiation(kernel, host_name, template_args, left, right, dest):
    """One instantiation of a template kernel with two 2-D input tensors, an
    output tensor and the threadgroup position, for metal_library."""
    targs = ", ".join(str(a).lower() if isinstance(a, bool) else str(a) for a in template_args)
    return (f'template [[host_name("{host_name}")]] kernel void {kernel}<{targs}>(\n'
            f"    tensor<device const {left}, dextents<int, 2>>, tensor<device const {right}, dextents<int, 2>>,\n"
            f"    tensor<device {dest}, dextents<int, 2>>, uint2);\n")


def tc_name(t, u, tm, tn, tl, tr, acc, sg, relaxed=False):
    return f"gemm_{t}_{u}_{tm}x{tn}_{int(tl)}{int(tr)}{int(acc)}_{sg}" + ("_relaxed" if relaxed else "")


@functools.lru_cache(maxsize=None)
def gemm_lib():
    variants = [(v, False) for v in TC_VARIANTS] + [(v, r) for v in FLOAT_VARIANTS for r in (False, True)]
    inst = "".join(instantiation("gemm", tc_name(*v, relaxed=r), (v[0], *v, r), v[0], v[0], v[1])
                   for v, r in dict.fromkeys(variants))
    return mx.fast.metal_library(GEMM + inst)


NP = {"half": np.float16, "float": np.float32}
MXT = {"half": mx.float16, "bfloat": mx.bfloat16, "float": mx.float32}


def operand(x, strided, dtype):
    """x (numpy, the array's shape) as an mx array of `dtype`; `strided`: the
    same shape through a transposed view (strides swapped)."""
    if strided:
        return mx.transpose(mx.array(np.ascontiguousarray(x.T)).astype(dtype))
    return mx.array(np.ascontiguousarray(x)).astype(dtype)


@pytest.mark.parametrize("variant", TC_VARIANTS, ids=[tc_name(*v) for v in TC_VARIANTS])
@pytest.mark.parametrize("layout", ["whole_tiles", "ragged", "strided"])
def test_matmul2d_simdgroup_scopes(rng, variant, layout):
    t, u, tm, tn, tl, tr, acc, sg = variant
    # Whole tiles with K = 96 (a multiple of 64 bytes): on the GPU, K-major
    # operands (not TL, TR) take the shared-memory pipeline.
    M, N, K = (2 * tm - 5, 3 * tn - 3, 37) if layout == "ragged" else (2 * tm, 3 * tn, 96)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    # The arrays as the descriptor reads them: left extents (K, M), or (M, K)
    # transposed; right (N, K), or (K, N) transposed (arrays: the reverse).
    strided = layout == "strided"
    A = operand(a.T if tl else a, strided, MXT[t])
    B = operand(b.T if tr else b, strided, MXT[t])
    if acc:
        start = mx.array(rng.standard_normal((M, N)).astype(np.float32)).astype(MXT[u])
    else:
        start = mx.array(np.full((M, N), np.nan, np.float32)).astype(MXT[u])
    (c,) = gemm_lib().kernel(tc_name(*variant))(
        args={"A": A, "B": B, "C": start}, grid=(-(-N // tn), -(-M // tm), 1), threadgroup=(32 * sg, 1, 1),
        dispatch="threadgroups", stream=STREAM)
    f64 = lambda x: np.array(x.astype(mx.float32)).astype(np.float64)  # noqa: E731
    a64, b64 = f64(A), f64(B)
    ref = (a64.T if tl else a64) @ (b64.T if tr else b64) + (f64(start) if acc else 0.0)
    tol = 2e-3 if u == "half" else 1e-4
    np.testing.assert_allclose(f64(c), ref, rtol=tol, atol=tol * 8)


@pytest.mark.parametrize("variant", FLOAT_VARIANTS, ids=[tc_name(*v) for v in FLOAT_VARIANTS])
@pytest.mark.parametrize("relaxed", [False, True], ids=["exact", "relaxed"])
def test_float_matmul2d_keeps_float_precision_unless_relaxed(rng, variant, relaxed):
    # Error bounds per element, relative to sum_k |a_mk b_kn|: float's
    # (a few ulps, 2^-18 with K = 200) unless relaxed_precision, which
    # allows TF32's 10-bit significands (2^-9).
    t, u, tm, tn, tl, tr, acc, sg = variant
    M, N, K = 2 * tm, 2 * tn, 200
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    A = operand(a.T if tl else a, False, mx.float32)
    B = operand(b.T if tr else b, False, mx.float32)
    (c,) = gemm_lib().kernel(tc_name(*variant, relaxed=relaxed))(
        args={"A": A, "B": B, "C": mx.array(np.full((M, N), np.nan, np.float32))}, grid=(2, 2, 1),
        threadgroup=(32 * sg, 1, 1), dispatch="threadgroups", stream=STREAM)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    err = np.abs(np.array(c).astype(np.float64) - a64 @ b64)
    scale = np.abs(a64) @ np.abs(b64)
    bound = 2.0 ** (-9 if relaxed else -18)
    assert np.all(err <= bound * scale), f"max error / sum|ab| = {np.max(err / scale):.3g}, bound {bound:.3g}"


# Mixed operand types at SIMD-group scopes (on the GPU: read as float, TF32
# MMAs; half, bfloat and 8-bit integers are exact there, a float side split
# in two). (left, right, destination) as Apple lists them.
MIXED_PAIRS = [("half", "float", "float"), ("float", "half", "float"), ("bfloat", "float", "float"),
               ("half", "bfloat", "float"), ("bfloat", "half", "half"), ("half", "char", "half"),
               ("char", "half", "float"), ("char", "float", "float"), ("bfloat", "uchar", "bfloat"),
               ("float", "uchar", "float"), ("half", "metal_fp8_e4m3_format", "float"),
               ("metal_fp8_e5m2_format", "half", "half")]
MIXED_SHAPES = [(64, 32, False, True, 4), (16, 8, True, False, 1)]  # tile, TL, TR, SIMD groups
MIXED_GEMM = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
template <typename TA, typename TB, typename U, int TM, int TN, bool TL, bool TR, int SG>
kernel void mixed(tensor<device const TA, dextents<int, 2>> A [[buffer(0)]],
                  tensor<device const TB, dextents<int, 2>> B [[buffer(1)]],
                  tensor<device U, dextents<int, 2>> C [[buffer(2)]],
                  uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, TL, TR);
  matmul2d<desc, execution_simdgroups<SG>> op;
  auto a = TL ? A.slice(tgid.y * TM, 0) : A.slice(0, tgid.y * TM);
  auto b = TR ? B.slice(0, tgid.x * TN) : B.slice(tgid.x * TN, 0);
  op.run(a, b, C.slice(tgid.x * TN, tgid.y * TM));
}
"""
MIXED_DT = {"half": mx.float16, "bfloat": mx.bfloat16, "float": mx.float32, "char": mx.int8, "uchar": mx.uint8}


FP8_NP = {"metal_fp8_e4m3_format": ml_dtypes.float8_e4m3fn, "metal_fp8_e5m2_format": ml_dtypes.float8_e5m2}


def mixed_name(ta, tb, u, tm, tn, tl, tr, sg):
    short = lambda t: t.replace("metal_fp8_", "").replace("_format", "")  # noqa: E731
    return f"mixed_{short(ta)}_{short(tb)}_{short(u)}_{tm}x{tn}_{int(tl)}{int(tr)}_{sg}"


@functools.lru_cache(maxsize=None)
def mixed_lib():
    inst = "".join(instantiation("mixed", mixed_name(*p, *sh), (*p, *sh), *p) for p in MIXED_PAIRS for sh in MIXED_SHAPES)
    return mx.fast.metal_library(MIXED_GEMM + inst)


def typed_operand(rng, shape, t):
    """A random operand of Metal type t, and its values in float64."""
    if t == "char":
        x = rng.integers(-128, 128, shape).astype(np.int8)
        return mx.array(x), x.astype(np.float64)
    if t == "uchar":
        x = rng.integers(0, 256, shape).astype(np.uint8)
        return mx.array(x), x.astype(np.float64)
    if t in FP8_NP:  # codes as uint8
        x = (rng.standard_normal(shape) * 4).astype(FP8_NP[t])
        return mx.array(x.view(np.uint8)), x.astype(np.float64)
    x = mx.array(rng.standard_normal(shape).astype(np.float32)).astype(MIXED_DT[t])
    return x, np.array(x.astype(mx.float32)).astype(np.float64)


@pytest.mark.parametrize("shape", MIXED_SHAPES, ids=["64x32_4_kmajor", "16x8_1_strided"])
@pytest.mark.parametrize("types", MIXED_PAIRS, ids=["_".join(p) for p in MIXED_PAIRS])
def test_mixed_type_matmul2d_at_simdgroup_scopes(rng, types, shape):
    ta, tb, u = types
    tm, tn, tl, tr, sg = shape
    M, N, K = 2 * tm - 5, 2 * tn - 3, 37
    A, a64 = typed_operand(rng, (K, M) if tl else (M, K), ta)
    B, b64 = typed_operand(rng, (N, K) if tr else (K, N), tb)
    (c,) = mixed_lib().kernel(mixed_name(ta, tb, u, tm, tn, tl, tr, sg))(
        args={"A": A, "B": B, "C": mx.array(np.full((M, N), np.nan, np.float32)).astype(MIXED_DT[u])},
        grid=(2, 2, 1), threadgroup=(32 * sg, 1, 1), dispatch="threadgroups", stream=STREAM)
    a64, b64 = (a64.T if tl else a64), (b64.T if tr else b64)
    ref = a64 @ b64
    # Float's accumulation (2^-18 of sum |a b| with K = 37), then the
    # destination's rounding.
    dest_eps = {"float": 0.0, "half": 2.0 ** -11, "bfloat": 2.0 ** -8}[u]
    bound = 2.0 ** -18 * (np.abs(a64) @ np.abs(b64)) + dest_eps * np.abs(ref) + (6e-8 if u == "half" else 0.0)
    err = np.abs(np.array(c.astype(mx.float32)).astype(np.float64) - ref)
    assert np.all(err <= bound), f"max error over bound {np.max(err / bound):.3g}"


# Metal leaves a dispatch whose SIMD groups differ from execution_simdgroups<N>
# undefined; it cannot be a compile error (the threadgroup size is the
# launch's). Here threads are dealt to scopes by their index: a threadgroup
# short of N SIMD groups is one partial scope (the reference path), a larger
# one runs the op once per N SIMD groups (multiply writes the same values).
@pytest.mark.parametrize("variant", [("half", "float", 64, 32, False, True, False, 4),
                                     ("half", "float", 128, 128, False, True, False, 4)],
                         ids=["64x32_4", "128x128_4_wgmma"])
@pytest.mark.parametrize("simdgroups", [2, 8])
def test_matmul2d_dispatched_with_other_than_its_simd_groups(rng, variant, simdgroups):
    t, u, tm, tn, tl, tr, acc, sg = variant
    M, N, K = 2 * tm, 2 * tn, 96
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    A, B = operand(a, False, MXT[t]), operand(b, False, MXT[t])
    (c,) = gemm_lib().kernel(tc_name(*variant))(
        args={"A": A, "B": B, "C": mx.array(np.full((M, N), np.nan, np.float32))}, grid=(2, 2, 1),
        threadgroup=(32 * simdgroups, 1, 1), dispatch="threadgroups", stream=STREAM)
    f64 = lambda x: np.array(x.astype(mx.float32)).astype(np.float64)  # noqa: E731
    np.testing.assert_allclose(f64(c), f64(A) @ f64(B).T, rtol=1e-4, atol=8e-4)


# 8-bit integers at SIMD-group scopes: int32 results, exact (on the GPU,
# int8 / uint8 MMAs, of one signedness or mixed: s8 x u8, u8 x s8).
INT8_VARIANTS = [(ta, tb, tm, tn, tl, tr, acc, sg) for ta, tb in (("char", "char"), ("uchar", "uchar"),
                                                                  ("char", "uchar"), ("uchar", "char"))
                 for tm, tn, sg in ((16, 8, 1), (64, 32, 4), (128, 128, 8))
                 for tl, tr in ((False, True), (False, False), (True, True)) for acc in (False, True)
                 if (ta, tb) == ("char", "char") or ((tl, tr) == (False, True) and (ta == tb or acc or sg == 1))
                 or (ta != tb and sg == 1 and (tl, tr) == (False, False) and not acc)]
INT8_RANGE = {"char": (-128, 128, np.int8), "uchar": (0, 256, np.uint8)}


def int8_name(ta, tb, tm, tn, tl, tr, acc, sg):
    return f"igemm_{ta}_{tb}_{tm}x{tn}_{int(tl)}{int(tr)}{int(acc)}_{sg}"


@functools.lru_cache(maxsize=None)
def int8_lib():
    inst = "".join(instantiation("gemm", int8_name(*v), (v[0], v[1], "int", *v[2:], False), v[0], v[1], "int")
                   for v in INT8_VARIANTS)
    return mx.fast.metal_library(GEMM + inst)


@pytest.mark.parametrize("variant", INT8_VARIANTS, ids=[int8_name(*v) for v in INT8_VARIANTS])
@pytest.mark.parametrize("layout", ["whole_tiles", "ragged"])
def test_matmul2d_int8_at_simdgroup_scopes_is_exact(rng, variant, layout):
    ta, tb, tm, tn, tl, tr, acc, sg = variant
    M, N, K = (2 * tm - 5, 2 * tn - 3, 37) if layout == "ragged" else (2 * tm, 2 * tn, 96)
    a = rng.integers(*INT8_RANGE[ta][:2], (M, K)).astype(INT8_RANGE[ta][2])
    b = rng.integers(*INT8_RANGE[tb][:2], (K, N)).astype(INT8_RANGE[tb][2])
    A = mx.array(np.ascontiguousarray(a.T if tl else a))
    B = mx.array(np.ascontiguousarray(b.T if tr else b))
    start = rng.integers(-1000, 1000, (M, N)).astype(np.int32) if acc else np.full((M, N), -7777777, np.int32)
    (c,) = int8_lib().kernel(int8_name(*variant))(
        args={"A": A, "B": B, "C": mx.array(start)}, grid=(-(-N // tn), -(-M // tm), 1),
        threadgroup=(32 * sg, 1, 1), dispatch="threadgroups", stream=STREAM)
    want = a.astype(np.int64) @ b.astype(np.int64) + (start if acc else 0)
    np.testing.assert_array_equal(np.array(c).astype(np.int64), want)

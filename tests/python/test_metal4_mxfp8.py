"""Metal 4's 8-bit float formats and MXFP8 tensors (issue 15, items 4 and 5):
metal_fp8_e4m3/e5m2/ue8m0_format conversions against ml_dtypes, quantized
tensors with a scales plane bound from (data, scales) arrays, matmul2d
dequantizing per 32-element block, the seed's MXFP8 matmul assembled in
examples/metal4/, and the errors for what Apple's compiler refuses. Every
launch runs on the test device (ALLOY_TEST_DEVICE); references are float64
numpy on ml_dtypes' decoding, on fresh random inputs (the seed is printed)."""
import functools
import pathlib
import sys

import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx

from conftest import DEVICE
from shared_fixtures import assert_compile_error_on_line

STREAM = mx.gpu if DEVICE == "gpu" else mx.cpu
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "metal4"
sys.path.insert(0, str(EXAMPLES))
import metal4_common as m4  # noqa: E402

PRELUDE = r"""#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
"""

# (A kernel parameter's tensor alias is declared in the program, not its header.)
FORMATS = r"""
using scales_plane = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mxfp8_tensor = tensor<device metal_fp8_e4m3_format, dextents<int, 2>, tensor_handle, scales_plane>;

// Every byte decoded in each format.
kernel void decode(device const uchar* codes [[buffer(0)]],
                   device float* e4m3 [[buffer(1)]],
                   device float* e5m2 [[buffer(2)]],
                   device float* e8m0 [[buffer(3)]],
                   uint i [[thread_position_in_grid]]) {
  e4m3[i] = float(as_type<metal_fp8_e4m3_format>(codes[i]));
  e5m2[i] = float(as_type<metal_fp8_e5m2_format>(codes[i]));
  e8m0[i] = float(as_type<metal_fp8_ue8m0_format>(codes[i]));
}

// Floats converted into each format, as bytes.
kernel void encode(device const float* x [[buffer(0)]],
                   device uchar* e4m3 [[buffer(1)]],
                   device uchar* e5m2 [[buffer(2)]],
                   uint i [[thread_position_in_grid]]) {
  e4m3[i] = as_type<uchar>(metal_fp8_e4m3_format(x[i]));
  e5m2[i] = as_type<uchar>(metal_fp8_e5m2_format(x[i]));
}

// C = A[:, k0:] B[:, k0:]^T over a tile at one thread: slices that start
// inside a scale block.
kernel void from_k0(mxfp8_tensor A [[buffer(0)]],
                    mxfp8_tensor B [[buffer(1)]],
                    tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                    constant int& k0 [[buffer(3)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_thread> op;
  op.run(A.slice(k0, 0), B.slice(k0, 0), C);
}

// Unscaled fp8 operands: half x e5m2 -> float, e5m2 x e5m2 -> half.
kernel void mixed(tensor<device const half, dextents<int, 2>> A [[buffer(0)]],
                  tensor<device const metal_fp8_e5m2_format, dextents<int, 2>> B [[buffer(1)]],
                  tensor<device const metal_fp8_e5m2_format, dextents<int, 2>> A8 [[buffer(2)]],
                  tensor<device float, dextents<int, 2>> C [[buffer(3)]],
                  tensor<device half, dextents<int, 2>> C8 [[buffer(4)]],
                  uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C.slice(tgid.x * 16, tgid.y * 16));
  op.run(A8.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C8.slice(tgid.x * 16, tgid.y * 16));
}
"""


@functools.lru_cache(maxsize=None)
def formats_lib():
    return mx.fast.metal_library(FORMATS, header=PRELUDE)


@functools.lru_cache(maxsize=None)
def example(name):
    return m4.library(name)


def run(lib, name, args, grid, threadgroup, dispatch="threads"):
    return lib.kernel(name)(args=args, grid=grid, threadgroup=threadgroup, dispatch=dispatch, stream=STREAM)


def nan_array(shape, dtype):
    """An in-out output that starts as NaN, so unwritten elements show."""
    return mx.array(np.full(shape, np.nan, dtype=np.float16 if dtype == mx.float16 else np.float32))


def test_every_code_decodes_as_ml_dtypes_does():
    codes = np.arange(256, dtype=np.uint8)
    e4m3, e5m2, e8m0 = run(formats_lib(), "decode",
                           {"codes": mx.array(codes), "e4m3": ((256,), mx.float32), "e5m2": ((256,), mx.float32),
                            "e8m0": ((256,), mx.float32)}, (256, 1, 1), (64, 1, 1))
    for got, fmt in ((e4m3, ml_dtypes.float8_e4m3fn), (e5m2, ml_dtypes.float8_e5m2),
                     (e8m0, ml_dtypes.float8_e8m0fnu)):
        want = codes.view(fmt).astype(np.float32)
        np.testing.assert_array_equal(np.array(got), want, err_msg=str(fmt))
    # OCP MX: E8M0 0xFF is NaN, 0 is 2^-127; E4M3 has NaN at S.1111.111 only.
    assert np.isnan(np.array(e8m0)[255]) and np.array(e8m0)[0] == np.float32(2.0**-127)
    assert np.isnan(np.array(e4m3)[[0x7F, 0xFF]]).all() and np.isfinite(np.delete(np.array(e4m3), [0x7F, 0xFF])).all()


def test_floats_round_to_nearest_even_and_saturate(rng):
    n = 4096
    # Magnitudes over every binade of both formats, each binade's exact
    # midpoints (ties), and the edges: zero, the largest finite, beyond it, inf, NaN.
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 17, n))).astype(np.float32)
    e4_codes = np.arange(0, 0x7E, dtype=np.uint8)
    e4_vals = e4_codes.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    ties = ((e4_vals[:-1] + e4_vals[1:]) / 2).astype(np.float32)
    special = np.array([0.0, -0.0, 448.0, 449.0, 464.0, 500.0, 1e6, 57344.0, 61440.0, 1e9, np.inf, -np.inf, np.nan],
                       np.float32)
    x = np.concatenate([x, ties, -ties, special])
    e4m3, e5m2 = run(formats_lib(), "encode",
                     {"x": mx.array(x), "e4m3": ((x.size,), mx.uint8), "e5m2": ((x.size,), mx.uint8)},
                     (x.size, 1, 1), (64, 1, 1))
    for got, fmt, top in ((np.array(e4m3), ml_dtypes.float8_e4m3fn, 448.0),
                          (np.array(e5m2), ml_dtypes.float8_e5m2, 57344.0)):
        finite = np.abs(x) <= top
        want = x[finite].astype(fmt).view(np.uint8)  # ml_dtypes rounds to nearest even
        np.testing.assert_array_equal(got[finite], want, err_msg=str(fmt))
        # Beyond the largest finite value (and +-inf): saturated, sign kept.
        big = np.isfinite(x) & (np.abs(x) > top) | np.isinf(x)
        decoded = got.view(fmt).astype(np.float64)
        np.testing.assert_array_equal(decoded[big], np.copysign(top, x[big]))
        assert np.isnan(decoded[np.isnan(x)]).all()


# Hopper's FP8 warpgroup MMA adds an instruction's 32 products keeping
# about 13 bits below the largest (benchmarks/fp8_accumulation_probe.py: a
# term under 2^-13 of the leading one is lost); matmul2d adds each such
# block into float, so an FP8 product from it is within a small multiple of
# 2^-13 * sum_k |a_k b_k| of the exact one (measured: 2^-12.2 at K 4096).
# The bound below leaves 4x of room; a lost or misscaled block (at least
# 1/16 of the sum at these sizes) is far outside it. mma.sync's FP8 and the
# CPU's reference path are exact in float and meet it trivially.
FP8_MMA_BOUND = 2.0 ** -10


def assert_fp8_product_close(got, a, b):
    """got (M x N) against a @ b.T in float64, within FP8_MMA_BOUND of
    sum_k |a_k b_k| for each element (plus float32's own rounding)."""
    ref = a @ b.T
    mag = np.abs(a) @ np.abs(b).T
    err = np.abs(np.asarray(got, np.float64) - ref)
    bound = FP8_MMA_BOUND * mag + 1e-6 * np.abs(ref).max()
    bad = ~(err <= bound)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements off, first at {np.argwhere(bad)[0]}: "
                           f"max err / sum|ab| = {np.nanmax(err / np.maximum(mag, 1e-300)):.3e}")


def mxfp8_pair(rng, rows, k):
    codes, scales = m4.random_mxfp8(rng, rows, k)
    return (codes, scales), (mx.array(codes), mx.array(scales))


@pytest.mark.parametrize("M,N,K", [(64, 32, 64), (200, 100, 256), (70, 45, 80)])
def test_seed_mxfp8_matmul(rng, M, N, K):
    """examples/metal4/mxfp8_matmul.metal: tiles of 64 x 32 at execution_simdgroups<4>,
    partial edge tiles, and (70, 45, 80) a K whose last scale block is partial."""
    (a_np, a), (b_np, b) = mxfp8_pair(rng, M, K), mxfp8_pair(rng, N, K)
    (c,) = run(example("mxfp8_matmul"), "matmul", {"matrixA": a, "matrixB": b, "matrixC": nan_array((M, N), mx.float16)},
               (-(-N // 32), -(-M // 64), 1), (128, 1, 1), "threadgroups")
    ref = m4.dequantize(*a_np) @ m4.dequantize(*b_np).T
    assert c.dtype == mx.float16
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=2e-3, atol=1e-3 * np.abs(ref).max())


WARPGROUP_MX = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
using scales_plane = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mxfp8_tensor = tensor<device metal_fp8_e4m3_format, dextents<int, 2>, tensor_handle, scales_plane>;
template <int TM, int TN, int SG, bool ACC = false>
kernel void mx_gemm(mxfp8_tensor A [[buffer(0)]], mxfp8_tensor B [[buffer(1)]],
                    tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                    uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, false, true, false,
      ACC ? matmul2d_descriptor::mode::multiply_accumulate : matmul2d_descriptor::mode::multiply);
  matmul2d<desc, execution_simdgroups<SG>> op;
  op.run(A.slice(0, tgid.y * TM), B.slice(0, tgid.x * TN), C.slice(tgid.x * TN, tgid.y * TM));
}
template [[host_name("mx_128x64_4")]] kernel void mx_gemm<128, 64, 4>(mxfp8_tensor, mxfp8_tensor,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("mx_128x128_8")]] kernel void mx_gemm<128, 128, 8>(mxfp8_tensor, mxfp8_tensor,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("mx_128x64_8")]] kernel void mx_gemm<128, 64, 8>(mxfp8_tensor, mxfp8_tensor,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("mx_128x128_8_acc")]] kernel void mx_gemm<128, 128, 8, true>(mxfp8_tensor, mxfp8_tensor,
    tensor<device float, dextents<int, 2>>, uint2);

// Plain FP8 (no scales plane) on the same tiles.
template <typename T>
kernel void fp8_gemm(tensor<device const T, dextents<int, 2>> A [[buffer(0)]],
                     tensor<device const T, dextents<int, 2>> B [[buffer(1)]],
                     tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                     uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(128, 128, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroups<8>> op;
  op.run(A.slice(0, tgid.y * 128), B.slice(0, tgid.x * 128), C.slice(tgid.x * 128, tgid.y * 128));
}
template [[host_name("e4m3_gemm")]] kernel void fp8_gemm<metal_fp8_e4m3_format>(
    tensor<device const metal_fp8_e4m3_format, dextents<int, 2>>, tensor<device const metal_fp8_e4m3_format, dextents<int, 2>>,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("e5m2_gemm")]] kernel void fp8_gemm<metal_fp8_e5m2_format>(
    tensor<device const metal_fp8_e5m2_format, dextents<int, 2>>, tensor<device const metal_fp8_e5m2_format, dextents<int, 2>>,
    tensor<device float, dextents<int, 2>>, uint2);

// The same MX tiles with relaxed precision (E4M3 and E5M2 codes).
using mx5_tensor = tensor<device metal_fp8_e5m2_format, dextents<int, 2>, tensor_handle, scales_plane>;
template <int TM, int TN, int SG, bool ACC, typename T, typename CT>
void relaxed_tile(T A, T B, CT C, uint2 tgid) {
  constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, false, true, true,
      ACC ? matmul2d_descriptor::mode::multiply_accumulate : matmul2d_descriptor::mode::multiply);
  matmul2d<desc, execution_simdgroups<SG>> op;
  op.run(A.slice(0, tgid.y * TM), B.slice(0, tgid.x * TN), C.slice(tgid.x * TN, tgid.y * TM));
}
template <int TM, int TN, int SG, bool ACC = false>
kernel void mx_gemm_relaxed(mxfp8_tensor A [[buffer(0)]], mxfp8_tensor B [[buffer(1)]],
                            tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                            uint2 tgid [[threadgroup_position_in_grid]]) {
  relaxed_tile<TM, TN, SG, ACC>(A, B, C, tgid);
}
kernel void mx5_relaxed_128x128_8(mx5_tensor A [[buffer(0)]], mx5_tensor B [[buffer(1)]],
                                  tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                                  uint2 tgid [[threadgroup_position_in_grid]]) {
  relaxed_tile<128, 128, 8, false>(A, B, C, tgid);
}
template [[host_name("mx_relaxed_128x128_8")]] kernel void mx_gemm_relaxed<128, 128, 8>(mxfp8_tensor, mxfp8_tensor,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("mx_relaxed_128x64_4")]] kernel void mx_gemm_relaxed<128, 64, 4>(mxfp8_tensor, mxfp8_tensor,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("mx_relaxed_128x128_8_acc")]] kernel void mx_gemm_relaxed<128, 128, 8, true>(mxfp8_tensor,
    mxfp8_tensor, tensor<device float, dextents<int, 2>>, uint2);
"""


@pytest.mark.parametrize("tile", [(128, 64, 4), (128, 128, 8), (128, 64, 8)], ids=["128x64_4", "128x128_8", "128x64_8"])
@pytest.mark.parametrize("M,N,K", [(256, 192, 352), (200, 128, 80), (256, 256, 512), (128, 128, 400)])
def test_mxfp8_tiles_of_whole_warpgroups(rng, tile, M, N, K):
    """MXFP8 tiles shared by whole warpgroups (one warpgroup of two m64
    instructions, two of one) take Hopper's warpgroup MMA on the GPU (decoded
    to half where the scales allow, as these do; see below for the others).
    Whole tiles with a K that is not a multiple of 128 bytes
    (352, 400), a ragged last row of tiles (200: the tensor cores read the
    tensors directly), a K whose last scale block is partial (80, 400), and
    scale rows of 16 blocks (512: read a word of four blocks at a time) or of
    11 and 13 (read byte by byte)."""
    tm, tn, sg = tile
    (a_np, a), (b_np, b) = mxfp8_pair(rng, M, K), mxfp8_pair(rng, N, K)
    (c,) = run(mx.fast.metal_library(WARPGROUP_MX), f"mx_{tm}x{tn}_{sg}",
               {"A": a, "B": b, "C": nan_array((M, N), mx.float32)}, (-(-N // tn), -(-M // tm), 1), (32 * sg, 1, 1),
               "threadgroups")
    assert_fp8_product_close(np.array(c), m4.dequantize(*a_np), m4.dequantize(*b_np))


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_plain_fp8_tiles_of_whole_warpgroups(rng, fmt):
    """FP8 without scales at 8 SIMD groups (decoded to half for the
    warpgroup MMA) against float64 on the decoded codes, K 400 (a partial
    last slab)."""
    M, N, K = 256, 384, 400
    dt = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
    a8 = (rng.standard_normal((M, K)) * 2).astype(dt)
    b8 = (rng.standard_normal((N, K)) * 2).astype(dt)
    (c,) = run(mx.fast.metal_library(WARPGROUP_MX), f"{fmt}_gemm",
               {"A": mx.array(a8.view(np.uint8)), "B": mx.array(b8.view(np.uint8)),
                "C": nan_array((M, N), mx.float32)}, (N // 128, M // 128, 1), (256, 1, 1), "threadgroups")
    assert_fp8_product_close(np.array(c), a8.astype(np.float64), b8.astype(np.float64))


# Decoded tiles multiply exact halves (each code times 2^(scale - the row's
# offset)) and add in float: their error is float accumulation's, far below
# FP8_MMA_BOUND. The FP8 MMA's 13-bit sums, or a half product that lost
# bits, would be well outside it.
DECODED_BOUND = 2.0 ** -16


@pytest.mark.parametrize("kernel,tile", [("mx_128x128_8", (128, 128)), ("mx_128x64_4", (128, 64))])
def test_decoded_mx_tiles_are_exact_to_float_accumulation(rng, kernel, tile):
    """Scales spread as far as decoding to half allows (A's rows 2^-27 ..
    2^-9: 18 octaves, codes times 2^-12 .. 2^6 around each row's offset,
    subnormal halves included; B's 2^-15 .. 2^-3), K 512: every element
    within 2^-16 of sum |a_k b_k|."""
    M, N, K = 256, 256, 512
    a_np, _ = mxfp8_pair(rng, M, K)
    b_np, _ = mxfp8_pair(rng, N, K)
    sa = rng.integers(100, 119, size=a_np[1].shape, dtype=np.uint8)
    sa[:, 0], sa[:, 1] = 100, 118  # every row spans the whole 18 octaves
    a_np = (a_np[0], sa)
    tm, tn = tile
    sg = 8 if tn == 128 else 4
    (c,) = run(mx.fast.metal_library(WARPGROUP_MX), kernel,
               {"A": (mx.array(a_np[0]), mx.array(sa)), "B": (mx.array(b_np[0]), mx.array(b_np[1])),
                "C": nan_array((M, N), mx.float32)}, (N // tn, M // tm, 1), (32 * sg, 1, 1), "threadgroups")
    a, b = m4.dequantize(*a_np), m4.dequantize(*b_np)
    ref, mag = a @ b.T, np.abs(a) @ np.abs(b).T
    err = np.abs(np.array(c).astype(np.float64) - ref)
    assert (err <= DECODED_BOUND * mag).all(), f"max err / sum|ab| = {np.max(err / mag):.3e}"


def test_mx_tiles_whose_scales_spread_wider_take_the_per_block_path(rng):
    """A's rows with scales from 2^-67 to 2^73 (more than 18 octaves: no
    half holds every code times its block's scale around one offset) at 8
    SIMD groups: the tile falls back to the per-block FP8 path, and the
    product is still right to FP8_MMA_BOUND."""
    M, N, K = 256, 256, 512
    a_np, _ = mxfp8_pair(rng, M, K)
    b_np, _ = mxfp8_pair(rng, N, K)
    sa = rng.integers(60, 201, size=a_np[1].shape, dtype=np.uint8)
    a_np = (a_np[0], sa)
    (c,) = run(mx.fast.metal_library(WARPGROUP_MX), "mx_128x128_8",
               {"A": (mx.array(a_np[0]), mx.array(sa)), "B": (mx.array(b_np[0]), mx.array(b_np[1])),
                "C": nan_array((M, N), mx.float32)}, (2, 2, 1), (256, 1, 1), "threadgroups")
    assert_fp8_product_close(np.array(c), m4.dequantize(*a_np), m4.dequantize(*b_np))


def random_mx(rng, rows, k, fmt, scale_lo=112, scale_hi=124):
    """(codes, scales) and the float64 values of a random MX matrix in E4M3
    or E5M2 (finite codes only)."""
    codes, scales = m4.random_mxfp8(rng, rows, k, scale_lo, scale_hi)
    if fmt == "e5m2":
        codes[(codes & 0x7C) == 0x7C] &= 0x7B  # exponent 11111 is inf / NaN
    dt = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
    block = np.repeat(m4.decode_e8m0(scales), 32, axis=-1)[..., :k]
    return (codes, scales), codes.view(dt).astype(np.float64) * block


def relaxed_bound(fmt, a, sa, b, sb):
    """What relaxed precision may cost on the GPU (cuda_wgmma_requant.h):
    each code rounded to its format's subnormal grid after its block scale
    is aligned to its row's largest, R (at most half the smallest
    subnormal, 2^-10 for E4M3 and 2^-17 for E5M2, times 2^(R - 127)), then
    128 of K summed by the FP8 MMA before float (FP8_MMA_BOUND, 4x over
    the 32 of the exact paths). Per element (m, n)."""
    half_step = 2.0 ** (-10 if fmt == "e4m3" else -17)
    ra = half_step * m4.decode_e8m0(sa.max(axis=1))  # per row of A
    rb = half_step * m4.decode_e8m0(sb.max(axis=1))
    mag = np.abs(a) @ np.abs(b).T
    rounding = ra[:, None] * np.abs(b).sum(axis=1)[None, :] + rb[None, :] * np.abs(a).sum(axis=1)[:, None]
    rounding += ra[:, None] * rb[None, :] * a.shape[1]
    return 4 * FP8_MMA_BOUND * mag + rounding


@pytest.mark.parametrize("kernel,tile,fmt", [("mx_relaxed_128x128_8", (128, 128, 8), "e4m3"),
                                             ("mx_relaxed_128x64_4", (128, 64, 4), "e4m3"),
                                             ("mx5_relaxed_128x128_8", (128, 128, 8), "e5m2")])
@pytest.mark.parametrize("K", [640, 400])
def test_relaxed_mx_tiles_fold_scales_into_codes(rng, kernel, tile, fmt, K):
    """relaxed_precision on MX tiles of whole warpgroups: every element
    within relaxed_bound of the float64 product (K 640: five slabs; 400: a
    partial last slab and scale block). Scales spread 12 octaves (E4M3) or 8
    (E5M2), as far as the relaxed path takes; random codes over every
    exponent, so many codes of lower blocks land below the normal range. On
    the GPU the result must differ from the exact kernel's (E4M3), which
    shows that the relaxed path ran rather than the exact one."""
    tm, tn, sg = tile
    M, N = 256, 256
    hi = 124 if fmt == "e4m3" else 120
    (qa, a), (qb, b) = random_mx(rng, M, K, fmt, 112, hi), random_mx(rng, N, K, fmt, 112, hi)
    args = {"A": (mx.array(qa[0]), mx.array(qa[1])), "B": (mx.array(qb[0]), mx.array(qb[1])),
            "C": nan_array((M, N), mx.float32)}
    lib = mx.fast.metal_library(WARPGROUP_MX)
    (c,) = run(lib, kernel, args, (N // tn, M // tm, 1), (32 * sg, 1, 1), "threadgroups")
    got = np.array(c).astype(np.float64)
    err = np.abs(got - a @ b.T)
    bound = relaxed_bound(fmt, a, qa[1], b, qb[1])
    assert (err <= bound).all(), f"max err / bound = {np.max(err / bound):.3f}"
    if fmt == "e4m3" and DEVICE == "gpu":
        args["C"] = nan_array((M, N), mx.float32)
        (exact,) = run(lib, f"mx_{tm}x{tn}_{sg}", args, (N // tn, M // tm, 1), (32 * sg, 1, 1), "threadgroups")
        assert not np.array_equal(np.array(exact), got)


def test_relaxed_mx_tiles_whose_scales_spread_wider_stay_exact(rng):
    """Relaxed MX tiles whose rows' scales spread past 14 octaves (2^-67 ..
    2^73) cannot fold them into E4M3 codes through a half: the tile runs the
    exact path, bit for bit the exact kernel's result."""
    M, N, K = 256, 256, 512
    (qa, a), (qb, b) = random_mx(rng, M, K, "e4m3", 60, 200), random_mx(rng, N, K, "e4m3")
    lib = mx.fast.metal_library(WARPGROUP_MX)
    outs = []
    for name in ("mx_relaxed_128x128_8", "mx_128x128_8"):
        (c,) = run(lib, name, {"A": (mx.array(qa[0]), mx.array(qa[1])), "B": (mx.array(qb[0]), mx.array(qb[1])),
                               "C": nan_array((M, N), mx.float32)}, (2, 2, 1), (256, 1, 1), "threadgroups")
        outs.append(np.array(c))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert_fp8_product_close(outs[0], a, b)


def test_relaxed_mx_multiply_accumulate_adds_to_the_destination(rng):
    """multiply_accumulate on the relaxed MX path: C = C0 + A B^T."""
    M, N, K = 256, 256, 640
    (qa, a), (qb, b) = random_mx(rng, M, K, "e4m3"), random_mx(rng, N, K, "e4m3")
    c0 = rng.standard_normal((M, N)).astype(np.float32) * 100
    (c,) = run(mx.fast.metal_library(WARPGROUP_MX), "mx_relaxed_128x128_8_acc",
               {"A": (mx.array(qa[0]), mx.array(qa[1])), "B": (mx.array(qb[0]), mx.array(qb[1])),
                "C": mx.array(c0)}, (2, 2, 1), (256, 1, 1), "threadgroups")
    err = np.abs(np.array(c).astype(np.float64) - c0 - a @ b.T)
    assert (err <= relaxed_bound("e4m3", a, qa[1], b, qb[1]) + 1e-5 * np.abs(c0).max()).all()


def test_warpgroup_mx_multiply_accumulate_adds_to_the_destination(rng):
    """multiply_accumulate on the warpgroup MX path (8 SIMD groups): C =
    C0 + A B^T, C0 random, two tiles each way, K 640 (five slabs)."""
    M, N, K = 256, 256, 640
    (a_np, a), (b_np, b) = mxfp8_pair(rng, M, K), mxfp8_pair(rng, N, K)
    c0 = rng.standard_normal((M, N)).astype(np.float32) * 100
    (c,) = run(mx.fast.metal_library(WARPGROUP_MX), "mx_128x128_8_acc",
               {"A": a, "B": b, "C": mx.array(c0)}, (2, 2, 1), (256, 1, 1), "threadgroups")
    assert_fp8_product_close(np.array(c).astype(np.float64) - c0, m4.dequantize(*a_np), m4.dequantize(*b_np))


def test_warpgroup_mx_nan_scale_poisons_its_row_and_column_only(rng):
    """A 0xFF (NaN) scale in A's row 5, block 2 and in B's row 70, block 9,
    at 8 SIMD groups: row 5 and column 70 of C are NaN, the rest finite and
    right (a NaN scale sends the tile to the per-block path, whose block
    accumulators keep the NaN out of other rows)."""
    M, N, K = 128, 128, 512
    (a_np, a), (b_np, b) = mxfp8_pair(rng, M, K), mxfp8_pair(rng, N, K)
    sa, sb = a_np[1].copy(), b_np[1].copy()
    sa[5, 2] = 0xFF
    sb[70, 9] = 0xFF
    (c,) = run(mx.fast.metal_library(WARPGROUP_MX), "mx_128x128_8",
               {"A": (a[0], mx.array(sa)), "B": (b[0], mx.array(sb)), "C": nan_array((M, N), mx.float32)},
               (1, 1, 1), (256, 1, 1), "threadgroups")
    c = np.array(c).astype(np.float64)
    assert np.isnan(c[5]).all() and np.isnan(c[:, 70]).all()
    rest = np.delete(np.delete(c, 5, axis=0), 70, axis=1)
    assert_fp8_product_close(rest, np.delete(m4.dequantize(*a_np), 5, axis=0), np.delete(m4.dequantize(*b_np), 70, axis=0))


def test_seed_inline_mxfp8_tensors(rng):
    M, N, K = 96, 64, 160
    (a_np, a), (b_np, b) = mxfp8_pair(rng, M, K), mxfp8_pair(rng, N, K)
    (c,) = run(example("mxfp8_inline"), "matmul_inline",
               {"dataBufferA": a[0], "scalesBufferA": a[1], "dataBufferB": b[0], "scalesBufferB": b[1],
                "bufferC": nan_array((M * N,), mx.float32), "M": M, "N": N, "K": K},
               (N // 32, M // 32, 1), (128, 1, 1), "threadgroups")
    ref = m4.dequantize(*a_np) @ m4.dequantize(*b_np).T
    np.testing.assert_allclose(np.array(c).astype(np.float64).reshape(M, N), ref, rtol=1e-5,
                               atol=1e-6 * np.abs(ref).max())


def test_mlx_quantized_weights_feed_the_kernel(rng):
    """MXFP8 from mx.quantize(mode="mxfp8") (MLX's packing, viewed as bytes) is the
    plane layout the kernel reads; the result matches mx.dequantize's values."""
    M, N, K = 64, 64, 128
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    a, b = m4.mxfp8_from_float(x), m4.mxfp8_from_float(w)
    (c,) = run(example("mxfp8_matmul"), "matmul",
               {"matrixA": tuple(mx.array(v) for v in a), "matrixB": tuple(mx.array(v) for v in b),
                "matrixC": nan_array((M, N), mx.float16)}, (N // 32, M // 64, 1), (128, 1, 1), "threadgroups")
    wq, ws = mx.quantize(mx.array(w), group_size=32, bits=8, mode="mxfp8")
    w_deq = np.array(mx.dequantize(wq, ws, group_size=32, bits=8, mode="mxfp8")).astype(np.float64)
    np.testing.assert_allclose(m4.dequantize(*b), w_deq, rtol=0, atol=0)
    ref = m4.dequantize(*a) @ w_deq.T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=2e-3, atol=1e-3 * np.abs(ref).max())


def test_real_mlx_mxfp8_weights_feed_the_kernel(rng):
    """Real MLX as the oracle: weights quantized by mlx.core.quantize
    (mode="mxfp8"), viewed as bytes, are the kernel's (data, scales); the
    product matches mlx.core.dequantize's values in float64."""
    import mlx.core as mlx_core
    M, N, K = 64, 32, 96
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    planes = []
    for v in (x, w):
        q, sc = mlx_core.quantize(mlx_core.array(v), group_size=32, bits=8, mode="mxfp8")
        deq = mlx_core.dequantize(q, sc, group_size=32, bits=8, mode="mxfp8").astype(mlx_core.float32)
        deq = np.array(deq).astype(np.float64)
        planes.append(((mx.array(np.array(mlx_core.view(q, mlx_core.uint8))), mx.array(np.array(sc))), deq))
    (a, a_deq), (b, b_deq) = planes
    (c,) = run(example("mxfp8_matmul"), "matmul", {"matrixA": a, "matrixB": b, "matrixC": nan_array((M, N), mx.float16)},
               (1, 1, 1), (128, 1, 1), "threadgroups")
    ref = a_deq @ b_deq.T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=2e-3, atol=1e-3 * np.abs(ref).max())


@pytest.mark.parametrize("k0", [0, 5, 16, 33])
def test_slices_that_start_inside_a_scale_block(rng, k0):
    K = 96
    (a_np, a), (b_np, b) = mxfp8_pair(rng, 8, K), mxfp8_pair(rng, 8, K)
    (c,) = run(formats_lib(), "from_k0", {"A": a, "B": b, "C": nan_array((8, 8), mx.float32), "k0": k0},
               (1, 1, 1), (1, 1, 1))
    ref = m4.dequantize(*a_np)[:, k0:] @ m4.dequantize(*b_np)[:, k0:].T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-5, atol=1e-6 * np.abs(ref).max())


def test_scale_ff_is_nan_for_its_block_only(rng):
    K = 64
    (a_np, a), (b_np, b) = mxfp8_pair(rng, 8, K), mxfp8_pair(rng, 8, K)
    scales = a_np[1].copy()
    scales[3, 1] = 0xFF  # row 3, elements 32..63
    (c,) = run(formats_lib(), "from_k0", {"A": (a[0], mx.array(scales)), "B": b, "C": nan_array((8, 8), mx.float32),
                                          "k0": 0}, (1, 1, 1), (1, 1, 1))
    c = np.array(c)
    assert np.isnan(c[3]).all() and np.isfinite(np.delete(c, 3, axis=0)).all()


def test_unscaled_fp8_with_half(rng):
    M, N, K = 32, 48, 40
    a = rng.standard_normal((M, K)).astype(np.float16)
    b8 = (rng.standard_normal((N, K)) * 4).astype(ml_dtypes.float8_e5m2)
    a8 = (rng.standard_normal((M, K)) * 4).astype(ml_dtypes.float8_e5m2)
    c, c8 = run(formats_lib(), "mixed",
                {"A": mx.array(a), "B": mx.array(b8.view(np.uint8)), "A8": mx.array(a8.view(np.uint8)),
                 "C": nan_array((M, N), mx.float32), "C8": nan_array((M, N), mx.float16)},
                (N // 16 * 32, M // 16, 1), (32, 1, 1))
    bf = b8.astype(np.float64)
    np.testing.assert_allclose(np.array(c).astype(np.float64), a.astype(np.float64) @ bf.T, rtol=1e-5, atol=1e-4)
    ref8 = a8.astype(np.float64) @ bf.T
    np.testing.assert_allclose(np.array(c8).astype(np.float64), ref8, rtol=2e-3, atol=2e-3 * np.abs(ref8).max())


# MX (scaled) FP8 beside half at SIMD-group scopes, either side, slices that
# start inside a scale block: on the GPU the TF32 path, each code times its
# block's scale read as float (exact), float accumulation.
MX_HALF = r"""
using scales_plane = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mxfp8_tensor = tensor<device metal_fp8_e4m3_format, dextents<int, 2>, tensor_handle, scales_plane>;
template <bool SCALED_LEFT, typename U, int TM, int TN, int SG>
kernel void mx_half(mxfp8_tensor Q [[buffer(0)]], tensor<device const half, dextents<int, 2>> H [[buffer(1)]],
                    tensor<device U, dextents<int, 2>> C [[buffer(2)]], constant int& k0 [[buffer(3)]],
                    uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroups<SG>> op;
  auto c = C.slice(tgid.x * TN, tgid.y * TM);
  if (SCALED_LEFT) op.run(Q.slice(k0, tgid.y * TM), H.slice(k0, tgid.x * TN), c);
  else op.run(H.slice(k0, tgid.y * TM), Q.slice(k0, tgid.x * TN), c);
}
// Plain FP8 beside half, on tiles of whole warpgroups.
template <typename F, bool FP8_LEFT, int TM, int TN, int SG>
kernel void plain_half(tensor<device const F, dextents<int, 2>> Q [[buffer(0)]],
                       tensor<device const half, dextents<int, 2>> H [[buffer(1)]],
                       tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                       uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroups<SG>> op;
  auto c = C.slice(tgid.x * TN, tgid.y * TM);
  if (FP8_LEFT) op.run(Q.slice(0, tgid.y * TM), H.slice(0, tgid.x * TN), c);
  else op.run(H.slice(0, tgid.y * TM), Q.slice(0, tgid.x * TN), c);
}
template [[host_name("plain_e4m3_left")]] kernel void plain_half<metal_fp8_e4m3_format, true, 128, 128, 4>(
    tensor<device const metal_fp8_e4m3_format, dextents<int, 2>>, tensor<device const half, dextents<int, 2>>,
    tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("plain_e5m2_right")]] kernel void plain_half<metal_fp8_e5m2_format, false, 128, 128, 8>(
    tensor<device const metal_fp8_e5m2_format, dextents<int, 2>>, tensor<device const half, dextents<int, 2>>,
    tensor<device float, dextents<int, 2>>, uint2);
"""
# Tiles of 64 x 32 and 16 x 8 (the TF32 path on the GPU), and tiles of whole
# warpgroups (on sm_90a the MX side is decoded to half for the half wgmma
# where its scales allow; slices starting inside a block take the TF32 path).
MX_HALF_VARIANTS = [(left, u, tm, tn, sg) for left in (True, False) for u in ("float", "half")
                    for tm, tn, sg in ((64, 32, 4), (16, 8, 1))]
MX_HALF_VARIANTS += [(True, "float", 128, 128, 4), (False, "float", 128, 128, 8), (True, "half", 128, 64, 4)]


def mx_half_name(left, u, tm, tn, sg):
    return f"mx_half_{int(left)}_{u}_{tm}x{tn}_{sg}"


@functools.lru_cache(maxsize=None)
def mx_half_lib():
    inst = "".join(
        f'template [[host_name("{mx_half_name(*v)}")]] kernel void mx_half<{str(v[0]).lower()}, {v[1]}, {v[2]}, {v[3]}, {v[4]}>(\n'
        f"    mxfp8_tensor, tensor<device const half, dextents<int, 2>>, tensor<device {v[1]}, dextents<int, 2>>,\n"
        f"    constant int&, uint2);\n" for v in MX_HALF_VARIANTS)
    return mx.fast.metal_library(MX_HALF + inst, header=PRELUDE)


@pytest.mark.parametrize("scales", ["near", "wide"])
@pytest.mark.parametrize("k0", [0, 13])
@pytest.mark.parametrize("variant", MX_HALF_VARIANTS, ids=[mx_half_name(*v) for v in MX_HALF_VARIANTS])
def test_mxfp8_with_half_at_simdgroup_scopes(rng, variant, k0, scales):
    """Ragged M and N (the first tile whole, the next partial), K = 80 (a
    partial last block); "wide": scales over 30 octaves, more than decoding
    to half allows."""
    left, u, tm, tn, sg = variant
    M, N, K = 2 * tm - 5, 2 * tn - 3, 80
    q_rows, h_rows = (M, N) if left else (N, M)
    lo, hi = (112, 124) if scales == "near" else (98, 128)
    codes, scale_bytes = m4.random_mxfp8(rng, q_rows, K, scale_lo=lo, scale_hi=hi)
    q_np, q = (codes, scale_bytes), (mx.array(codes), mx.array(scale_bytes))
    h = rng.standard_normal((h_rows, K)).astype(np.float16)
    dt = mx.float32 if u == "float" else mx.float16
    (c,) = run(mx_half_lib(), mx_half_name(*variant),
               {"Q": q, "H": mx.array(h), "C": nan_array((M, N), dt), "k0": k0},
               (2, 2, 1), (32 * sg, 1, 1), "threadgroups")
    qf, hf = m4.dequantize(*q_np)[:, k0:], h.astype(np.float64)[:, k0:]
    a, b = (qf, hf) if left else (hf, qf)
    ref = a @ b.T
    # Float's accumulation over K - k0 <= 80 products, then the destination's rounding.
    dest_eps = 2.0 ** -11 if u == "half" else 0.0
    bound = 2.0 ** -17 * (np.abs(a) @ np.abs(b).T) + dest_eps * np.abs(ref) + (6e-8 if u == "half" else 0.0)
    err = np.abs(np.array(c.astype(mx.float32)).astype(np.float64) - ref)
    assert np.all(err <= bound), f"max error over bound {np.nanmax(err / bound):.3g}"


@pytest.mark.parametrize("name", ["plain_e4m3_left", "plain_e5m2_right"])
def test_plain_fp8_with_half_on_whole_warpgroups(rng, name):
    fmt = ml_dtypes.float8_e4m3fn if "e4m3" in name else ml_dtypes.float8_e5m2
    left = name.endswith("left")
    M, N, K = 256, 256, 96
    q8 = (rng.standard_normal((M if left else N, K)) * 4).astype(fmt)
    h = rng.standard_normal((N if left else M, K)).astype(np.float16)
    (c,) = run(mx_half_lib(), name, {"Q": mx.array(q8.view(np.uint8)), "H": mx.array(h),
                                     "C": nan_array((M, N), mx.float32)}, (2, 2, 1), (128 if left else 256, 1, 1),
               "threadgroups")
    a, b = (q8.astype(np.float64), h.astype(np.float64)) if left else (h.astype(np.float64), q8.astype(np.float64))
    ref = a @ b.T
    err = np.abs(np.array(c).astype(np.float64) - ref)
    assert np.all(err <= 2.0 ** -17 * (np.abs(a) @ np.abs(b).T)), f"max error {err.max():.3g}"


# ---- what Apple's compiler refuses: errors on the user's line ---------------

BAD = r"""using namespace metal;
using namespace mpp::tensor_ops;
using planes = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, BLOCK, 1>;
using mx8 = tensor<device metal_fp8_e4m3_format, dextents<int, 2>, tensor_handle, planes>;
kernel void bad(mx8 a [[buffer(0)]],
                RIGHT b [[buffer(1)]],
                tensor<device half, dextents<int, 2>> c [[buffer(2)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, dynamic_length_v<int>, false, TR);
  matmul2d<desc, execution_thread> op;
  op.run(a, b, c);
}
"""


@pytest.mark.parametrize("block,right,tr,line,message", [
    # The slide's (false, false) with a scaled right operand.
    ("32", "mx8", "false", 10, "a right operand with a scales plane must be transposed"),
    # (reported where the kernel's parameters instantiate the tensor type)
    ("16", "mx8", "true", 7, "scale blocks are 32 elements along dimension 0"),
    ("32", "tensor<device const metal_fp8_e5m2_format, dextents<int, 2>>", "true", 10,
     "combination of left, right and destination types is not supported"),
    ("32", "tensor<device const bfloat, dextents<int, 2>>", "true", 10,
     "combination of left, right and destination types is not supported"),
])
def test_what_apples_compiler_refuses_is_an_error_on_the_users_line(block, right, tr, line, message):
    source = BAD.replace("BLOCK", block).replace("RIGHT", right).replace("TR", tr)
    lib = mx.fast.metal_library(source, header=PRELUDE)
    quantized = right == "mx8"
    b = (mx.zeros((8, 32), dtype=mx.uint8), mx.zeros((8, 1), dtype=mx.uint8)) if quantized else \
        mx.zeros((8, 32), dtype=mx.bfloat16 if "bfloat" in right else mx.uint8)
    args = {"a": (mx.zeros((8, 32), dtype=mx.uint8), mx.zeros((8, 1), dtype=mx.uint8)), "b": b,
            "c": ((8, 8), mx.float16)}
    with pytest.raises(RuntimeError) as e:
        mx.eval(lib.kernel("bad")(args=args, grid=(1, 1, 1), threadgroup=(1, 1, 1), stream=STREAM))
    assert_compile_error_on_line(e.value, source, line, message)


def test_host_errors_name_the_parameter_and_the_fix(rng):
    lib = formats_lib()
    (_, a), (_, b) = mxfp8_pair(rng, 8, 64), mxfp8_pair(rng, 8, 64)
    c = ((8, 8), mx.float32)

    def call(**over):
        args = {"A": a, "B": b, "C": c, "k0": 0}
        args.update(over)
        return run(lib, "from_k0", args, (1, 1, 1), (1, 1, 1))

    with pytest.raises(TypeError, match="parameter 'A' .* is a quantized tensor: pass \\(data, scales\\)"):
        call(A=a[0])
    with pytest.raises(ValueError, match="parameter 'B': the scales plane must have shape \\(8, 2\\).*got \\(8, 3\\)"):
        call(B=(b[0], mx.zeros((8, 3), dtype=mx.uint8)))
    with pytest.raises(TypeError, match="the scales plane holds uint8 E8M0 scales; got mx.float32"):
        call(B=(b[0], mx.zeros((8, 2))))
    with pytest.raises(TypeError, match="parameter 'A' .* takes mx.uint8 elements; got mx.float32"):
        call(A=(mx.zeros((8, 64)), a[1]))
    # The earlier results and the process are intact.
    (ok,) = call()
    assert np.isfinite(np.array(ok)).all()

"""Metal 4's FP4 format (issue 15: "the fp8/fp4 formats where defined"):
metal_fp4_e2m1_format conversions against ml_dtypes, tensors of packed codes
(two a byte, low nibble first) read, sliced at odd offsets and stored by
neighbouring threads, MXFP4 tensors with a scales plane in matmul2d, MLX's own
mx.quantize(mode="mxfp4") words fed straight to a kernel (Alloy's and real
MLX's quantizer), and the errors for what the table refuses. Every launch runs
on the test device (ALLOY_TEST_DEVICE); references are float64 numpy on
ml_dtypes' decoding, on fresh random inputs (the seed is printed)."""
import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx

from conftest import DEVICE
from metal4_programs import PRELUDE, Program, pack_codes
from shared_fixtures import assert_compile_error_on_line

STREAM = mx.gpu if DEVICE == "gpu" else mx.cpu


PROGRAM = r"""
using scales_plane = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mxfp4_tensor = tensor<device metal_fp4_e2m1_format, dextents<int, 2>, tensor_handle, scales_plane>;
using fp4_matrix = tensor<device const metal_fp4_e2m1_format, dextents<int, 2>>;

kernel void decode(device const uchar* codes [[buffer(0)]],
                   device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  out[i] = float(as_type<metal_fp4_e2m1_format>(codes[i]));
}

kernel void encode(device const float* x [[buffer(0)]],
                   device uchar* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  out[i] = as_type<uchar>(metal_fp4_e2m1_format(x[i]));
}

// The slice of A from column c0 on, element by element: through t[i, j]
// inside, and load() one column past the edge (0).
kernel void unpack(fp4_matrix A [[buffer(0)]],
                   device float* out [[buffer(1)]],
                   constant int& c0 [[buffer(2)]],
                   uint2 gid [[thread_position_in_grid]]) {
  auto s = A.slice(c0, 0);
  const int w = s.get_extent(0) + 1;
  if (int(gid.x) >= w || int(gid.y) >= s.get_extent(1)) return;
  out[gid.y * w + gid.x] = int(gid.x) < s.get_extent(0) ? float(s[gid.x, gid.y]) : float(s.load(gid.x, gid.y)) + 0.25f;
}

// One thread per element: neighbours store the two halves of each byte.
kernel void pack(device const float* x [[buffer(0)]],
                 tensor<device metal_fp4_e2m1_format, dextents<int, 2>> Q [[buffer(1)]],
                 uint2 gid [[thread_position_in_grid]]) {
  Q.store(x[gid.y * Q.get_extent(0) + gid.x], gid.x, gid.y);
}

// C = A B^T over 16 x 16 tiles, one SIMD group each; A and B MXFP4.
kernel void mm(mxfp4_tensor A [[buffer(0)]],
               mxfp4_tensor B [[buffer(1)]],
               tensor<device float, dextents<int, 2>> C [[buffer(2)]],
               uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C.slice(tgid.x * 16, tgid.y * 16));
}

// A slice from K offset k0 (odd: inside a byte and a scale block), one thread.
kernel void from_k0(mxfp4_tensor A [[buffer(0)]],
                    mxfp4_tensor B [[buffer(1)]],
                    tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                    constant int& k0 [[buffer(3)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_thread> op;
  op.run(A.slice(k0, 0), B.slice(k0, 0), C);
}

// Unscaled FP4 beside half: half x fp4 -> float, fp4 x fp4 -> half.
kernel void mixed(tensor<device const half, dextents<int, 2>> A [[buffer(0)]],
                  fp4_matrix B [[buffer(1)]],
                  fp4_matrix A4 [[buffer(2)]],
                  tensor<device float, dextents<int, 2>> C [[buffer(3)]],
                  tensor<device half, dextents<int, 2>> C4 [[buffer(4)]],
                  uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C.slice(tgid.x * 16, tgid.y * 16));
  op.run(A4.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C4.slice(tgid.x * 16, tgid.y * 16));
}
"""


run = Program(PROGRAM, STREAM).run


def decode(codes):
    """float64 values of FP4 codes (the low nibble of each byte)."""
    return (np.asarray(codes, np.uint8) & 0xF).view(ml_dtypes.float4_e2m1fn).astype(np.float64)


def random_mxfp4(rng, rows, k, scale_lo=118, scale_hi=130):
    """(codes, packed bytes, scales) of a rows x k MXFP4 matrix."""
    codes = rng.integers(0, 16, size=(rows, k), dtype=np.uint8)
    scales = rng.integers(scale_lo, scale_hi + 1, size=(rows, -(-k // 32)), dtype=np.uint8)
    return codes, pack_codes(codes), scales


def dequantize(codes, scales):
    k = codes.shape[-1]
    block = np.repeat(scales.astype(np.float64) - 127, 32, axis=-1)[..., :k]
    return decode(codes) * np.exp2(block)


def test_every_code_decodes_as_ml_dtypes_does(rng):
    # Every code, under random high nibbles (which a value ignores).
    codes = (np.arange(256) % 16).astype(np.uint8) | (rng.integers(0, 16, 256, dtype=np.uint8) << 4)
    (got,) = run("decode", {"codes": mx.array(codes), "out": ((256,), mx.float32)}, (256, 1, 1), (64, 1, 1))
    got = np.array(got)
    np.testing.assert_array_equal(got, decode(codes).astype(np.float32))
    assert np.signbit(got[codes & 0xF == 8]).all() and not np.signbit(got[codes & 0xF == 0]).any()


def test_floats_round_to_nearest_even_and_saturate(rng):
    values = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)[:8]
    ties = ((values[:-1] + values[1:]) / 2).astype(np.float32)
    x = (rng.standard_normal(2048) * np.exp2(rng.integers(-4, 4, 2048))).astype(np.float32)
    special = np.array([0.0, -0.0, 6.0, 6.5, 7.0, 1e9, np.inf, -np.inf], np.float32)
    x = np.concatenate([x, ties, -ties, special, np.array([np.nan], np.float32)])
    (got,) = run("encode", {"x": mx.array(x), "out": ((x.size,), mx.uint8)}, (x.size, 1, 1), (64, 1, 1))
    got = np.array(got)
    finite = ~np.isnan(x)
    # ml_dtypes rounds to nearest even and saturates to +-6 (+-inf too).
    np.testing.assert_array_equal(got[finite], x[finite].astype(ml_dtypes.float4_e2m1fn).view(np.uint8))
    assert got[-1] == 7  # NaN, which E2M1 cannot hold: +6 (metal_fp4.h)


@pytest.mark.parametrize("c0", [0, 1, 6, 33])
def test_packed_tensor_elements_and_odd_slices(rng, c0):
    R, C = 5, 70
    codes = rng.integers(0, 16, size=(R, C), dtype=np.uint8)
    W = C - c0 + 1
    (out,) = run("unpack", {"A": mx.array(pack_codes(codes)), "out": ((R, W), mx.float32), "c0": c0},
                 (W, R, 1), (8, 4, 1))
    out = np.array(out)
    np.testing.assert_array_equal(out[:, :-1], decode(codes)[:, c0:].astype(np.float32))
    np.testing.assert_array_equal(out[:, -1], 0.25)  # load() past the edge: 0


def test_neighbouring_threads_store_both_halves_of_a_byte(rng):
    R, C = 33, 130
    x = (rng.standard_normal((R, C)) * 3).astype(np.float32)
    # In-out, starting from a poison: a nibble lost to the other half's
    # read-modify-write of its byte would show as 0x5 or 0xA.
    poison = mx.array(np.full((R, C // 2), 0x5A, np.uint8))
    (q,) = run("pack", {"x": mx.array(x), "Q": poison}, (C, R, 1), (32, 4, 1))
    want = pack_codes(x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8))
    np.testing.assert_array_equal(np.array(q), want)


@pytest.mark.parametrize("M,N,K", [(32, 48, 64), (16, 16, 96), (40, 24, 80)])
def test_mxfp4_matmul_dequantizes_per_block(rng, M, N, K):
    a_codes, a_bytes, a_scales = random_mxfp4(rng, M, K)
    b_codes, b_bytes, b_scales = random_mxfp4(rng, N, K)
    c = mx.array(np.full((M, N), np.nan, np.float32))
    (c,) = run("mm", {"A": (mx.array(a_bytes), mx.array(a_scales)), "B": (mx.array(b_bytes), mx.array(b_scales)),
                      "C": c}, (-(-N // 16), -(-M // 16), 1), (32, 1, 1), "threadgroups")
    ref = dequantize(a_codes, a_scales) @ dequantize(b_codes, b_scales).T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("k0", [0, 1, 7, 33])
def test_slices_that_start_inside_a_byte_and_a_block(rng, k0):
    K = 96
    a_codes, a_bytes, a_scales = random_mxfp4(rng, 8, K)
    b_codes, b_bytes, b_scales = random_mxfp4(rng, 8, K)
    (c,) = run("from_k0", {"A": (mx.array(a_bytes), mx.array(a_scales)), "B": (mx.array(b_bytes), mx.array(b_scales)),
                           "C": mx.array(np.full((8, 8), np.nan, np.float32)), "k0": k0}, (1, 1, 1), (1, 1, 1))
    ref = dequantize(a_codes, a_scales)[:, k0:] @ dequantize(b_codes, b_scales)[:, k0:].T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


def test_unscaled_fp4_with_half(rng):
    M, N, K = 32, 48, 40
    a = rng.standard_normal((M, K)).astype(np.float16)
    b_codes = rng.integers(0, 16, size=(N, K), dtype=np.uint8)
    a4_codes = rng.integers(0, 16, size=(M, K), dtype=np.uint8)
    (c, c4) = run("mixed", {"A": mx.array(a), "B": mx.array(pack_codes(b_codes)),
                            "A4": mx.array(pack_codes(a4_codes)),
                            "C": mx.array(np.full((M, N), np.nan, np.float32)),
                            "C4": mx.array(np.full((M, N), np.nan, np.float16))},
                  (N // 16, M // 16, 1), (32, 1, 1), "threadgroups")
    ref = a.astype(np.float64) @ decode(b_codes).T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())
    ref4 = decode(a4_codes) @ decode(b_codes).T  # exact in float; rounded once to half
    np.testing.assert_array_equal(np.array(c4), ref4.astype(np.float16))


def test_mlx_mxfp4_words_feed_the_kernel(rng):
    """mx.quantize(mode="mxfp4")'s uint32 words (8 codes each, low nibble
    first) and its scales are the kernel's (data, scales) as they come; the
    product matches mx.dequantize's values."""
    M, N, K = 32, 16, 128
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    quantized = [mx.quantize(mx.array(v), group_size=32, bits=4, mode="mxfp4") for v in (x, w)]
    assert quantized[0][0].dtype == mx.uint32
    deq = [np.array(mx.dequantize(q, s, group_size=32, bits=4, mode="mxfp4")).astype(np.float64) for q, s in quantized]
    (c,) = run("mm", {"A": quantized[0], "B": quantized[1], "C": mx.array(np.full((M, N), np.nan, np.float32))},
               (N // 16, M // 16, 1), (32, 1, 1), "threadgroups")
    ref = deq[0] @ deq[1].T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


def test_real_mlx_mxfp4_weights_feed_the_kernel(rng):
    """Real MLX as the oracle: mlx.core.quantize(mode="mxfp4")'s words and
    scales, and mlx.core.dequantize's values in float64."""
    import mlx.core as mlx_core
    M, N, K = 16, 32, 96
    planes = []
    for rows in (M, N):
        v = rng.standard_normal((rows, K)).astype(np.float32)
        q, sc = mlx_core.quantize(mlx_core.array(v), group_size=32, bits=4, mode="mxfp4")
        deq = np.array(mlx_core.dequantize(q, sc, group_size=32, bits=4, mode="mxfp4").astype(mlx_core.float32))
        planes.append(((mx.array(np.array(q)), mx.array(np.array(sc))), deq.astype(np.float64)))
    (a, a_deq), (b, b_deq) = planes
    (c,) = run("mm", {"A": a, "B": b, "C": mx.array(np.full((M, N), np.nan, np.float32))},
               (N // 16, M // 16, 1), (32, 1, 1), "threadgroups")
    ref = a_deq @ b_deq.T
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


BAD = r"""
using planes = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mx4 = tensor<device metal_fp4_e2m1_format, dextents<int, 2>, tensor_handle, planes>;

kernel void bad(mx4 a [[buffer(0)]],
                RIGHT b [[buffer(1)]],
                tensor<device float, dextents<int, 2>> c [[buffer(2)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_thread> op;
  op.run(a, b, c);
}
"""


@pytest.mark.parametrize("right", ["tensor<device const metal_fp8_e4m3_format, dextents<int, 2>>",
                                   "tensor<device const bfloat, dextents<int, 2>>"])
def test_fp4_beside_another_format_is_an_error_on_the_users_line(right):
    source = BAD.replace("RIGHT", right)
    bad = mx.fast.metal_library(source, header=PRELUDE)
    b = mx.zeros((8, 32), dtype=mx.bfloat16 if "bfloat" in right else mx.uint8)
    args = {"a": (mx.zeros((8, 16), dtype=mx.uint8), mx.zeros((8, 1), dtype=mx.uint8)), "b": b,
            "c": ((8, 8), mx.float32)}
    with pytest.raises(RuntimeError) as e:
        mx.eval(bad.kernel("bad")(args=args, grid=(1, 1, 1), threadgroup=(1, 1, 1), stream=STREAM))
    assert_compile_error_on_line(e.value, source, 10, "combination of left, right and destination types is not supported")


def test_host_errors_name_the_parameter_and_the_fix(rng):
    _, a_bytes, a_scales = random_mxfp4(rng, 8, 64)
    a = (mx.array(a_bytes), mx.array(a_scales))

    def call(**over):
        args = {"A": a, "B": a, "C": ((8, 8), mx.float32), "k0": 0}
        args.update(over)
        return run("from_k0", args, (1, 1, 1), (1, 1, 1))

    with pytest.raises(TypeError, match="parameter 'A' .* takes packed FP4 codes, two a byte .*got mx.float32"):
        call(A=(mx.zeros((8, 32)), a[1]))
    # 32 bytes are 64 codes: two scales a row, not one.
    with pytest.raises(ValueError, match="parameter 'B': the scales plane must have shape \\(8, 2\\).*2 FP4 codes "
                                         "to an array element.*got \\(8, 1\\)"):
        call(B=(a[0], mx.zeros((8, 1), dtype=mx.uint8)))
    with pytest.raises(ValueError, match="parameter 'B': the scales plane must have shape \\(8, 2\\).*8 FP4 codes"):
        call(B=(mx.zeros((8, 8), dtype=mx.uint32), mx.zeros((8, 3), dtype=mx.uint8)))
    (ok,) = call()
    assert np.isfinite(np.array(ok)).all()

"""Metal 4's 4-bit and 2-bit integer tensor formats (issue 15: the type
combinations Apple lists): int4b_format (-8..7) and uint4b_format (0..15),
packed two a byte, low nibble first, as FP4 is (metal_fp4.h), and
int2b_format (-2..1) and uint2b_format (0..3), four a byte, lowest bits
first; decoded, encoded (rounded to nearest even and saturated), stored by
neighbouring threads, and as matmul2d's right operand: half and bfloat x
int4b/uint4b and half x int2b/uint2b -> that type or float, int8 x
int4b/int2b and uint8 x uint4b -> int32. References are float64 (or
exact integer) numpy on fresh random inputs (the seed is printed); every
launch runs on the test device."""
import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx

from conftest import DEVICE
from metal4_programs import PRELUDE, Program, pack_codes
from shared_fixtures import assert_compile_error_on_line

STREAM = mx.gpu if DEVICE == "gpu" else mx.cpu


PROGRAM = r"""
#if !__HAVE_INT4B_FORMAT_TYPE__ || !__HAVE_INT2B_FORMAT_TYPE__
#error "no 4-bit or 2-bit integer formats"
#endif
kernel void decode(device const uchar* codes [[buffer(0)]],
                   device int* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  out[2 * i] = int(as_type<int4b_format>(codes[i]));
  out[2 * i + 1] = int(float(as_type<uint4b_format>(codes[i])));
}

kernel void encode(device const float* x [[buffer(0)]],
                   device uchar* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  out[2 * i] = as_type<uchar>(int4b_format(x[i]));
  out[2 * i + 1] = as_type<uchar>(uint4b_format(x[i]));
}

// One thread per element: neighbours store the two halves of each byte.
kernel void pack(device const int* x [[buffer(0)]],
                 tensor<device int4b_format, dextents<int, 2>> Q [[buffer(1)]],
                 uint2 gid [[thread_position_in_grid]]) {
  Q[gid.x, gid.y] = x[gid.y * Q.get_extent(0) + gid.x];
}

// C = A B^T over 16 x 16 tiles, one SIMD group each: A half (M, K), B int4b
// (N, K) packed; and the same with bfloat x uint4b -> bfloat.
kernel void mm_half(tensor<device const half, dextents<int, 2>> A [[buffer(0)]],
                    tensor<device const int4b_format, dextents<int, 2>> B [[buffer(1)]],
                    tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                    uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C.slice(tgid.x * 16, tgid.y * 16));
}
kernel void mm_bfloat(tensor<device const bfloat, dextents<int, 2>> A [[buffer(0)]],
                      tensor<device const uint4b_format, dextents<int, 2>> B [[buffer(1)]],
                      tensor<device bfloat, dextents<int, 2>> C [[buffer(2)]],
                      uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C.slice(tgid.x * 16, tgid.y * 16));
}

// Integers, one thread: int8 x int4b and uint8 x uint4b -> int32, exactly.
kernel void mm_int(tensor<device const char, dextents<int, 2>> A [[buffer(0)]],
                   tensor<device const int4b_format, dextents<int, 2>> B [[buffer(1)]],
                   tensor<device const uchar, dextents<int, 2>> UA [[buffer(2)]],
                   tensor<device const uint4b_format, dextents<int, 2>> UB [[buffer(3)]],
                   tensor<device int, dextents<int, 2>> C [[buffer(4)]],
                   tensor<device int, dextents<int, 2>> UC [[buffer(5)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_thread> op;
  op.run(A, B, C);
  op.run(UA, UB, UC);
}

kernel void decode2(device const uchar* codes [[buffer(0)]],
                    device int* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
  out[2 * i] = int(as_type<int2b_format>(codes[i]));
  out[2 * i + 1] = int(float(as_type<uint2b_format>(codes[i])));
}

// One thread per element: four neighbours store the four codes of each byte.
kernel void pack2(device const int* x [[buffer(0)]],
                  tensor<device int2b_format, dextents<int, 2>> Q [[buffer(1)]],
                  uint2 gid [[thread_position_in_grid]]) {
  Q[gid.x, gid.y] = x[gid.y * Q.get_extent(0) + gid.x];
}

// half x int2b -> float over 16 x 16 tiles; half x uint2b -> half and
// int8 x int2b -> int32 in one thread.
kernel void mm2_half(tensor<device const half, dextents<int, 2>> A [[buffer(0)]],
                     tensor<device const int2b_format, dextents<int, 2>> B [[buffer(1)]],
                     tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                     uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A.slice(0, tgid.y * 16), B.slice(0, tgid.x * 16), C.slice(tgid.x * 16, tgid.y * 16));
}
kernel void mm2_small(tensor<device const half, dextents<int, 2>> A [[buffer(0)]],
                      tensor<device const uint2b_format, dextents<int, 2>> UB [[buffer(1)]],
                      tensor<device half, dextents<int, 2>> C [[buffer(2)]],
                      tensor<device const char, dextents<int, 2>> IA [[buffer(3)]],
                      tensor<device const int2b_format, dextents<int, 2>> IB [[buffer(4)]],
                      tensor<device int, dextents<int, 2>> IC [[buffer(5)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_thread> op;
  op.run(A, UB, C);
  op.run(IA, IB, IC);
}
"""


run = Program(PROGRAM, STREAM).run


def signed(codes, bits=4):
    codes = np.asarray(codes, np.int64) & ((1 << bits) - 1)
    return np.where(codes >= 1 << (bits - 1), codes - (1 << bits), codes)


@pytest.mark.parametrize("bits,kernel", [(4, "decode"), (2, "decode2")])
def test_every_code_decodes(rng, bits, kernel):
    # Every code, under random high bits (which a value ignores).
    n = 1 << bits
    codes = (np.arange(256) % n).astype(np.uint8) | (rng.integers(0, 256 // n, 256, dtype=np.uint8) << bits)
    (got,) = run(kernel, {"codes": mx.array(codes), "out": ((512,), mx.int32)}, (256, 1, 1), (64, 1, 1))
    got = np.array(got).reshape(256, 2)
    np.testing.assert_array_equal(got[:, 0], signed(codes, bits))
    np.testing.assert_array_equal(got[:, 1], codes & (n - 1))


def test_numbers_round_to_nearest_even_and_saturate(rng):
    x = (rng.standard_normal(2048) * 6).astype(np.float32)
    special = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -8.5, 7.5, 15.5, 16, -1, 1e9, -1e9, np.inf, -np.inf, np.nan],
                       np.float32)
    x = np.concatenate([x, special])
    (got,) = run("encode", {"x": mx.array(x), "out": ((2 * x.size,), mx.uint8)}, (x.size, 1, 1), (64, 1, 1))
    got = np.array(got).reshape(-1, 2)
    r = np.rint(np.nan_to_num(x.astype(np.float64), nan=0.0))  # numpy's rint: to nearest even
    np.testing.assert_array_equal(signed(got[:, 0]), np.clip(r, -8, 7))
    np.testing.assert_array_equal(got[:, 1], np.clip(r, 0, 15))
    assert (got[:, 0] >> 4 == 0).all()  # a fresh value's high nibble is 0


@pytest.mark.parametrize("bits,kernel,R,C", [(4, "pack", 17, 66), (2, "pack2", 9, 68)])
def test_neighbouring_threads_store_the_codes_of_a_byte(rng, bits, kernel, R, C):
    # Two (four) threads store the codes of one byte: a code lost to another's
    # read-modify-write of the byte would show the poison's bits.
    half = 1 << (bits - 1)
    x = rng.integers(-half, half, size=(R, C)).astype(np.int32)
    poison = mx.array(np.full((R, C * bits // 8), 0x5A, np.uint8))
    (q,) = run(kernel, {"x": mx.array(x), "Q": poison}, (C, R, 1), (32, 4, 1))
    np.testing.assert_array_equal(np.array(q), pack_codes(x, bits))


@pytest.mark.parametrize("M,N,K", [(32, 48, 64), (16, 16, 96), (40, 24, 70)])
def test_half_times_int4b_and_bfloat_times_uint4b(rng, M, N, K):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.integers(-8, 8, size=(N, K))
    grid = (-(-N // 16), -(-M // 16), 1)
    (c,) = run("mm_half", {"A": mx.array(a), "B": mx.array(pack_codes(b)), "C": mx.array(np.full((M, N), np.nan, np.float32))},
               grid, (32, 1, 1), "threadgroups")
    ref = a.astype(np.float64) @ b.T.astype(np.float64)
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())

    ab = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    ub = rng.integers(0, 16, size=(N, K))
    poison = mx.array(np.full((M, N), np.nan, np.float32)).astype(mx.bfloat16)
    (cb,) = run("mm_bfloat", {"A": mx.array(ab.astype(np.float32)).astype(mx.bfloat16), "B": mx.array(pack_codes(ub)),
                              "C": poison}, grid, (32, 1, 1), "threadgroups")
    ref = ab.astype(np.float64) @ ub.T.astype(np.float64)
    # One rounding to bfloat of a float32 sum.
    np.testing.assert_allclose(np.array(cb.astype(mx.float32)).astype(np.float64), ref, rtol=2 ** -7,
                               atol=2 ** -7 * np.abs(ref).max())


def test_int8_times_int4b_and_uint8_times_uint4b_are_exact(rng):
    K = 90
    a = rng.integers(-128, 128, size=(8, K)).astype(np.int8)
    b = rng.integers(-8, 8, size=(8, K))
    ua = rng.integers(0, 256, size=(8, K)).astype(np.uint8)
    ub = rng.integers(0, 16, size=(8, K))
    poison = np.full((8, 8), -12345, np.int32)
    c, uc = run("mm_int", {"A": mx.array(a), "B": mx.array(pack_codes(b)), "UA": mx.array(ua), "UB": mx.array(pack_codes(ub)),
                           "C": mx.array(poison), "UC": mx.array(poison)}, (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(np.array(c), a.astype(np.int64) @ b.T)
    np.testing.assert_array_equal(np.array(uc), ua.astype(np.int64) @ ub.T)


def test_uint32_words_hold_eight_codes(rng):
    # 4-bit affine quantization's words: eight codes each, low nibble first.
    M, N, K = 16, 16, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.integers(-8, 8, size=(N, K))
    words = pack_codes(b).view(np.uint32)
    (c,) = run("mm_half", {"A": mx.array(a), "B": mx.array(words), "C": mx.array(np.full((M, N), np.nan, np.float32))},
               (1, 1, 1), (32, 1, 1), "threadgroups")
    ref = a.astype(np.float64) @ b.T.astype(np.float64)
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


ARRAY_OF = {"int4b_format": (mx.uint8, 16), "uint4b_format": (mx.uint8, 16), "int2b_format": (mx.uint8, 8),
            "uint2b_format": (mx.uint8, 8), "half": (mx.float16, 32), "bfloat": (mx.bfloat16, 32),
            "char": (mx.int8, 32), "uchar": (mx.uint8, 32), "float": (mx.float32, 32), "int": (mx.int32, 8)}


@pytest.mark.parametrize("left,right,dest", [("int4b_format", "half", "float"), ("half", "int4b_format", "int"),
                                             ("char", "uint4b_format", "int"), ("float", "int4b_format", "float"),
                                             ("bfloat", "int2b_format", "float"),
                                             ("uchar", "uint2b_format", "int")])
def test_combinations_apple_does_not_list_are_compile_errors_on_the_users_line(left, right, dest):
    source = f"""
kernel void k(tensor<device const {left}, dextents<int, 2>> A [[buffer(0)]],
              tensor<device const {right}, dextents<int, 2>> B [[buffer(1)]],
              tensor<device {dest}, dextents<int, 2>> C [[buffer(2)]]) {{
  constexpr auto desc = matmul2d_descriptor(8, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_thread> op;
  op.run(A, B, C);
}}
"""
    bad = mx.fast.metal_library(source, header=PRELUDE)
    (ad, ak), (bd, bk) = ARRAY_OF[left], ARRAY_OF[right]
    args = {"A": mx.zeros((8, ak), dtype=ad), "B": mx.zeros((8, bk), dtype=bd), "C": ((8, 8), ARRAY_OF[dest][0])}
    with pytest.raises(RuntimeError) as e:
        mx.eval(bad.kernel("k")(args=args, grid=(1, 1, 1), threadgroup=(1, 1, 1), stream=STREAM))
    assert_compile_error_on_line(e.value, source, 7, "combination of left, right and destination types is not supported")


def test_an_array_of_another_dtype_is_a_type_error_naming_the_parameter(rng):
    a = mx.array(rng.standard_normal((16, 64)).astype(np.float16))
    with pytest.raises(TypeError, match="parameter 'B' .* takes packed 4-bit integer codes, two a byte .*got mx.float32"):
        run("mm_half", {"A": a, "B": mx.zeros((16, 64), dtype=mx.float32), "C": ((16, 16), mx.float32)}, (1, 1, 1),
            (32, 1, 1), "threadgroups")


@pytest.mark.parametrize("M,N,K", [(32, 16, 64), (24, 40, 72)])
def test_half_times_int2b(rng, M, N, K):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.integers(-2, 2, size=(N, K))
    (c,) = run("mm2_half", {"A": mx.array(a), "B": mx.array(pack_codes(b, 2)),
                            "C": mx.array(np.full((M, N), np.nan, np.float32))},
               (-(-N // 16), -(-M // 16), 1), (32, 1, 1), "threadgroups")
    ref = a.astype(np.float64) @ b.T.astype(np.float64)
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_half_times_uint2b_and_int8_times_int2b(rng):
    K = 36  # 2-bit words: 16 codes each, so 32-bit words would not divide K
    a = rng.standard_normal((8, K)).astype(np.float16)
    ub = rng.integers(0, 4, size=(8, K))
    ia = rng.integers(-128, 128, size=(8, K)).astype(np.int8)
    ib = rng.integers(-2, 2, size=(8, K))
    c, ic = run("mm2_small", {"A": mx.array(a), "UB": mx.array(pack_codes(ub, 2)),
                              "C": mx.array(np.full((8, 8), np.nan, np.float16)), "IA": mx.array(ia),
                              "IB": mx.array(pack_codes(ib, 2)), "IC": mx.array(np.full((8, 8), -12345, np.int32))},
                (1, 1, 1), (1, 1, 1))
    ref = a.astype(np.float64) @ ub.T.astype(np.float64)
    # One rounding to half of a float32 sum.
    np.testing.assert_allclose(np.array(c).astype(np.float64), ref, rtol=2 ** -10, atol=2 ** -10 * np.abs(ref).max())
    np.testing.assert_array_equal(np.array(ic), ia.astype(np.int64) @ ib.T)

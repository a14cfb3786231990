"""Metal 4 cooperative tensors (issue 15) in mx.fast.metal_library:
matmul2d into a destination cooperative tensor, reduce_rows /
reduce_columns with map_iterator (the WWDC softmax), element access and
multidimensional indices, load/store, multiply_accumulate, and the tile
reused as the next matmul's left input directly or through threadgroup
memory, at execution_simdgroup and execution_thread scope. Checked against
numpy float64 on fresh random inputs. Every launch runs on the test device
(ALLOY_TEST_DEVICE: the CPU by default, the GPU in gpu_check)."""
import numpy as np
import pytest

import alloy.core as mx

from conftest import DEVICE
from shared_fixtures import assert_compile_error_on_line

STREAM = mx.gpu if DEVICE == "gpu" else mx.cpu

M, N, D, DV = 16, 16, 32, 24

PROGRAM = r"""
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

using in_t = tensor<device const float, dextents<int, 2>>;
using out_t = tensor<device float, dextents<int, 2>>;

// S = Q K^T (Q: M x D, K: N x D, both row-major), then each row's softmax
// through the cooperative tile: the row max by reduce_rows (identity
// -INFINITY), exp(s - max) by map_iterator, the row sum, a division.
template <typename Scope>
kernel void softmax_tile(in_t Q [[buffer(0)]], in_t K [[buffer(1)]], out_t P [[buffer(2)]],
                         out_t row_max [[buffer(3)]], out_t row_sum [[buffer(4)]],
                         out_t positions [[buffer(5)]],
                         uint lid [[thread_index_in_threadgroup]]) {
  constexpr auto qk = matmul2d_descriptor(16, 16, 32, false, true);
  matmul2d<qk, Scope> op;
  auto ct = op.template get_destination_cooperative_tensor<decltype(Q), decltype(K), float>();
  op.run(Q, K, ct);
  auto ct_max = op.template get_row_reduction_destination_cooperative_tensor<decltype(Q), decltype(K), float>();
  reduce_rows(ct, ct_max, reduction_operation::max, -INFINITY);
  for (auto it = ct.begin(); it != ct.end(); it++) {
    auto row_it = ct_max.map_iterator(it);
    *it = exp(*it - *row_it);
  }
  auto ct_sum = op.template get_row_reduction_destination_cooperative_tensor<decltype(Q), decltype(K), float>();
  reduce_rows(ct, ct_sum, reduction_operation::sum);
  for (auto it = ct.begin(); it != ct.end(); it++) {
    *it = *it / *ct_sum.map_iterator(it);
    auto idx = it.get_multidimensional_index();
    positions[idx[0], idx[1]] = float(lid);  // which thread held the element
  }
  // Stores are cooperative: every thread of the scope takes part (a row
  // reduction's elements are spread over the lanes in Alloy's CUDA layout).
  ct.store(P);
  ct_max.store(row_max);
  ct_sum.store(row_sum);
}
template [[host_name("softmax_simdgroup")]] kernel void softmax_tile<execution_simdgroup>(
    in_t, in_t, out_t, out_t, out_t, out_t, uint);
template [[host_name("softmax_thread")]] kernel void softmax_tile<execution_thread>(
    in_t, in_t, out_t, out_t, out_t, out_t, uint);

// O = P V with P = Q K^T kept in its cooperative tile (V: N x DV row-major):
// direct reuse as the left input, or through threadgroup memory as the
// seed's fallback does.
template <bool Direct>
kernel void reuse_tile(in_t Q [[buffer(0)]], in_t K [[buffer(1)]], in_t V [[buffer(2)]], out_t O [[buffer(3)]],
                       uint lid [[thread_index_in_threadgroup]]) {
  constexpr auto qk = matmul2d_descriptor(16, 16, 32, false, true);
  constexpr auto sv = matmul2d_descriptor(16, 24, 16);
  matmul2d<qk, execution_simdgroup> op1;
  matmul2d<sv, execution_simdgroup> op2;
  auto ct = op1.get_destination_cooperative_tensor<decltype(Q), decltype(K), float>();
  op1.run(Q, K, ct);
  auto ct_out = op2.get_destination_cooperative_tensor<decltype(Q), decltype(V), float>();
  threadgroup float staging[16 * 16];
  tensor<threadgroup float, extents<int, 16, 16>, tensor_inline> tg(staging, extents<int, 16, 16>());
  if (Direct) {
    auto in = op2.get_left_input_cooperative_tensor<float, float, float>(ct);
    op2.run(in, V, ct_out);
  } else {
    ct.store(tg);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    auto in = op2.get_left_input_cooperative_tensor<float, float, float>();
    in.load(tg);
    op2.run(in, V, ct_out);
  }
  ct_out.store(O);
}
template [[host_name("reuse_direct")]] kernel void reuse_tile<true>(in_t, in_t, in_t, out_t, uint);
template [[host_name("reuse_staged")]] kernel void reuse_tile<false>(in_t, in_t, in_t, out_t, uint);

// C = A B with B loaded into the op's right-input tile first (B is K x N
// row-major, or N x K with transpose_right).
template <bool TR>
kernel void right_tile(in_t A [[buffer(0)]], in_t B [[buffer(1)]], out_t C [[buffer(2)]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, 16, false, TR);
  matmul2d<desc, execution_simdgroup> op;
  auto b = op.template get_right_input_cooperative_tensor<float, float, float>();
  b.load(B);
  auto ct = op.template get_destination_cooperative_tensor<decltype(A), decltype(B), float>();
  op.run(A, b, ct);
  ct.store(C);
}
// C = A D with D = X Y^T kept in its cooperative tile and passed on as the
// next op's right input (extents (N, K): D's columns are C's).
kernel void right_from_tile(in_t X [[buffer(0)]], in_t Y [[buffer(1)]], in_t A [[buffer(2)]],
                            out_t C [[buffer(3)]]) {
  constexpr auto xy = matmul2d_descriptor(16, 24, 32, false, true);
  constexpr auto ad = matmul2d_descriptor(8, 24, 16);
  matmul2d<xy, execution_simdgroup> op1;
  matmul2d<ad, execution_simdgroup> op2;
  auto d = op1.get_destination_cooperative_tensor<decltype(X), decltype(Y), float>();
  op1.run(X, Y, d);
  auto right = op2.get_right_input_cooperative_tensor<float, float, float>(d);
  auto ct = op2.get_destination_cooperative_tensor<decltype(A), decltype(right), float>();
  op2.run(A, right, ct);
  ct.store(C);
}
template [[host_name("right_tile")]] kernel void right_tile<false>(in_t, in_t, out_t);
template [[host_name("right_tile_t")]] kernel void right_tile<true>(in_t, in_t, out_t);

// C + A B into a cooperative tile loaded from C (multiply_accumulate), its
// column sums and minima (reduce_columns), and a row of B broadcast by load.
kernel void accumulate_tile(in_t A [[buffer(0)]], in_t B [[buffer(1)]], in_t C [[buffer(2)]],
                            in_t bias [[buffer(3)]], out_t out [[buffer(4)]], out_t col_sum [[buffer(5)]],
                            out_t col_min [[buffer(6)]], out_t biased [[buffer(7)]],
                            uint lid [[thread_index_in_threadgroup]]) {
  constexpr auto desc = matmul2d_descriptor(16, 16, 0, false, false, false,
                                            matmul2d_descriptor::mode::multiply_accumulate);
  matmul2d<desc, execution_simdgroup> op;
  auto ct = op.get_destination_cooperative_tensor<decltype(A), decltype(B), float>();
  ct.load(C);
  op.run(A, B, ct);
  ct.store(out);
  auto sums = op.get_column_reduction_destination_cooperative_tensor<decltype(A), decltype(B), float>();
  reduce_columns(ct, sums);
  auto mins = op.get_column_reduction_destination_cooperative_tensor<decltype(A), decltype(B), float>();
  reduce_columns(ct, mins, reduction_operation::min, INFINITY);
  auto b = op.get_destination_cooperative_tensor<decltype(A), decltype(B), float>();
  b.load(bias);  // (16, 1): one row, broadcast down the rows
  b.store(biased);
  sums.store(col_sum);
  mins.store(col_min);
}
"""


@pytest.fixture(scope="module")
def lib():
    return mx.fast.metal_library(PROGRAM)


def run(lib, name, args, threads):
    return lib.kernel(name)(args=args, grid=(threads, 1, 1), threadgroup=(threads, 1, 1), stream=STREAM)


def poisoned(shape):
    return mx.full(shape, np.nan, dtype=mx.float32)


@pytest.mark.parametrize("name,threads", [("softmax_simdgroup", 32), ("softmax_thread", 1)])
def test_softmax_through_row_reductions_and_map_iterator(lib, rng, name, threads):
    q = rng.standard_normal((M, D)).astype(np.float32)
    k = rng.standard_normal((N, D)).astype(np.float32)
    p, row_max, row_sum, positions = run(lib, name, {
        "Q": mx.array(q), "K": mx.array(k), "P": poisoned((M, N)), "row_max": poisoned((M, 1)),
        "row_sum": poisoned((M, 1)), "positions": poisoned((M, N))}, threads)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(np.array(row_max)[:, 0], s.max(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(row_sum)[:, 0], e.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(np.array(p), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    # The layout. GPU, a 16 x 8-divisible tile of one SIMD group: the tensor
    # cores' accumulator layout, element (r, c) held by lane 4 (r % 8) + (c % 8) / 2.
    # CPU, a 16 x 16-divisible one: Apple's (MLX's NAX get_coord), row
    # r % 8 = 4 b4 + 2 b2 + b1 and column group (c % 16) / 4 = 2 b3 + b0 of
    # lane b4..b0. Otherwise flat element f (column fastest) is held by
    # thread f % threads.
    rows, cols = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    if DEVICE == "gpu" and threads == 32:
        expected = 4 * (rows % 8) + (cols % 8) // 2
    elif threads == 32 and M % 16 == 0 and N % 16 == 0:
        r, g = rows % 8, (cols % 16) // 4
        expected = 16 * (r >> 2) + 8 * (g >> 1) + 4 * ((r >> 1) & 1) + 2 * (r & 1) + (g & 1)
    else:
        expected = (rows * N + cols) % threads
    np.testing.assert_array_equal(np.array(positions), expected)


@pytest.mark.parametrize("name", ["reuse_direct", "reuse_staged"])
def test_a_destination_tile_as_the_next_left_input(lib, rng, name):
    q = rng.standard_normal((M, D)).astype(np.float32)
    k = rng.standard_normal((N, D)).astype(np.float32)
    v = rng.standard_normal((N, DV)).astype(np.float32)
    (o,) = run(lib, name, {"Q": mx.array(q), "K": mx.array(k), "V": mx.array(v), "O": poisoned((M, DV))}, 32)
    ref = (q.astype(np.float64) @ k.astype(np.float64).T) @ v.astype(np.float64)
    mag = (np.abs(q).astype(np.float64) @ np.abs(k).astype(np.float64).T) @ np.abs(v).astype(np.float64)
    assert np.all(np.abs(np.array(o) - ref) <= 1e-5 * mag + 1e-6)


@pytest.mark.parametrize("name,transposed", [("right_tile", False), ("right_tile_t", True)])
def test_a_loaded_right_input_tile(lib, rng, name, transposed):
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)  # K x N
    b_arg = b.T.copy() if transposed else b
    (c,) = run(lib, name, {"A": mx.array(a), "B": mx.array(b_arg), "C": poisoned((16, 16))}, 32)
    np.testing.assert_allclose(np.array(c), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_a_destination_tile_as_the_next_right_input(lib, rng):
    x = rng.standard_normal((16, 32)).astype(np.float32)  # X: 16 rows of K 32
    y = rng.standard_normal((24, 32)).astype(np.float32)  # Y: 24 rows of K 32 (transposed right)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    (c,) = run(lib, "right_from_tile", {"X": mx.array(x), "Y": mx.array(y), "A": mx.array(a),
                                        "C": poisoned((8, 24))}, 32)
    d = x.astype(np.float64) @ y.astype(np.float64).T  # 16 x 24
    np.testing.assert_allclose(np.array(c), a.astype(np.float64) @ d, rtol=1e-4, atol=1e-4)


def test_a_right_input_tile_of_the_wrong_shape_is_a_compile_error_on_the_users_line():
    bad = PROGRAM.split("// S = Q K^T")[0] + r"""
kernel void wrong(in_t X [[buffer(0)]], in_t Y [[buffer(1)]], out_t C [[buffer(2)]]) {
  matmul2d<matmul2d_descriptor(16, 24, 32, false, true), execution_simdgroup> op1;
  matmul2d<matmul2d_descriptor(8, 16, 16), execution_simdgroup> op2;
  auto d = op1.get_destination_cooperative_tensor<decltype(X), decltype(Y), float>();
  op1.run(X, Y, d);
  auto right = op2.get_right_input_cooperative_tensor<float, float, float>(d);
}
"""
    with pytest.raises(RuntimeError) as e:
        mx.eval(mx.fast.metal_library(bad).kernel("wrong")(
            args={"X": mx.zeros((16, 32)), "Y": mx.zeros((24, 32)), "C": ((8, 16), mx.float32)},
            grid=(32, 1, 1), threadgroup=(32, 1, 1), stream=STREAM))
    line = bad.splitlines().index(next(l for l in bad.splitlines() if "get_right_input_cooperative_tensor" in l)) + 1
    assert_compile_error_on_line(e.value, bad, line, "the tile's shape is not this op's right operand")


def test_accumulate_load_store_and_column_reductions(lib, rng):
    kk = int(rng.integers(5, 40))
    a = rng.standard_normal((M, kk)).astype(np.float32)
    b = rng.standard_normal((kk, N)).astype(np.float32)
    c = rng.standard_normal((M, N)).astype(np.float32)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    out, col_sum, col_min, biased = run(lib, "accumulate_tile", {
        "A": mx.array(a), "B": mx.array(b), "C": mx.array(c), "bias": mx.array(bias), "out": poisoned((M, N)),
        "col_sum": poisoned((1, N)), "col_min": poisoned((1, N)), "biased": poisoned((M, N))}, 32)
    ref = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5 * kk)
    np.testing.assert_allclose(np.array(col_sum)[0], np.array(out).astype(np.float64).sum(axis=0), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_array_equal(np.array(col_min)[0], np.array(out).min(axis=0))
    np.testing.assert_array_equal(np.array(biased), np.broadcast_to(bias, (M, N)))


BAD_REDUCTION = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
kernel void bad(tensor<device const float, dextents<int, 2>> a [[buffer(0)]],
                tensor<device float, dextents<int, 2>> c [[buffer(1)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, 8);
  matmul2d<desc, execution_simdgroups<2>> op;
  auto ct = op.get_destination_cooperative_tensor<decltype(a), decltype(a), float>();
  op.run(a, a, ct);
  auto rows = op.get_row_reduction_destination_cooperative_tensor<decltype(a), decltype(a), float>();
  reduce_rows(ct, rows);
  rows.store(c);
}
"""


def test_a_reduction_over_several_simd_groups_is_a_compile_error_on_the_users_line():
    # Metal reduces cooperative tensors at execution_simdgroup scope only.
    lib = mx.fast.metal_library(BAD_REDUCTION)
    with pytest.raises(RuntimeError) as e:
        mx.eval(lib.kernel("bad")(args={"a": mx.zeros((8, 8)), "c": ((8, 1), mx.float32)}, grid=(64, 1, 1),
                                  threadgroup=(64, 1, 1), stream=STREAM))
    text = str(e.value)
    assert "reductions run at execution_thread or execution_simdgroup scope" in text, text
    assert "source:12" in text and "reduce_rows(ct, rows);" in text, text

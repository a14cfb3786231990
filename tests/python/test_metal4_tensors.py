"""Metal 4 tensors and MPP's matmul2d in mx.fast.metal_library
(issue 15's first slice): tensor kernel arguments bound to arrays (extents
innermost first, the arrays' own strides), indexing, load/store bounds,
slices, and matmul2d in every transpose and mode, checked against numpy
float64 on fresh random inputs. Every launch runs on the test device
(ALLOY_TEST_DEVICE: the CPU by default, the GPU in gpu_check)."""
import pathlib
import sys

import numpy as np
import pytest

import alloy.core as mx

from conftest import DEVICE
from shared_fixtures import assert_compile_error_on_line

STREAM = mx.gpu if DEVICE == "gpu" else mx.cpu
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "metal4"))
import metal4_common as m4  # noqa: E402

HEADER = r"""
#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;

template <typename T> using dtensor = tensor<device T, dextents<int, 2>>;
using input_matrix = tensor<device const float, dextents<int, 2>>;  // an alias as a parameter type (the seed's)
"""

PROBES = r"""
// rank, extents, strides and static extent of `a`.
kernel void describe(tensor<device const float, dextents<int, 2>> a [[buffer(0)]],
                     tensor<device float, dextents<int, 1>> info [[buffer(1)]],
                     uint tid [[thread_position_in_grid]]) {
  if (tid != 0) return;
  info[0] = a.get_rank();
  info[1] = a.get_extent(0);
  info[2] = a.get_extent(1);
  info[3] = a.get_stride(0);
  info[4] = a.get_stride(1);
  info[5] = a.get_static_extent(1) == dynamic_extent ? -1.0f : 0.0f;
}

// out[col, row] = 2 a[col, row] + col / 1000: index order and strides.
kernel void index_order(input_matrix a [[buffer(0)]],
                        tensor<device float, dextents<int, 2>> out [[buffer(1)]],
                        uint2 gid [[thread_position_in_grid]]) {
  out[gid.x, gid.y] = 2.0f * a[gid.x, gid.y] + gid.x / 1000.0f;
}

// The slice at (col 1, row 2), over a grid bigger than it: load reads 0
// outside it and store drops the write. out starts from the caller's array.
kernel void shifted(tensor<device const float, dextents<int, 2>> a [[buffer(0)]],
                    tensor<device float, dextents<int, 2>> out [[buffer(1)]],
                    tensor<device float, dextents<int, 1>> info [[buffer(2)]],
                    uint2 gid [[thread_position_in_grid]]) {
  auto s = a.slice(1, 2);
  auto o = out.slice(1, 2);
  o.store(s.load(gid.x, gid.y) + 1.0f, gid.x, gid.y);
  if (gid.x == 0 && gid.y == 0) {
    info[0] = s.get_extent(0);
    info[1] = s.get_extent(1);
    info[2] = s.load(s.get_extent(0), 0) + s.load(0, -1) + 7.0f;  // both outside: 7
  }
}

// A static 4 x 3 tile at (2, 1), written out row by row; then its static extents.
kernel void tile(tensor<device const float, dextents<int, 2>> a [[buffer(0)]],
                 tensor<device float, dextents<int, 1>> out [[buffer(1)]],
                 uint2 gid [[thread_position_in_grid]]) {
  auto t = a.slice<4, 3>(2, 1);
  out[gid.y * 4 + gid.x] = t[gid.x, gid.y];
  if (gid.x == 0 && gid.y == 0) out[12] = t.get_static_extent(0) * 10 + t.get_static_extent(1);
}
"""

# One tile of C per threadgroup (the WWDC snippet): slice, describe, run.
GEMM = r"""
template <typename T, typename U, int TM, int TN, int K, bool TL, bool TR, bool ACC, typename Scope>
kernel void gemm(tensor<device const T, dextents<int, 2>> A [[buffer(0)]],
                 tensor<device const T, dextents<int, 2>> B [[buffer(1)]],
                 tensor<device U, dextents<int, 2>> C [[buffer(2)]],
                 uint2 tgid [[threadgroup_position_in_grid]]) {
  auto tA = TL ? A.slice(tgid.y * TM, 0) : A.slice(0, tgid.y * TM);
  auto tB = TR ? B.slice(0, tgid.x * TN) : B.slice(tgid.x * TN, 0);
  auto tC = C.slice(tgid.x * TN, tgid.y * TM);
  constexpr auto desc = matmul2d_descriptor(TM, TN, K == 0 ? dynamic_length_v<int> : K, TL, TR, false,
      ACC ? matmul2d_descriptor::mode::multiply_accumulate : matmul2d_descriptor::mode::multiply);
  matmul2d<desc, Scope> op;
  op.run(tA, tB, tC);
}
"""

# Operands of different types (Apple's table), one tile per threadgroup.
MIXED = r"""
template <typename L, typename R, typename D>
kernel void mixed(tensor<device const L, dextents<int, 2>> A [[buffer(0)]],
                  tensor<device const R, dextents<int, 2>> B [[buffer(1)]],
                  tensor<device D, dextents<int, 2>> C [[buffer(2)]],
                  uint2 tgid [[threadgroup_position_in_grid]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8, 0);
  matmul2d<desc, execution_thread> op;
  op.run(A.slice(0, tgid.y * 8), B.slice(tgid.x * 8, 0), C.slice(tgid.x * 8, tgid.y * 8));
}
"""
MIXED_TYPES = [("bfloat", "bfloat", "float"), ("bfloat", "bfloat", "bfloat"), ("half", "float", "float"),
               ("bfloat", "half", "half"), ("char", "char", "int"), ("half", "char", "half"),
               ("char", "float", "float")]


def mixed_instantiation(left, right, dest):
    return (f'template [[host_name("mixed_{left}_{right}_{dest}")]] kernel void mixed<{left}, {right}, {dest}>(\n'
            f"    tensor<device const {left}, dextents<int, 2>>, tensor<device const {right}, dextents<int, 2>>,\n"
            f"    tensor<device {dest}, dextents<int, 2>>, uint2);\n")


# Rank 3: t[x, y, z] over a permuted (strided) input, and a slice of it.
RANK3 = r"""
kernel void rank3(tensor<device const float, dextents<int, 3>> a [[buffer(0)]],
                  tensor<device float, dextents<int, 3>> out [[buffer(1)]],
                  uint3 gid [[thread_position_in_grid]]) {
  auto s = a.slice(1, 0, 2);
  out[gid.x, gid.y, gid.z] = a[gid.x, gid.y, gid.z] + 10.0f * s.load(gid.x, gid.y, gid.z)
                             + 1000.0f * a.get_extent(2);
}
"""

# Threadgroup tensors: a 16 x 16 tile of A and B staged in threadgroup memory
# through tensor_inline, then one op per threadgroup at SIMD-group scope.
STAGED = r"""
kernel void staged(tensor<device const float, dextents<int, 2>> A [[buffer(0)]],
                   tensor<device const float, dextents<int, 2>> B [[buffer(1)]],
                   tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                   uint2 tgid [[threadgroup_position_in_grid]],
                   uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float a_tile[16 * 16];
  threadgroup float b_tile[16 * 16];
  tensor<threadgroup float, extents<int, 16, 16>, tensor_inline> tA(a_tile, extents<int, 16, 16>());
  tensor<threadgroup float, extents<int, 16, 16>, tensor_inline> tB(b_tile, extents<int, 16, 16>());
  auto gA = A.slice(0, tgid.y * 16);
  auto gB = B.slice(tgid.x * 16, 0);
  for (uint i = lid; i < 256; i += 32) {
    tA[i % 16, i / 16] = gA.load(i % 16, i / 16);
    tB[i % 16, i / 16] = gB.load(i % 16, i / 16);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  constexpr auto desc = matmul2d_descriptor(16, 16, 16);
  matmul2d<desc, execution_simdgroup> op;
  op.run(tA, tB, C.slice(tgid.x * 16, tgid.y * 16));
}
"""

# (host name, T, U, tile M, tile N, static K (0: dynamic), TL, TR, ACC, scope, threads per threadgroup)
VARIANTS = []
for dtype in ("float", "half"):
    for tl in (False, True):
        for tr in (False, True):
            for acc in (False, True):
                VARIANTS.append((f"gemm_{dtype}_{int(tl)}{int(tr)}{int(acc)}", dtype, "float", 8, 8, 0, tl, tr, acc,
                                 "execution_thread", 1))
VARIANTS += [
    ("gemm_half_to_half", "half", "half", 8, 8, 0, False, True, True, "execution_thread", 1),
    ("gemm_static_k", "float", "float", 8, 8, 24, False, False, False, "execution_thread", 1),
    ("gemm_simdgroup", "float", "float", 16, 16, 0, True, False, True, "execution_simdgroup", 32),
    ("gemm_simdgroups4", "float", "float", 32, 32, 0, False, False, False, "execution_simdgroups<4>", 128),
]


def b(v):
    return "true" if v else "false"


def instantiation(name, t, u, tm, tn, k, tl, tr, acc, scope, _threads):
    args = f"{t}, {u}, {tm}, {tn}, {k}, {b(tl)}, {b(tr)}, {b(acc)}, {scope}"
    return (f'template [[host_name("{name}")]] kernel void gemm<{args}>(\n'
            f"    tensor<device const {t}, dextents<int, 2>>, tensor<device const {t}, dextents<int, 2>>,\n"
            f"    tensor<device {u}, dextents<int, 2>>, uint2);\n")


PROGRAM = (HEADER + PROBES + GEMM + "".join(instantiation(*v) for v in VARIANTS) + STAGED + MIXED +
           "".join(mixed_instantiation(*t) for t in MIXED_TYPES) + RANK3)

DTYPES = {"float": mx.float32, "half": mx.float16, "bfloat": mx.bfloat16, "char": mx.int8, "int": mx.int32}


@pytest.fixture(scope="module")
def lib():
    return mx.fast.metal_library(PROGRAM)


def f64(a):
    return np.array(a).astype(np.float64)


def run(lib, name, args, grid, threadgroup, dispatch="threads"):
    return lib.kernel(name)(args=args, grid=grid, threadgroup=threadgroup, dispatch=dispatch, stream=STREAM)


def test_extents_and_strides_follow_the_array_innermost_first(lib, rng):
    x = mx.array(rng.standard_normal((5, 7)).astype(np.float32))
    (info,) = run(lib, "describe", {"a": x, "info": ((6,), mx.float32)}, (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(np.array(info), [2, 7, 5, 1, 7, -1])
    # A transposed view is passed as it is: extents (5, 7), strides (7, 1).
    (info_t,) = run(lib, "describe", {"a": x.T, "info": ((6,), mx.float32)}, (1, 1, 1), (1, 1, 1))
    np.testing.assert_array_equal(np.array(info_t), [2, 5, 7, 7, 1, -1])


def test_index_order_on_a_transposed_input(lib, rng):
    x = rng.standard_normal((9, 13)).astype(np.float32)
    xt = mx.array(x).T  # 13 x 9, not contiguous
    (out,) = run(lib, "index_order", {"a": xt, "out": ((13, 9), mx.float32)}, (9, 13, 1), (4, 4, 1))
    cols = np.arange(9)[None, :] / 1000.0
    np.testing.assert_allclose(f64(out), 2.0 * x.T.astype(np.float64) + cols, rtol=1e-6, atol=1e-6)


def test_slice_load_and_store_bounds(lib, rng):
    rows, cols = 7, 10
    a = rng.standard_normal((rows, cols)).astype(np.float32)
    start = rng.standard_normal((rows, cols)).astype(np.float32)
    out, info = run(lib, "shifted", {"a": mx.array(a), "out": mx.array(start), "info": ((3,), mx.float32)},
                    (cols + 4, rows + 3, 1), (4, 4, 1))
    np.testing.assert_array_equal(np.array(info), [cols - 1, rows - 2, 7])
    want = start.copy()
    want[2:, 1:] = a[2:, 1:] + 1.0  # inside the slice; the rest keeps the array's values
    np.testing.assert_array_equal(np.array(out), want)


def test_static_slice(lib, rng):
    a = rng.standard_normal((5, 8)).astype(np.float32)
    (out,) = run(lib, "tile", {"a": mx.array(a), "out": ((13,), mx.float32)}, (4, 3, 1), (4, 3, 1))
    got = np.array(out)
    np.testing.assert_array_equal(got[:12].reshape(3, 4), a[1:4, 2:6])
    assert got[12] == 43


def gemm_case(rng, dtype, tl, tr, k=None):
    m, n = int(rng.integers(9, 70)), int(rng.integers(9, 70))
    k = k or int(rng.integers(1, 50))
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    if dtype == "half":
        a, b, c = (v.astype(np.float16).astype(np.float32) for v in (a, b, c))
    # Transposed operands are given as the arrays of the transposed matrices.
    a_host = np.ascontiguousarray(a.T) if tl else a
    b_host = np.ascontiguousarray(b.T) if tr else b
    return m, n, k, a, b, c, a_host, b_host


@pytest.mark.parametrize("variant", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_matmul2d(lib, rng, variant):
    name, t, u, tm, tn, static_k, tl, tr, acc, _scope, threads = variant
    m, n, k, a, b, c, a_host, b_host = gemm_case(rng, t, tl, tr, k=40 if static_k else None)
    dt, du = DTYPES[t], DTYPES[u]
    dest = mx.array(c).astype(du) if acc else ((m, n), du)
    groups = (-(-n // tn), -(-m // tm), 1)
    (out,) = run(lib, name, {"A": mx.array(a_host).astype(dt), "B": mx.array(b_host).astype(dt), "C": dest},
                 (groups[0] * threads, groups[1], 1), (threads, 1, 1), dispatch="threads")
    assert out.shape == (m, n) and out.dtype == du
    kk = static_k or k
    ref = a[:, :kk].astype(np.float64) @ b[:kk, :].astype(np.float64)
    mag = np.abs(a[:, :kk]).astype(np.float64) @ np.abs(b[:kk, :]).astype(np.float64)
    if acc:
        ref += c
        mag += np.abs(c)
    # float accumulation: a few ulps of the terms' magnitude; a half result rounds once more.
    tol = (1e-6 * kk + 1e-3 * (u == "half")) * (mag + 1)
    err = np.abs(f64(out) - ref)
    worst = np.unravel_index(err.argmax(), err.shape)
    assert np.all(err <= tol), f"{name} M={m} N={n} K={k}: max error {err.max()} at {worst}"


def rounded(x, name):
    """x as the `name` elements hold it, back in float64."""
    if name == "char":
        return x.astype(np.int8).astype(np.float64)
    return f64(mx.array(x.astype(np.float32)).astype(DTYPES[name]).astype(mx.float32))


@pytest.mark.parametrize("left,right,dest", MIXED_TYPES, ids=["x".join(t) for t in MIXED_TYPES])
def test_matmul2d_type_combinations(lib, rng, left, right, dest):
    m, n, k = int(rng.integers(9, 40)), int(rng.integers(9, 40)), int(rng.integers(1, 40))
    def draw(shape, name):
        return rounded(rng.integers(-8, 8, shape) if name == "char" else rng.standard_normal(shape), name)

    a, b = draw((m, k), left), draw((k, n), right)
    (out,) = run(lib, f"mixed_{left}_{right}_{dest}",
                 {"A": mx.array(a.astype(np.float32)).astype(DTYPES[left]),
                  "B": mx.array(b.astype(np.float32)).astype(DTYPES[right]), "C": ((m, n), DTYPES[dest])},
                 (-(-n // 8), -(-m // 8), 1), (1, 1, 1))
    assert out.dtype == DTYPES[dest]
    ref, mag = a @ b, np.abs(a) @ np.abs(b)
    if dest == "int":
        np.testing.assert_array_equal(np.array(out), ref.astype(np.int64))
        return
    # float accumulation, then one rounding to the destination's type.
    eps = {"float": 1e-6 * k, "half": 1e-3, "bfloat": 8e-3}[dest]
    err = np.abs(f64(out.astype(mx.float32)) - ref)
    assert np.all(err <= eps * (mag + 1)), f"max error {err.max()} (M={m} N={n} K={k})"


def test_rank3_indexing_and_slice_on_a_permuted_input(lib, rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    a = mx.transpose(mx.array(x), (2, 0, 1))  # shape (6, 4, 5), strided: extents (5, 4, 6)
    (out,) = run(lib, "rank3", {"a": a, "out": ((6, 4, 5), mx.float32)}, (5, 4, 6), (5, 2, 1))
    at = np.transpose(x, (2, 0, 1)).astype(np.float64)
    s = np.zeros_like(at)  # a.slice(1, 0, 2): origin z=2, y=0, x=1 in (z, y, x) array order
    s[:4, :, :4] = at[2:, :, 1:]
    np.testing.assert_allclose(f64(out), at + 10.0 * s + 6000.0, rtol=1e-6, atol=1e-4)


def test_threadgroup_tensors_staged_through_tensor_inline(lib, rng):
    m, n, k = 16 * int(rng.integers(1, 4)), 16 * int(rng.integers(1, 4)), 16
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    (out,) = run(lib, "staged", {"A": mx.array(a), "B": mx.array(b), "C": ((m, n), mx.float32)},
                 (n // 16 * 32, m // 16, 1), (32, 1, 1))
    np.testing.assert_allclose(f64(out), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def test_a_tensor_of_the_wrong_rank_is_refused(lib):
    with pytest.raises(ValueError, match="parameter 'a' \\(tensor<device const float, dextents<int, 2>>\\) takes an "
                                         "array of 2 dimensions; got 1"):
        run(lib, "describe", {"a": mx.zeros((6,)), "info": ((6,), mx.float32)}, (1, 1, 1), (1, 1, 1))


BAD = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
kernel void bad(tensor<device const LEFT, dextents<int, 2>> a [[buffer(0)]],
                tensor<device const float, dextents<int, 2>> b [[buffer(1)]],
                tensor<device LEFT, dextents<int, 2>> c [[buffer(2)]]) {
  constexpr auto desc = matmul2d_descriptor(8, 8);
  matmul2d<desc, SCOPE> op;
  op.run(a, b, c);
}
"""


# half x float -> half is not in Apple's table; execution_threads<4> is no scope of matmul2d.
@pytest.mark.parametrize("left,scope,line,message", [
    ("half", "execution_thread", 10, "combination of left, right and destination types is not supported"),
    ("float", "execution_threads<4>", 9, "the scope must be execution_thread"),
])
def test_bad_type_combination_or_scope_is_a_compile_error_on_the_users_line(left, scope, line, message):
    source = BAD.replace("SCOPE", scope).replace("LEFT", left)
    lib = mx.fast.metal_library(source)
    dtype = DTYPES[left]
    args = {"a": mx.zeros((8, 8), dtype=dtype), "b": mx.zeros((8, 8)), "c": ((8, 8), dtype)}
    with pytest.raises(RuntimeError) as e:
        mx.eval(lib.kernel("bad")(args=args, grid=(1, 1, 1), threadgroup=(1, 1, 1), stream=STREAM))
    assert_compile_error_on_line(e.value, source, line, message)


# MLX's metal_kernel generates the signature (plain `device T*` inputs), so a
# body that wants tensors wraps its inputs and outputs itself, inline.
INLINE_BODY = r"""
    // A (M x K), B (N x K) row-major: K-major operands, extents innermost first.
    auto tA = tensor<device T, dextents<int, 2>, tensor_inline>((device T*)A, dextents<int, 2>(K, M));
    auto tB = tensor<device T, dextents<int, 2>, tensor_inline>((device T*)B, dextents<int, 2>(K, N));
    auto tC = tensor<device float, dextents<int, 2>, tensor_inline>(C, dextents<int, 2>(N, M));
    constexpr auto desc = matmul2d_descriptor(M, N, DYNAMIC_K, false, true);
    matmul2d<desc, execution_simdgroups<1>> op;
    op.run(tA, tB, tC);
    // Then each lane adds A's first column by indexing the inline tensor.
    simdgroup_barrier(mem_flags::mem_device);
    for (uint r = thread_position_in_grid.x; r < M; r += 32)
        for (int n = 0; n < N; ++n) tC[n, r] += float(tA[0, r]);
"""


# K from the operands, in the descriptor's three spellings: its default, the
# one Apple's header documents (jang's TurboQuant GEMM writes it), and 0.
@pytest.mark.parametrize("dynamic_k", ["dynamic_length_v<int>", "static_cast<int>(dynamic_extent)", "0"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_metal_kernel_bodies_wrap_their_buffers_in_inline_tensors(rng, dtype, dynamic_k):
    M, N, K = 32, 16, 64
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    xa, xb = (mx.array(v).astype(getattr(mx, dtype)) for v in (a, b))
    a16, b16 = (np.array(v.astype(mx.float32)).astype(np.float64) for v in (xa, xb))
    k = mx.fast.metal_kernel(name=f"inline_mm_{dtype}", input_names=["A", "B"], output_names=["C"],
                             source=INLINE_BODY.replace("DYNAMIC_K", dynamic_k), header=HEADER)
    (out,) = k(inputs=[xa, xb], template=[("T", getattr(mx, dtype)), ("M", M), ("N", N), ("K", K)],
               grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(M, N)], output_dtypes=[mx.float32],
               init_value=-99.0, stream=STREAM)
    want = a16 @ b16.T + a16[:, :1]
    np.testing.assert_allclose(np.array(out), want, rtol=2e-3, atol=2e-3)


# Tensor aliases declared in the library's header (which Metal prepends to
# the source) name kernel parameters as those in the source do.
ALIAS_HEADER = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
using half_matrix = tensor<device const half, dextents<int, 2>>;
using scales_plane = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mxfp8_tensor = tensor<device metal_fp8_e4m3_format, dextents<int, 2>, tensor_handle, scales_plane>;
"""
ALIAS_SOURCE = r"""
kernel void mm(half_matrix A [[buffer(0)]], half_matrix B [[buffer(1)]],
               tensor<device float, dextents<int, 2>> C [[buffer(2)]]) {
  constexpr auto desc = matmul2d_descriptor(16, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A, B, C);
}
kernel void mx(mxfp8_tensor A [[buffer(0)]], mxfp8_tensor B [[buffer(1)]],
               tensor<device float, dextents<int, 2>> C [[buffer(2)]]) {
  constexpr auto desc = matmul2d_descriptor(16, 8, dynamic_length_v<int>, false, true);
  matmul2d<desc, execution_simdgroup> op;
  op.run(A, B, C);
}
"""


def test_tensor_aliases_declared_in_the_header_name_parameters(rng):
    lib = mx.fast.metal_library(ALIAS_SOURCE, header=ALIAS_HEADER)
    a = rng.standard_normal((16, 64)).astype(np.float16)
    b = rng.standard_normal((8, 64)).astype(np.float16)
    nan = lambda shape: mx.array(np.full(shape, np.nan, np.float32))  # noqa: E731
    (c,) = run(lib, "mm", {"A": mx.array(a), "B": mx.array(b), "C": nan((16, 8))}, (1, 1, 1), (32, 1, 1),
               "threadgroups")
    np.testing.assert_allclose(np.array(c), a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-5, atol=1e-5)
    qa, qb = m4.random_mxfp8(rng, 16, 64), m4.random_mxfp8(rng, 8, 64)
    out = run(lib, "mx", {"A": tuple(mx.array(x) for x in qa), "B": tuple(mx.array(x) for x in qb),
                          "C": nan((16, 8))}, (1, 1, 1), (32, 1, 1), "threadgroups")
    ref = m4.dequantize(*qa) @ m4.dequantize(*qb).T
    np.testing.assert_allclose(np.array(out[-1]), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_a_bad_tensor_alias_in_the_header_is_an_error_on_its_header_line():
    header = ALIAS_HEADER.replace("using half_matrix = tensor<device const half, dextents<int, 2>>;",
                                  "using half_matrix = tensor<device const half, dims<int, 2>>;")
    with pytest.raises(RuntimeError) as e:
        mx.fast.metal_library(ALIAS_SOURCE, header=header)
    assert "header:5:" in str(e.value) and "the extents must be `dextents<int, R>`" in str(e.value)

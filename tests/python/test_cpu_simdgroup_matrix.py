"""simdgroup_matrix kernels on the CPU split into regions (msl/cpu_regions.h).

A matrix product exchanges every lane's elements, as a simd_ function
does: the region before it deposits each lane's operands and the next
computes each lane's result. Loads, stores, fills and the diagonal read
only the lane's own elements. The regions must give the fibers' numbers
bit for bit (they share the product's arithmetic), and Metal's lane layout
(MLX's thread_elements()); a kernel regions cannot take runs on fibers, and
says why.
"""
import numpy as np
import pytest

import alloy.core as mx
from test_cpu_sync_threads import runner, translations_and_results

pytestmark = pytest.mark.usefixtures("on_cpu")


@pytest.fixture
def on_cpu():
    mx.set_default_device(mx.cpu)


# C = 2 (A B) in 8 x 8 tiles, two SIMD groups a threadgroup (8 rows, 16
# columns), B's rows staged in threadgroup memory between barriers, half
# operands into a float accumulator; E gets each lane's two elements of
# A B (thread_elements()).
GEMM = """
    uint lane = thread_index_in_simdgroup;
    uint sg = simdgroup_index_in_threadgroup;
    uint row0 = threadgroup_position_in_grid.y * 8;
    uint col0 = threadgroup_position_in_grid.x * 16 + sg * 8;
    threadgroup half tile_b[8 * 16];
    simdgroup_matrix<float, 8, 8> acc = make_filled_simdgroup_matrix<float, 8>(0.0f);  // Rows defaults to Cols
    for (uint k = 0; k < K; k += 8) {
        for (uint e = thread_index_in_threadgroup; e < 128; e += 64)
            tile_b[e] = B[(k + e / 16) * N + threadgroup_position_in_grid.x * 16 + e % 16];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        simdgroup_matrix<half, 8, 8> a;
        simdgroup_matrix<half, 8, 8> b;
        simdgroup_load(a, A, K, ulong2(k, row0));
        simdgroup_load(b, tile_b, 16, ulong2(sg * 8, 0));
        simdgroup_multiply_accumulate(acc, a, b, acc);
        threadgroup_barrier(mem_flags::mem_threadgroup);EXTRA
    }
    simdgroup_float8x8 two(2.0f);
    simdgroup_float8x8 doubled;
    simdgroup_multiply(doubled, acc, two);
    simdgroup_store(doubled, C, N, ulong2(col0, row0));
    uint tile = threadgroup_position_in_grid.y * (N / 8) + col0 / 8;
    E[tile * 64 + lane * 2] = acc.thread_elements()[0];
    E[tile * 64 + lane * 2 + 1] = acc.thread_elements()[1];
"""
M, N, K = 24, 32, 40


def gemm(extra=""):
    return mx.fast.metal_kernel(name="matrix_gemm" + ("_break" if extra else ""), input_names=["A", "B"],
                                output_names=["C", "E"], source=GEMM.replace("EXTRA", extra))


def launch(kernel, a, b):
    return dict(inputs=[mx.array(a), mx.array(b)], template=[("M", M), ("N", N), ("K", K)],
                output_shapes=[(M, N), ((M // 8) * (N // 8) * 64,)], output_dtypes=[mx.float32, mx.float32],
                grid=(N // 16 * 64, M // 8, 1), threadgroup=(64, 1, 1), init_value=float("nan"))


def lane_layout(ab):
    """Each lane's two elements of every 8 x 8 tile of ab, as thread_elements() holds them."""
    lane = np.arange(32)
    qid = lane // 4
    row = (qid & 4) + (lane // 2) % 4
    col = (qid & 2) * 2 + (lane % 2) * 2
    out = []
    for ti in range(M // 8):
        for tj in range(N // 8):
            t = ab[ti * 8:ti * 8 + 8, tj * 8:tj * 8 + 8]
            out.append(np.stack([t[row, col], t[row, col + 1]], axis=1).reshape(-1))
    return np.concatenate(out)


def operands(rng):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_matrix_products_run_as_regions_and_agree_with_fibers(monkeypatch, capfd, rng):
    a, b, ab = operands(rng)
    k = gemm()
    got = translations_and_results(monkeypatch, capfd, k, **launch(k, a, b))
    assert runner(got["auto"][0]) == "regions", got["auto"][0]
    # Coroutines cannot suspend inside the runtime's product: fibers.
    assert runner(got["coroutines"][0]) == "fibers" and runner(got["fibers"][0]) == "fibers"
    assert "simdgroup matrix operations run as regions or fibers" in got["coroutines"][0]
    c = got["auto"][1]
    np.testing.assert_allclose(c, 2 * ab, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(c, got["fibers"][1])
    e = np.array(k(**launch(k, a, b))[1])
    np.testing.assert_allclose(e, lane_layout(ab), rtol=1e-5, atol=1e-4)


def test_a_matrix_kernel_regions_cannot_take_runs_on_fibers(monkeypatch, capfd, rng):
    # A break out of a loop with barriers (the group's own condition here).
    a, b, ab = operands(rng)
    k = gemm("\n        if (k + 8 >= K) break;")
    monkeypatch.setenv("ALLOY_CPU_SYNC", "auto")
    text = translations_and_results(monkeypatch, capfd, k, **launch(k, a, b))["auto"][0]
    assert runner(text) == "fibers", text
    assert ("simdgroup matrix operations run as regions or fibers, and regions cannot take this kernel: "
            "a break or continue leaves a loop with barriers") in text
    monkeypatch.setenv("ALLOY_CPU_SYNC", "auto")
    np.testing.assert_allclose(np.array(k(**launch(k, a, b))[0]), 2 * ab, rtol=1e-5, atol=1e-4)

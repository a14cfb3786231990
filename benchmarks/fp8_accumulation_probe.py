"""How precisely the GPU's FP8 MMAs add their products (informs the error
bound tests/python/test_metal4_mxfp8.py states for FP8 matmul2d on Hopper).

One K block of 32: row i of A is 16 followed by 31 copies of 2^-(i % 10),
each row of B is 16 followed by ones, so C[i] = 256 + 31 * 2^-(i % 10)
exactly (in float too; 2^-9 is E4M3's smallest); prints, for the
warpgroup path (8 SIMD groups, wgmma) and the mma.sync path (execution_
simdgroup, 16 x 8 tiles), the smallest term each still adds exactly, and
for random MXFP8 data (K 4096) the largest error over sum |a_k b_k|.
Usage: python3 benchmarks/fp8_accumulation_probe.py (on the GPU)."""
import sys
import pathlib

import ml_dtypes
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples" / "metal4"))
import alloy.core as mx  # noqa: E402
import metal4_common as m4  # noqa: E402

SRC = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
using planes = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mx8 = tensor<device metal_fp8_e4m3_format, dextents<int, 2>, tensor_handle, planes>;
template <int TM, int TN, int SG>
kernel void gemm(mx8 A [[buffer(0)]], mx8 B [[buffer(1)]], tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                 uint2 tg [[threadgroup_position_in_grid]]) {
  constexpr auto d = matmul2d_descriptor(TM, TN, dynamic_length_v<int>, false, true);
  matmul2d<d, execution_simdgroups<SG>> op;
  op.run(A.slice(0, tg.y * TM), B.slice(0, tg.x * TN), C.slice(tg.x * TN, tg.y * TM));
}
template [[host_name("wgmma")]] kernel void gemm<128, 128, 8>(mx8, mx8, tensor<device float, dextents<int, 2>>, uint2);
template [[host_name("mma_sync")]] kernel void gemm<16, 8, 1>(mx8, mx8, tensor<device float, dextents<int, 2>>, uint2);
"""


def run(lib, name, a, b, M, N):
    tm, tn, threads = (128, 128, 256) if name == "wgmma" else (16, 8, 32)
    return np.array(lib.kernel(name)(args={"A": a, "B": b, "C": ((M, N), mx.float32)},
                                     grid=(N // tn, M // tm, 1), threadgroup=(threads, 1, 1),
                                     dispatch="threadgroups")[0]).astype(np.float64)


def main():
    mx.set_default_device(mx.gpu)
    lib = mx.fast.metal_library(SRC)
    M = N = 128
    a = np.zeros((M, 32))
    a[:, 0] = 16.0
    for i in range(M):
        a[i, 1:] = 2.0 ** -(i % 10)
    b = np.ones((N, 32))
    b[:, 0] = 16.0
    codes = lambda x: mx.array(x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8))  # noqa: E731
    unit = mx.array(np.full((M, 1), 127, np.uint8))
    want = 256.0 + 31 * 2.0 ** -(np.arange(M) % 10)
    for name in ("wgmma", "mma_sync"):
        c = run(lib, name, (codes(a), unit), (codes(b), unit), M, N)[:, 0]
        exact = [j for j in range(10) if c[j] == want[j]]
        print(f"{name}: 256 + 31 * 2^-j exact for j in {exact}; C - 256 for j = 0..9: "
              f"{[float(c[j] - 256) for j in range(10)]}")
    rng = np.random.default_rng(0)
    K = 4096
    ca, sa = m4.random_mxfp8(rng, M, K)
    cb, sb = m4.random_mxfp8(rng, N, K)
    da, db = m4.dequantize(ca, sa), m4.dequantize(cb, sb)
    ref, mag = da @ db.T, np.abs(da) @ np.abs(db).T
    for name in ("wgmma", "mma_sync"):
        c = run(lib, name, (mx.array(ca), mx.array(sa)), (mx.array(cb), mx.array(sb)), M, N)
        r = np.abs(c - ref) / mag
        print(f"{name}: random MXFP8, K {K}: max |err| / sum|a b| = {r.max():.3e} (2^{np.log2(r.max()):.1f}), "
              f"max |err| / max|C| = {np.abs(c - ref).max() / np.abs(ref).max():.3e}")


if __name__ == "__main__":
    main()

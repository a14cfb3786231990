"""mtplx 2.12.2's paged-KV decode attention, unchanged on Alloy against numpy
float64: `sdpa_2pass_paged.py` (float16/bfloat16 pages, with and without a
sliding window) and `sdpa_2pass_paged_q8.py` (int8 pages with a float32
scale per token and head). Each runs a partials kernel over the pages, then
a reduction kernel. The q8 partials kernel casts its `const device char4*`
variables back to `const device int8_t*` for a tail loop
(`((const device int8_t*)key_ptr4)[i]`), which failed to compile until
vector pointer variables converted back to scalar pointers
(runtime/metal_vector_cast.h)."""
import numpy as np
import pytest

import alloy.core as mx
from real_mlx_code import load
from references64 import tail_causal_attention


def as64(x):
    return np.array(x.astype(mx.float32)).astype(np.float64)


def pages_as_heads(pages):
    """(pages, block, HK, D) -> (1, HK, pages * block, D)."""
    n, block, hk, d = pages.shape
    return pages.reshape(n * block, hk, d).transpose(1, 0, 2)[None]


def run(module, fn, **kwargs):
    before = module.__port_loader__.launches()
    out = getattr(module, fn)(**kwargs)
    assert out is not None, f"{fn} declined the inputs"
    assert module.__port_loader__.launches() >= before + 2, f"{fn}: its two Metal kernels did not both run"
    return out


SHAPES = [  # HQ, HK, QL, pages, block, offset, D
    (4, 2, 3, 4, 16, 50, 128), (2, 1, 2, 3, 8, 20, 64), (4, 1, 1, 2, 32, 64, 256)]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("hq,hk,ql,pages,block,offset,d", SHAPES)
@pytest.mark.parametrize("window", [-1, 9])
def test_mtplx_paged_attention(rng, dtype, hq, hk, ql, pages, block, offset, d, window):
    module = load("mtplx.kernels.sdpa_2pass_paged", "alloy", kernels=True)
    dt = getattr(mx, dtype)
    q, kc, vc = (mx.array(rng.standard_normal(s).astype(np.float32)).astype(dt)
                 for s in [(1, hq, ql, d), (pages, block, hk, d), (pages, block, hk, d)])
    out = run(module, "sdpa_2pass_paged_tail", queries=q, key_cache=kc, value_cache=vc, offset=offset,
              block_size=block, scale=d ** -0.5, sliding_window=window)
    start = max(0, offset - window) if window > 0 else 0
    want = tail_causal_attention(as64(q), pages_as_heads(as64(kc)), pages_as_heads(as64(vc)), offset, d ** -0.5,
                                 start)
    assert out.shape == want.shape and out.dtype == dt
    tol = 2e-3 if dtype == "float16" else 1.5e-2
    np.testing.assert_allclose(as64(out), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("hq,hk,ql,pages,block,offset,d", SHAPES)
def test_mtplx_paged_q8_attention(rng, dtype, hq, hk, ql, pages, block, offset, d):
    module = load("mtplx.kernels.sdpa_2pass_paged_q8", "alloy", kernels=True)
    dt = getattr(mx, dtype)
    q = mx.array(rng.standard_normal((1, hq, ql, d)).astype(np.float32)).astype(dt)
    # int8 codes with a positive float32 scale per (page, slot, head).
    codes = [mx.array(rng.integers(-127, 128, (pages, block, hk, d)).astype(np.int8)) for _ in range(2)]
    scales = [mx.array(rng.uniform(0.002, 0.02, (pages, block, hk)).astype(np.float32)) for _ in range(2)]
    out = run(module, "sdpa_2pass_paged_q8_tail", queries=q, key_q=codes[0], key_scales=scales[0],
              value_q=codes[1], value_scales=scales[1], offset=offset, block_size=block, scale=d ** -0.5)
    k64, v64 = (pages_as_heads(as64(c) * as64(s)[..., None]) for c, s in zip(codes, scales))
    want = tail_causal_attention(as64(q), k64, v64, offset, d ** -0.5)
    assert out.shape == want.shape and out.dtype == dt
    tol = 2e-3 if dtype == "float16" else 1.5e-2
    np.testing.assert_allclose(as64(out), want, rtol=tol, atol=tol)

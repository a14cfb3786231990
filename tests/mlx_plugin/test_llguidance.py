"""llguidance's Metal kernel (llguidance 1.9.1, llguidance/mlx.py) on real
MLX with alloy.mlx, the file unchanged: the token-bitmask kernel against
numpy and llguidance's own numpy path, and grammar-constrained greedy
decoding (a JSON schema and a regex in one batch) driven by llguidance's
matcher. The checks are tests/pyshared/llguidance_checks.py's, shared with
Alloy's own suite (tests/python/test_real_mlx_llguidance.py)."""
import pytest

import mlx.core as mx

import llguidance_checks as lc


@pytest.mark.parametrize("dtype,batch,vocab,short", lc.BITMASK_CASES, ids=lc.BITMASK_IDS)
def test_token_bitmask_apply(rng, dtype, batch, vocab, short):
    lc.check_bitmask_apply("mlx", mx, rng, dtype, batch, vocab, short)


def test_grammar_constrained_decoding(rng):
    lc.check_constrained_decoding("mlx", mx, rng)

"""llguidance's Metal kernel (llguidance 1.9.1, llguidance/mlx.py) on Alloy,
the file unchanged with its imports pointed at Alloy: the token-bitmask
kernel against numpy and llguidance's own numpy path, and grammar-constrained
greedy decoding (a JSON schema and a regex in one batch) driven by
llguidance's matcher. The checks are tests/pyshared/llguidance_checks.py's
(its docstring says what runs, against what), shared with alloy.mlx's suite
(tests/mlx_plugin/test_llguidance.py)."""
import pytest

import alloy.core as ax
import llguidance_checks as lc


@pytest.mark.parametrize("dtype,batch,vocab,short", lc.BITMASK_CASES, ids=lc.BITMASK_IDS)
def test_token_bitmask_apply(rng, dtype, batch, vocab, short):
    lc.check_bitmask_apply("alloy", ax, rng, dtype, batch, vocab, short)


def test_grammar_constrained_decoding(rng):
    lc.check_constrained_decoding("alloy", ax, rng)

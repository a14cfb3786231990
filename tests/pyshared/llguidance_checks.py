"""llguidance's Metal kernel (llguidance 1.9.1, llguidance/mlx.py): the
checks both hosts share, Alloy's own path (tests/python/test_real_mlx_llguidance.py)
and alloy.mlx on real MLX (tests/mlx_plugin/test_llguidance.py).

llguidance constrains a language model's sampling to a grammar: for each
step its Rust matcher (the package's compiled `_lib`, used as it is) fills a
bitmask of the tokens the grammar allows, and `apply_token_bitmask` sets the
other logits to -inf with the `bitmask_apply_batched` Metal kernel (a 2-D
grid of vocabulary x batch in threadgroups of 256, so the last threadgroup of
each row is partial; mask words read as int32 and shifted; words past the
mask's width count as zero bits). mlx.py is loaded unchanged, its imports
pointed at the framework under test (kernel_path.py); `llguidance._lib` is
the installed extension.

- check_bitmask_apply: random logits (float32, float16, bfloat16; 1-D and
  batched; vocabularies that are not multiples of 32 or 256) and random
  masks (every bit pattern, negative words included; full width and
  narrower than the vocabulary), against numpy and against llguidance's own
  numpy path (`llguidance.numpy.apply_token_bitmask_inplace`), exactly.
- check_constrained_decoding: a byte-level tokenizer with a few multi-byte
  tokens, two matchers in one batch (a JSON schema and a regex), random
  logits, greedy picks from the kernel's masked logits until both grammars
  stop: every step's masked logits equal llguidance's numpy path, and the
  texts parse as the schema and match the regex.

Each check takes the framework under test ("alloy" or "mlx"), its `mx` and
the rng.
"""
import importlib
import json
import re

import numpy as np

from kernel_path import kernels_launched, load_kernel_path
from real_mlx_code import package_dir

KERNEL = "bitmask_apply_batched"


def load_llguidance(framework):
    """llguidance/mlx.py on `framework`'s kernel path, and llguidance's own
    numpy helpers."""
    package_dir("llguidance")  # not installed: a failure that says how to install it
    lib = importlib.import_module("llguidance._lib")
    module = load_kernel_path("llguidance.mlx", framework, substitutes={"llguidance._lib": lib})
    return module, importlib.import_module("llguidance.numpy")


def as_f32(mx, a):
    return np.array(a.astype(mx.float32))


def reference_mask_apply(logits, mask):
    """logits (batch, vocab) float32 with every token whose bit is clear (or
    past the mask's words) set to -inf, in float64 terms exactly."""
    vocab = logits.shape[1]
    words = mask.view(np.uint32)
    bits = (words[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1
    bits = bits.reshape(mask.shape[0], -1)[:, :vocab]
    allowed = np.zeros(logits.shape, dtype=bool)
    allowed[:, :bits.shape[1]] = bits.astype(bool)
    return np.where(allowed, logits, -np.inf).astype(np.float32)


BITMASK_CASES = [
    # dtype, batch (0: 1-D logits), vocab, mask words short of the vocabulary
    ("float32", 0, 1000, 0),
    ("float32", 3, 257, 0),
    ("float16", 2, 4099, 0),
    ("bfloat16", 1, 300, 0),
    ("float32", 2, 700, 5),
    ("bfloat16", 4, 33, 1),
]
BITMASK_IDS = [f"{d}-b{b}-v{v}-short{s}" for d, b, v, s in BITMASK_CASES]


def check_bitmask_apply(framework, mx, rng, dtype, batch, vocab, short):
    module, llg_np = load_llguidance(framework)
    rows = max(batch, 1)
    words = (vocab + 31) // 32 - short
    mask = rng.integers(-2**31, 2**31, (rows, words), dtype=np.int64).astype(np.int32)
    mask[0, 0] = -1  # all allowed
    if words > 1:
        mask[-1, 1] = 0  # none allowed
    values = rng.standard_normal((rows, vocab)).astype(np.float32) * 4
    logits = mx.array(values).astype(getattr(mx, dtype))
    exact = as_f32(mx, logits)  # the values in the input dtype
    got = module.apply_token_bitmask(logits if batch else logits[0], mask if batch else mask[0])
    assert got.dtype == getattr(mx, dtype) and tuple(got.shape) == (rows, vocab), (got.dtype, got.shape)
    got = as_f32(mx, got)
    want = reference_mask_apply(exact, mask)
    np.testing.assert_array_equal(got, want)
    theirs = exact.copy()
    llg_np.apply_token_bitmask_inplace(theirs, mask)
    np.testing.assert_array_equal(got, theirs)
    assert np.isneginf(got).any() and np.isfinite(got).any()
    assert KERNEL in kernels_launched(module)


class ByteTokenizer:
    """Every byte a token, a few multi-byte tokens, and EOS: what
    llguidance.TokenizerWrapper asks of a tokenizer (tokens as bytes, and
    greedy longest-match encoding)."""

    def __init__(self, extra):
        self.tokens = [bytes([b]) for b in range(256)] + [e.encode() for e in extra] + [b"<eos>"]
        self.eos_token_id = len(self.tokens) - 1
        self.bos_token_id = None
        self.special_token_ids = [self.eos_token_id]
        self._longest_first = sorted(range(self.eos_token_id), key=lambda t: -len(self.tokens[t]))

    def __call__(self, text):
        out, i = [], 0
        while i < len(text):
            t = next(t for t in self._longest_first if text.startswith(self.tokens[t], i))
            out.append(t)
            i += len(self.tokens[t])
        return out


SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 6},
                         "age": {"type": "integer", "minimum": 0, "maximum": 999}},
          "required": ["name", "age"], "additionalProperties": False}
PATTERN = r"[a-f]{2,5}-[0-9]{3}"


def check_constrained_decoding(framework, mx, rng):
    import llguidance as llg

    module, llg_np = load_llguidance(framework)
    byte_tokenizer = ByteTokenizer(['{"', '":', '"name', '"age', "12", "ab", "-0", "fe"])
    tokenizer = llg.LLTokenizer(llg.TokenizerWrapper(byte_tokenizer))
    grammars = [llg.LLMatcher.grammar_from_json_schema(SCHEMA, defaults={"whitespace_flexible": False}),
                llg.LLMatcher.grammar_from_regex(PATTERN)]
    matchers = [llg.LLMatcher(tokenizer, g) for g in grammars]
    for m in matchers:
        assert not m.is_error(), m.get_error()
    vocab = tokenizer.vocab_size
    mask = llg_np.allocate_token_bitmask(len(matchers), vocab)
    picked = [[] for _ in matchers]
    for step in range(200):
        live = [i for i, m in enumerate(matchers) if not m.is_stopped()]
        if not live:
            break
        for i in live:
            llg_np.fill_next_token_bitmask(matchers[i], mask, i)
        values = (rng.standard_normal((len(matchers), vocab)) * 3).astype(np.float32)
        got = as_f32(mx, module.apply_token_bitmask(mx.array(values), mask))
        want = values.copy()
        llg_np.apply_token_bitmask_inplace(want, mask)
        np.testing.assert_array_equal(got, want, err_msg=f"step {step}")
        for i in live:
            token = int(np.argmax(got[i]))
            picked[i].append(token)
            assert matchers[i].consume_token(token), f"step {step}: {matchers[i].get_error()}"
    assert all(m.is_stopped() and m.is_accepting() for m in matchers), [m.stop_reason() for m in matchers]
    texts = [b"".join(byte_tokenizer.tokens[t] for t in p if t != byte_tokenizer.eos_token_id) for p in picked]
    value = json.loads(texts[0].decode("utf-8"))
    assert set(value) == {"name", "age"} and isinstance(value["name"], str) and len(value["name"]) <= 6, value
    assert isinstance(value["age"], int) and 0 <= value["age"] <= 999, value
    assert re.fullmatch(PATTERN, texts[1].decode("ascii")), texts[1]
    assert KERNEL in kernels_launched(module)

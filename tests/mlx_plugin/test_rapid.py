"""rapid-mlx's own Metal kernels (rapid-mlx 0.16.10) on real MLX with
alloy.mlx, the files unchanged (loaded by tests/pyshared/kernel_path.py):
compiled_precision's precise sigmoid and gated product, the Qwen3.5 MoE
router top-k, the Gated DeltaNet prefill, Qwen4's GDN verify and fused GDN
decode step, the MTP quantized argmax, the MoE decode route/combine fusion
and DeepSeek V4.1's RoPE + fake quantisation. The files take their kernels
only where `mx.metal.is_available()` (and some `mx.default_device() ==
mx.gpu`), which the plugin answers; each check asserts which kernels
launched, and where the file has an ops path, compares the kernel path with
that path on real MLX answering "no Metal". The checks are
tests/pyshared/rapid_checks.py's, shared with Alloy's own suite
(tests/python/test_real_mlx_rapid.py)."""
import pytest

import mlx.core as mx

import rapid_checks as rc


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_precise_sigmoid_and_gated_product(rng, dtype):
    rc.check_precise_sigmoid_and_gated_product("mlx", mx, rng, dtype)


@pytest.mark.parametrize("dtype,lead,ne,top_k", rc.ROUTER_CASES, ids=rc.ROUTER_IDS)
def test_fused_router_topk(rng, dtype, lead, ne, top_k):
    rc.check_fused_router_topk("mlx", mx, rng, dtype, lead, ne, top_k)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_gdn_prefill_blocked_seq(rng, dtype):
    rc.check_gdn_prefill_blocked_seq("mlx", mx, rng, dtype)


@pytest.mark.parametrize("dtype,masked", rc.GDN_VERIFY_CASES, ids=rc.GDN_VERIFY_IDS)
def test_qwen4_gdn_verify_with_states(rng, dtype, masked):
    rc.check_qwen4_gdn_verify_with_states("mlx", mx, rng, dtype, masked)


@pytest.mark.parametrize("bits,dtype,B,T", rc.QARGMAX_CASES, ids=rc.QARGMAX_IDS)
def test_quantized_argmax(rng, bits, dtype, B, T):
    rc.check_quantized_argmax("mlx", mx, rng, bits, dtype, B, T)


@pytest.mark.parametrize("E,H,K,biased", rc.MOE_CASES, ids=rc.MOE_IDS)
def test_moe_decode_route_and_combine(rng, E, H, K, biased):
    rc.check_moe_decode_route_and_combine("mlx", mx, rng, E, H, K, biased)


@pytest.mark.parametrize("fmt,dtype,out_dtype", rc.ROPE_QUANT_CASES)
def test_deepseek_v41_rope_fake_quant(rng, fmt, dtype, out_dtype):
    rc.check_deepseek_v41_rope_fake_quant("mlx", mx, rng, fmt, dtype, out_dtype)


@pytest.mark.parametrize("threadgroup_y", [4, 32])
def test_qwen4_fused_gdn_decode(rng, threadgroup_y):
    rc.check_qwen4_fused_gdn_decode("mlx", mx, rng, threadgroup_y)

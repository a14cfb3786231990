"""rapid-mlx's own Metal kernels (rapid-mlx 0.16.10) on Alloy, loaded
unchanged from the installed package with their imports pointed at Alloy
(real_mlx_code.py), on fresh random inputs: compiled_precision's precise
sigmoid and gated product, the Qwen3.5 MoE router top-k, the Gated DeltaNet
prefill, Qwen4's GDN verify and fused GDN decode step, the MTP quantized
argmax, the MoE decode route/combine fusion and DeepSeek V4.1's RoPE + fake
quantisation. Each test calls the file's own Python entry point, checks that
its metal_kernel launched, and compares it with float64 numpy (or a numpy
emulation of the kernel's roundings) and, where the file has an ops path,
with that path on Alloy and on real MLX (run_three). The checks are
tests/pyshared/rapid_checks.py's (its docstring lists what runs, against
what), shared with alloy.mlx's suite (tests/mlx_plugin/test_rapid.py)."""
import pytest

import alloy.core as ax
import rapid_checks as rc


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_precise_sigmoid_and_gated_product(rng, dtype):
    rc.check_precise_sigmoid_and_gated_product("alloy", ax, rng, dtype)


@pytest.mark.parametrize("dtype,lead,ne,top_k", rc.ROUTER_CASES, ids=rc.ROUTER_IDS)
def test_fused_router_topk(rng, dtype, lead, ne, top_k):
    rc.check_fused_router_topk("alloy", ax, rng, dtype, lead, ne, top_k)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_gdn_prefill_blocked_seq(rng, dtype):
    rc.check_gdn_prefill_blocked_seq("alloy", ax, rng, dtype)


@pytest.mark.parametrize("dtype,masked", rc.GDN_VERIFY_CASES, ids=rc.GDN_VERIFY_IDS)
def test_qwen4_gdn_verify_with_states(rng, dtype, masked):
    rc.check_qwen4_gdn_verify_with_states("alloy", ax, rng, dtype, masked)


@pytest.mark.parametrize("bits,dtype,B,T", rc.QARGMAX_CASES, ids=rc.QARGMAX_IDS)
def test_quantized_argmax(rng, bits, dtype, B, T):
    rc.check_quantized_argmax("alloy", ax, rng, bits, dtype, B, T)


@pytest.mark.parametrize("E,H,K,biased", rc.MOE_CASES, ids=rc.MOE_IDS)
def test_moe_decode_route_and_combine(rng, E, H, K, biased):
    rc.check_moe_decode_route_and_combine("alloy", ax, rng, E, H, K, biased)


@pytest.mark.parametrize("fmt,dtype,out_dtype", rc.ROPE_QUANT_CASES)
def test_deepseek_v41_rope_fake_quant(rng, fmt, dtype, out_dtype):
    rc.check_deepseek_v41_rope_fake_quant("alloy", ax, rng, fmt, dtype, out_dtype)


@pytest.mark.parametrize("threadgroup_y", [4, 32])
def test_qwen4_fused_gdn_decode(rng, threadgroup_y):
    rc.check_qwen4_fused_gdn_decode("alloy", ax, rng, threadgroup_y)

# From ../shared/seeds/001 (MLX "Writing GPU Kernels for Apple Silicon", the
# Llama MLP with a fused SiLU gate). The kernel body and the model are the
# seed's; the seed imports `silu_gate_fused` from its own module, so here the
# body becomes an mx.fast.metal_kernel, and the imports name Alloy.
import alloy.core as mx
import alloy.nn as nn

_silu_gate_source = """
    uint base = thread_position_in_grid.x * 4;

    // Load 4 halfs using a single 64-bit load
    half4 g = *(device const half4*)(gate + base);
    half4 u = *(device const half4*)(up   + base);

    // SiLU: x * sigmoid(x) = x / (1 + exp(-x))
    float4 gf = (float4)g;
    float4 uf = (float4)u;
    float4 silu_u = uf * (1.0f / (1.0f + exp(-uf)));

    // Fused gate multiply
    *(device half4*)(out + base) = (half4)(gf * silu_u);
"""

_silu_gate_kernel = mx.fast.metal_kernel(
    name="silu_gate_fused", input_names=["gate", "up"], output_names=["out"], source=_silu_gate_source)


def _silu_gate_forward(gate, up):
    # The seed's kernel reads half4 vectors: float16 inputs whose size is a
    # multiple of 4, one thread per 4 elements.
    assert gate.dtype == mx.float16 and gate.size % 4 == 0
    return _silu_gate_kernel(inputs=[gate, up], grid=(gate.size // 4, 1, 1), threadgroup=(64, 1, 1),
                             output_shapes=[gate.shape], output_dtypes=[gate.dtype])[0]


@mx.custom_function
def silu_gate_fused(gate, up):
    """out = gate * silu(up), as the seed's kernel computes it."""
    return _silu_gate_forward(gate, up)


@silu_gate_fused.vjp
def _silu_gate_vjp(primals, cotangent, output):
    gate, up = primals
    sig = mx.sigmoid(up.astype(mx.float32))
    silu_up = up.astype(mx.float32) * sig
    d_silu = sig * (1 + up.astype(mx.float32) * (1 - sig))
    c = cotangent.astype(mx.float32)
    return (c * silu_up).astype(gate.dtype), (c * gate.astype(mx.float32) * d_silu).astype(up.dtype)


class LlamaMLP(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj   = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def __call__(self, x):
        gate = self.gate_proj(x)
        up   = self.up_proj(x)
        # One fused Metal kernel instead of two separate launches
        hidden = silu_gate_fused(gate, up)
        return self.down_proj(hidden)

// MLX's fused ops under mx.fast: normalisations, rotary embeddings,
// attention, cross entropy. Here they are composites of existing ops (so
// they run on every device and differentiate), with MLX's numerics: half
// inputs are reduced in float32, results come back in MLX's output dtype.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy::fast {

// x / sqrt(mean(x^2, -1) + eps) * weight; the dtype is x's, promoted with
// weight's when there is one.
array rms_norm(const array& x, const std::optional<array>& weight, float eps, StreamOrDevice s = {});

// (x - mean) / sqrt(var + eps) * weight + bias over the last axis.
array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, float eps,
                 StreamOrDevice s = {});

// Rotary position embedding of the first `dims` features of x (B, *, T, D).
// Exactly one of base and freqs is given; offset is an integer scalar or one
// offset per batch entry.
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, const array& offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});
array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
           const std::optional<array>& freqs = std::nullopt, StreamOrDevice s = {});

// softmax(scale * q @ k^T + mask) @ v for q (B, Nq, Tq, D), k (B, Nkv, Tkv, D),
// v (B, Nkv, Tkv, Dv), Nq a multiple of Nkv. mask_mode is "" (no mask, or
// `mask` when given) or "causal" (lower-right aligned). A boolean mask keeps
// where true; any other mask is added. sinks: one logit per query head that
// joins each softmax and is then dropped.
array scaled_dot_product_attention(const array& q, const array& k, const array& v, float scale,
                                   const std::string& mask_mode = "", const std::optional<array>& mask = std::nullopt,
                                   const std::optional<array>& sinks = std::nullopt, StreamOrDevice s = {});

// logsumexp(logits, -1) - logits[..., targets], in float32.
array cross_entropy(const array& logits, const array& targets, StreamOrDevice s = {});

// The gated delta rule (Gated DeltaNet) over T steps, per value head h
// (key head h / (Hv / Hk)), with state S (B, Hv, Dv, Dk) in float32:
//   S = gamma_t S;  S += beta_t (v_t - S k_t) k_t^T;  out_t = S q_t.
// q, k (B, T, Hk, Dk); v (B, T, Hv, Dv); gamma, beta (B, T, Hv); mask (B, T)
// skips a step (state kept, output zero). Returns {out, final state}.
std::vector<array> gated_delta_update(const array& q, const array& k, const array& v, const array& gamma,
                                      const array& beta, const std::optional<array>& initial_state = std::nullopt,
                                      const std::optional<array>& mask = std::nullopt, StreamOrDevice s = {});

}  // namespace alloy::fast

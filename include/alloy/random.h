// mx.random: counter-based pseudo-random numbers (threefry-2x32), as MLX.
// A key is a uint32 array of shape (2,). Functions taking `key = nullopt`
// draw a fresh key from the global key sequence, advancing it.
#pragma once

#include <cstdint>
#include <optional>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy::random {

using SD = StreamOrDevice;
using Key = std::optional<array>;

// key(seed) = [seed >> 32, seed & 0xffffffff] as uint32.
array key(uint64_t seed);
// Resets the global key sequence to key(seed).
void seed(uint64_t seed);
// The global key sequence's current state, and a replacement for it (a
// uint32 key of shape (2,)): mx.random.state, which compile's inputs= and
// outputs= read and write.
array global_key();
void set_global_key(const array& key);

// Raw random bits: shape `shape`, width 1/2/4 bytes -> uint8/uint16/uint32.
array bits(const Shape& shape, int width = 4, const Key& key = std::nullopt, SD s = {});
// `num` new keys, shape (num, 2).
array split(const array& key, int num, SD s = {});
std::pair<array, array> split(const array& key, SD s = {});

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = float32,
              const Key& key = std::nullopt, SD s = {});
array uniform(const Shape& shape, Dtype dtype = float32, const Key& key = std::nullopt, SD s = {});
array normal(const Shape& shape, Dtype dtype = float32, const std::optional<array>& loc = std::nullopt,
             const std::optional<array>& scale = std::nullopt, const Key& key = std::nullopt, SD s = {});
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = int32,
              const Key& key = std::nullopt, SD s = {});
array bernoulli(const array& p, const std::optional<Shape>& shape = std::nullopt, const Key& key = std::nullopt,
                SD s = {});
array truncated_normal(const array& lower, const array& upper, const std::optional<Shape>& shape = std::nullopt,
                       Dtype dtype = float32, const Key& key = std::nullopt, SD s = {});
array gumbel(const Shape& shape, Dtype dtype = float32, const Key& key = std::nullopt, SD s = {});
// Laplace(loc, scale) samples (inverse CDF of a float32 uniform in (-1, 1)).
array laplace(const Shape& shape, Dtype dtype = float32, double loc = 0.0, double scale = 1.0,
              const Key& key = std::nullopt, SD s = {});
// Samples indices from the unnormalised log-probabilities `logits` along `axis`.
// With num_samples: output shape = logits shape without axis + (num_samples,).
// With shape: the output shape (broadcast-compatible with logits without axis).
array categorical(const array& logits, int axis = -1, const std::optional<Shape>& shape = std::nullopt,
                  std::optional<int> num_samples = std::nullopt, const Key& key = std::nullopt, SD s = {});

}  // namespace alloy::random

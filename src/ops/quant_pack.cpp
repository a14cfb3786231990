// Packing as compositions of shifts, masks and sums, so both devices run it
// and nothing new needs a kernel. Bits of different codes never overlap, so
// a sum of shifted codes equals their bitwise or.
#include "quant_pack.h"

#include <vector>

namespace alloy::quant {
namespace {

bool power_of_two(int bits) { return (bits & (bits - 1)) == 0; }

Shape with_last(const array& a, std::initializer_list<ShapeElem> tail) {
  Shape sh(a.shape().begin(), a.shape().end() - 1);
  sh.insert(sh.end(), tail);
  return sh;
}

// Where code j of a 32-code chunk lives: a chunk spans exactly `bits` words.
struct ChunkLayout {
  std::vector<uint32_t> word, next_word, shift;
};

ChunkLayout chunk_layout(int bits) {
  ChunkLayout l;
  for (int j = 0; j < 32; ++j) {
    const int off = j * bits;
    l.word.push_back(off / 32);
    // Clamped: a code that ends on a word boundary has no high part, and the
    // shifts below turn that part into zeros.
    l.next_word.push_back(std::min(off / 32 + 1, bits - 1));
    l.shift.push_back(off % 32);
  }
  return l;
}

}  // namespace

array pack_bits(const array& codes, int bits, SD s) {
  if (power_of_two(bits)) {
    const int per_word = 32 / bits;
    array c = reshape(codes, with_last(codes, {codes.shape(-1) / per_word, per_word}), s);
    array shifts = arange(0, 32, bits, uint32, s);
    return sum(left_shift(c, shifts, s), {-1}, false, s);
  }
  // 32 codes fill `bits` words; each code adds its low part to one word and
  // the part that spills over (possibly nothing) to the next.
  ChunkLayout l = chunk_layout(bits);
  array c = reshape(codes, with_last(codes, {codes.shape(-1) / 32, 32}), s);
  array sh(l.shift, {32}, uint32);
  array lo = left_shift(c, sh, s);
  // q >> (32 - shift) without a 32-bit shift when shift is 0.
  array hi = right_shift(right_shift(c, array(1u, uint32), s), subtract(array(31u, uint32), sh, s), s);
  std::vector<uint32_t> to_lo(32 * bits, 0), to_hi(32 * bits, 0);
  for (int j = 0; j < 32; ++j) {
    to_lo[j * bits + l.word[j]] = 1;
    if (l.word[j] + 1 < static_cast<uint32_t>(bits)) to_hi[j * bits + l.word[j] + 1] = 1;
  }
  array lo_words = sum(multiply(expand_dims(lo, -1, s), array(to_lo, {32, bits}, uint32), s), {-2}, false, s);
  array hi_words = sum(multiply(expand_dims(hi, -1, s), array(to_hi, {32, bits}, uint32), s), {-2}, false, s);
  return reshape(add(lo_words, hi_words, s), with_last(codes, {-1}), s);
}

array unpack_bits(const array& words, int bits, SD s) {
  const uint32_t mask = (1u << bits) - 1u;
  if (power_of_two(bits)) {
    array shifts = arange(0, 32, bits, uint32, s);
    array c = bitwise_and(right_shift(expand_dims(words, -1, s), shifts, s), array(mask, uint32), s);
    return reshape(c, with_last(words, {-1}), s);
  }
  ChunkLayout l = chunk_layout(bits);
  array w = reshape(words, with_last(words, {words.shape(-1) / bits, bits}), s);
  array lo = take(w, array(l.word, {32}, uint32), -1, s);
  array hi = take(w, array(l.next_word, {32}, uint32), -1, s);
  array sh(l.shift, {32}, uint32);
  // (hi << (32 - shift)) written as two shifts below 32; where the code does
  // not straddle, the mask drops whatever the high word contributed.
  array hi_part = left_shift(left_shift(hi, array(1u, uint32), s), subtract(array(31u, uint32), sh, s), s);
  array c = bitwise_and(bitwise_or(right_shift(lo, sh, s), hi_part, s), array(mask, uint32), s);
  return reshape(c, with_last(words, {-1}), s);
}

}  // namespace alloy::quant

// CPU evaluation of a fused elementwise chain: each thread walks its share
// of the elements in blocks small enough for every intermediate to stay in
// cache, applying the ops the unfused kernels apply (the same functors, the
// same compute types, a rounding to each step's dtype), so the result is the
// unfused one bit for bit.
#include <cstring>
#include <memory>
#include <stdexcept>

#include "backend/common/ternary_ops.h"
#include "backend/cpu/elementwise_loops.h"
#include "core/cast.h"
#include "primitives/fused.h"

namespace alloy {

namespace {

constexpr size_t kBlock = 1024;  // elements per step per block: 10 steps of float32 fit L1+L2

template <UnaryOp Op, typename In>
void unary_block(const void* x, void* out, size_t n) {
  using Out = typename unary_out<Op, In>::type;
  using C = math::compute_t<In>;
  const unary::Fn<Op> fn;
  const In* s = static_cast<const In*>(x);
  Out* d = static_cast<Out*>(out);
  for (size_t i = 0; i < n; ++i) d[i] = cast_value<Out>(fn(C(s[i])));
}

template <BinaryOp Op, typename T>
void binary_block(const void* x, const void* y, void* out, size_t n) {
  using Out = binary_out_t<Op, T>;
  using C = math::compute_t<T>;
  const binary::Fn<Op> fn;
  const T* a = static_cast<const T*>(x);
  const T* b = static_cast<const T*>(y);
  Out* d = static_cast<Out*>(out);
  for (size_t i = 0; i < n; ++i) d[i] = cast_value<Out>(fn(C(a[i]), C(b[i])));
}

void run_step(const FusedStep& st, const std::vector<FusedStep>& steps, const std::vector<const void*>& vals,
              void* out, size_t n) {
  switch (st.kind) {
    case FusedStep::Kind::Unary:
      dispatch_unary_op(st.unary, [&](auto op_c) {
        constexpr UnaryOp Op = decltype(op_c)::value;
        dispatch_dtype(steps[st.a].dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (unary_legal<Op, T>) {
            unary_block<Op, T>(vals[st.a], out, n);
          } else {
            throw std::invalid_argument("[compile] a fused unary op met a dtype it is not defined for.");
          }
        });
      });
      return;
    case FusedStep::Kind::Binary:
      dispatch_binary_op(st.binary, [&](auto op_c) {
        constexpr BinaryOp Op = decltype(op_c)::value;
        dispatch_dtype(steps[st.a].dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          if constexpr (binary_legal<Op, T>) {
            binary_block<Op, T>(vals[st.a], vals[st.b], out, n);
          } else {
            throw std::invalid_argument("[compile] a fused binary op met a dtype it is not defined for.");
          }
        });
      });
      return;
    case FusedStep::Kind::Cast:
      dispatch_dtype(steps[st.a].dtype, [&](auto in_tag) {
        using In = typename decltype(in_tag)::type;
        dispatch_dtype(st.dtype, [&](auto out_tag) {
          using Out = typename decltype(out_tag)::type;
          const In* s = static_cast<const In*>(vals[st.a]);
          Out* d = static_cast<Out*>(out);
          for (size_t i = 0; i < n; ++i) d[i] = cast_value<Out>(s[i]);
        });
      });
      return;
    case FusedStep::Kind::Select:
      dispatch_dtype(st.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const ternary::Select fn;
        const bool* c = static_cast<const bool*>(vals[st.a]);
        const T* x = static_cast<const T*>(vals[st.b]);
        const T* y = static_cast<const T*>(vals[st.c]);
        T* d = static_cast<T*>(out);
        for (size_t i = 0; i < n; ++i) d[i] = fn(c[i], x[i], y[i]);
      });
      return;
    case FusedStep::Kind::Input:
      break;
  }
  throw std::logic_error("[compile] run_step: an input step is not computed");
}

}  // namespace

void FusedElementwise::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  const size_t n = out.size();
  if (n == 0) return;
  // Inputs are read in row-major order: a strided one is made contiguous
  // first; a size-1 one is broadcast to every element.
  std::vector<array> dense;
  dense.reserve(inputs.size());
  for (const array& in : inputs) {
    dense.push_back(in.size() == 1 || in.flags().row_contiguous ? in : cpu::row_contiguous_copy(in));
  }
  const size_t last = steps_.size() - 1;
  cpu::parallel_chunks(n, [&](size_t begin, size_t end) {
    // Per thread: one block buffer per step (16 bytes holds any dtype).
    std::vector<std::unique_ptr<char[]>> buffers(steps_.size());
    std::vector<const void*> vals(steps_.size(), nullptr);
    for (size_t k = 0; k < steps_.size(); ++k) {
      const FusedStep& st = steps_[k];
      if (st.kind == FusedStep::Kind::Input && dense[st.input].size() == 1) {
        // A broadcast scalar: a block of copies, made once.
        const size_t w = size_of(st.dtype);
        buffers[k] = std::make_unique<char[]>(kBlock * w);
        for (size_t i = 0; i < kBlock; ++i) std::memcpy(buffers[k].get() + i * w, dense[st.input].raw_data(), w);
        vals[k] = buffers[k].get();
      } else if (st.kind != FusedStep::Kind::Input && k != last) {
        buffers[k] = std::make_unique<char[]>(kBlock * 16);
      }
    }
    char* out_bytes = static_cast<char*>(out.raw_data());
    const size_t out_width = size_of(out.dtype());
    for (size_t b = begin; b < end; b += kBlock) {
      const size_t m = std::min(kBlock, end - b);
      for (size_t k = 0; k < steps_.size(); ++k) {
        const FusedStep& st = steps_[k];
        if (st.kind == FusedStep::Kind::Input) {
          const array& in = dense[st.input];
          if (in.size() != 1) vals[k] = static_cast<const char*>(in.raw_data()) + b * size_of(st.dtype);
          continue;
        }
        void* dst = k == last ? static_cast<void*>(out_bytes + b * out_width) : buffers[k].get();
        run_step(st, steps_, vals, dst, m);
        vals[k] = dst;
      }
    }
  }, kBlock * 8);
}

}  // namespace alloy

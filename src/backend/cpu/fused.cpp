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
#include "backend/cpu/reduce_lanes.h"
#include "core/cast.h"
#include "alloy/detail/thread_pool.h"
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

namespace {

// One thread's evaluation of the program over blocks of elements: a buffer
// per computed step, inputs read in place, broadcast scalars as a block of
// copies made once.
class BlockRunner {
 public:
  BlockRunner(const std::vector<FusedStep>& steps, const std::vector<array>& inputs)
      : steps_(steps), inputs_(inputs), buffers_(steps.size()), vals_(steps.size(), nullptr) {
    for (size_t k = 0; k < steps.size(); ++k) {
      const FusedStep& st = steps[k];
      if (st.kind == FusedStep::Kind::Input && inputs[st.input].size() == 1) {
        const size_t w = size_of(st.dtype);
        buffers_[k] = std::make_unique<char[]>(kBlock * w);
        for (size_t i = 0; i < kBlock; ++i) std::memcpy(buffers_[k].get() + i * w, inputs[st.input].raw_data(), w);
        vals_[k] = buffers_[k].get();
      } else if (st.kind != FusedStep::Kind::Input) {
        buffers_[k] = std::make_unique<char[]>(kBlock * 16);  // 16 bytes holds any dtype
      }
    }
  }

  // Elements [b, b + m) of the last step (m <= kBlock), written to `dst`
  // when given (else to its block buffer); returns where they are.
  const void* run(size_t b, size_t m, void* dst = nullptr) {
    const size_t last = steps_.size() - 1;
    for (size_t k = 0; k < steps_.size(); ++k) {
      const FusedStep& st = steps_[k];
      if (st.kind == FusedStep::Kind::Input) {
        const array& in = inputs_[st.input];
        if (in.size() != 1) vals_[k] = static_cast<const char*>(in.raw_data()) + b * size_of(st.dtype);
        continue;
      }
      void* out = k == last && dst ? dst : buffers_[k].get();
      run_step(st, steps_, vals_, out, m);
      vals_[k] = out;
    }
    return vals_[last];
  }

 private:
  const std::vector<FusedStep>& steps_;
  const std::vector<array>& inputs_;
  std::vector<std::unique_ptr<char[]>> buffers_;
  std::vector<const void*> vals_;
};

// Reduces elements [b, e) of the program's values in the Reduce kernel's
// order (cpu::ReduceLanes), fed one block at a time: blocks are multiples of
// eight elements, so the lanes see the elements as they would in memory.
template <ReduceOp Op, typename T, typename Acc>
Acc reduce_range(BlockRunner& runner, size_t b, size_t e) {
  static_assert(kBlock % cpu::ReduceLanes<Op, Acc>::kLanes == 0);
  cpu::ReduceLanes<Op, Acc> lanes;
  for (size_t s = b; s < e; s += kBlock) {
    const size_t m = std::min(kBlock, e - s);
    lanes.add(static_cast<const T*>(runner.run(s, m)), static_cast<int64_t>(m));
  }
  return lanes.result();
}

// The Reduce kernel's two layouts for trailing axes, with the same split
// among threads: everything into one value (a part per thread), or one
// output per run of `run` elements.
template <ReduceOp Op, typename T>
void fused_reduce(const std::vector<FusedStep>& steps, const std::vector<array>& inputs, size_t n, array& out) {
  using Out = reduce_out_t<Op, T>;
  using Acc = reduce_acc_t<Op, T>;
  const reduce::Fn<Op> fn;
  const Acc identity = reduce::Fn<Op>::template identity<Acc>();
  Out* o = out.data<Out>();
  const size_t n_out = out.size();
  if (n == 0) {
    for (size_t i = 0; i < n_out; ++i) o[i] = cast_value<Out>(identity);
    return;
  }
  if (n_out == 1) {
    auto& pool = detail::ThreadPool::global();
    const size_t parts = std::max<size_t>(1, std::min(pool.size(), n >> 16));
    const size_t per = (n + parts - 1) / parts;
    auto part = cpu::filled<Acc>(parts, identity);
    pool.parallel_for(parts, [&](size_t p) {
      const size_t b = p * per, e = std::min(n, b + per);
      if (b >= e) return;
      BlockRunner runner(steps, inputs);
      part[p] = reduce_range<Op, T, Acc>(runner, b, e);
    });
    Acc total = identity;
    for (size_t p = 0; p < parts; ++p) total = fn(total, part[p]);
    o[0] = cast_value<Out>(total);
    return;
  }
  const size_t run = n / n_out;
  cpu::parallel_chunks(
      n_out,
      [&](size_t b, size_t e) {
        BlockRunner runner(steps, inputs);
        for (size_t r = b; r < e; ++r) o[r] = cast_value<Out>(reduce_range<Op, T, Acc>(runner, r * run, (r + 1) * run));
      },
      std::max<size_t>(1, (size_t(1) << 15) / std::max<size_t>(run, 1)));
}

}  // namespace

void FusedElementwise::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  cpu::allocate_row_contiguous(out);
  // Inputs are read in row-major order: a strided one is made contiguous
  // first; a size-1 one is broadcast to every element.
  std::vector<array> dense;
  dense.reserve(inputs.size());
  for (const array& in : inputs) {
    dense.push_back(in.size() == 1 || in.flags().row_contiguous ? in : cpu::row_contiguous_copy(in));
  }
  if (reduces_) {
    const size_t n = shape_size(domain_);
    dispatch_reduce_op(reduce_, [&](auto op_c) {
      constexpr ReduceOp Op = decltype(op_c)::value;
      dispatch_dtype(steps_.back().dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (reduce_legal<Op, T>) {
          fused_reduce<Op, T>(steps_, dense, n, out);
        } else {
          throw std::invalid_argument("[compile] a fused reduction met a dtype it is not defined for.");
        }
      });
    });
    return;
  }
  const size_t n = out.size();
  if (n == 0) return;
  char* out_bytes = static_cast<char*>(out.raw_data());
  const size_t out_width = size_of(out.dtype());
  cpu::parallel_chunks(
      n,
      [&](size_t begin, size_t end) {
        BlockRunner runner(steps_, dense);
        for (size_t b = begin; b < end; b += kBlock) runner.run(b, std::min(kBlock, end - b), out_bytes + b * out_width);
      },
      kBlock * 8);
}

}  // namespace alloy

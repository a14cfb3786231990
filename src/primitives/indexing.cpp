#include "primitives/indexing.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "primitives/shape.h"

namespace alloy {

ShapeElem slice_length(ShapeElem start, ShapeElem stop, ShapeElem step) {
  int64_t n = step > 0 ? (static_cast<int64_t>(stop) - start + step - 1) / step
                       : (static_cast<int64_t>(start) - stop + (-step) - 1) / (-step);
  return static_cast<ShapeElem>(std::max<int64_t>(n, 0));
}

void slice_view(const array& in, array& out, const Shape& start, const Shape& strides) {
  Strides st(in.ndim());
  int64_t offset = 0;
  for (int i = 0; i < in.ndim(); ++i) {
    st[i] = in.strides()[i] * strides[i];
    offset += in.strides()[i] * start[i];
  }
  make_view(in, out, st, offset);
}

namespace {
// Index arrays among the primals: positions 1 .. 1 + count.
std::vector<array> index_inputs(const std::vector<array>& primals, size_t count) {
  return std::vector<array>(primals.begin() + 1, primals.begin() + 1 + count);
}
bool wants(const std::vector<int>& argnums, int i) {
  return std::find(argnums.begin(), argnums.end(), i) != argnums.end();
}
// Indices computed from what is differentiated (argmax(x) used to index x)
// have no gradient; MLX refuses them rather than give zero, naming the fix.
[[noreturn]] void throw_index_vjp(const char* op) {
  throw std::invalid_argument(std::string("[") + op +
                              "] Cannot calculate VJP with respect to indices. Use stop_gradient on indices to "
                              "stop gradients from being computed.");
}
}  // namespace

// ---- Slice

bool Slice::is_equivalent(const Primitive& o) const {
  auto* other = dynamic_cast<const Slice*>(&o);
  return other && other->start_ == start_ && other->stop_ == stop_ && other->strides_ == strides_;
}

std::vector<array> Slice::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                              const std::vector<int>&, const std::vector<array>&) {
  return {slice_update(zeros_like(primals[0], stream()), cotangents[0], start_, stop_, strides_, stream())};
}

std::vector<array> Slice::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                              const std::vector<int>&) {
  return {slice(tangents[0], start_, stop_, strides_, stream())};
}

// ---- SliceUpdate

std::vector<array> SliceUpdate::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                    const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      // The overwritten region receives nothing.
      grads.push_back(slice_update(cot, zeros_like(primals[1], stream()), start_, stop_, strides_, stream()));
    } else {
      grads.push_back(slice(cot, start_, stop_, strides_, stream()));
    }
  }
  return grads;
}

std::vector<array> SliceUpdate::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                    const std::vector<int>& argnums) {
  auto tangent = [&](int i) {
    auto it = std::find(argnums.begin(), argnums.end(), i);
    return it == argnums.end() ? zeros_like(primals[i], stream()) : tangents[it - argnums.begin()];
  };
  return {slice_update(tangent(0), tangent(1), start_, stop_, strides_, stream())};
}

// ---- Gather

std::vector<array> Gather::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> idx = index_inputs(primals, axes_.size());
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      // Each gathered block adds its cotangent back where it came from
      // (repeated indices accumulate).
      grads.push_back(
          scatter(zeros_like(primals[0], stream()), idx, cotangents[0], axes_, ScatterReduce::add, stream()));
    } else {
      throw_index_vjp("gather");
    }
  }
  return grads;
}

std::vector<array> Gather::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  if (!wants(argnums, 0)) {
    Shape shape = axes_.empty() ? Shape{} : primals[1].shape();
    shape.insert(shape.end(), slice_sizes_.begin(), slice_sizes_.end());
    return {zeros(shape, primals[0].dtype(), stream())};
  }
  return {gather(tangents[0], index_inputs(primals, axes_.size()), axes_, slice_sizes_, stream())};
}

// ---- Scatter
//
// Derivatives, elementwise: an update element u_k lands on the element p(k)
// of `a` its block covers; S_p = the in-range updates landing on p.
//   none:  out_p = the last u_k of S_p, or a_p when S_p is empty.
//   add:   out_p = a_p + sum_{k in S_p} u_k.
//   prod:  out_p = a_p * prod_{k in S_p} u_k. d/da_p = prod_{S_p} u, and
//          d/du_k = a_p * prod_{j in S_p, j != k} u_j, built without dividing
//          by zero: with Z_p zero updates and N_p the product of the nonzero
//          ones, the product of the others is N_p / u_k (Z_p = 0), N_p for
//          the one zero u_k (Z_p = 1), and 0 otherwise. Exact zeros in `a` or
//          in the updates give exact first derivatives, never inf or nan
//          (those zero branches are constants, so a second derivative at an
//          exact zero update misses the terms through that zero).
//   max/min: the derivative goes to the winners: a_p if a_p == out_p, and
//          each u_k with u_k == out_p; ties share it equally (each gets 1 / winners),
//          as JAX and as our Reduce max/min. (MLX gives every tied winner the
//          whole cotangent; we split so the vjp and jvp stay transposes of
//          each other and the gradients sum to the cotangent.)
// Updates whose index is out of range are dropped by the scatter and get a
// zero derivative (a gather would clamp them onto some real element).

namespace {

// Views of one Scatter's inputs used by its derivatives.
struct ScatterParts {
  const array& a;
  std::vector<array> idx;
  const array& updates;
  Shape block;  // shape of one update block
};

ScatterParts scatter_parts(const std::vector<array>& primals, size_t n_idx) {
  const array& a = primals[0];
  const array& updates = primals.back();
  return {a, index_inputs(primals, n_idx), updates, Shape(updates.shape().end() - a.ndim(), updates.shape().end())};
}

// Bool, shape I + (1,) * ndim: whether index position i lands inside `a`
// (after wrapping negatives once), i.e. whether the scatter keeps its block.
array kept_updates(const ScatterParts& p, const std::vector<int>& axes, Stream s) {
  const int nd = p.a.ndim();
  Shape idx_shape = p.idx.empty() ? Shape{} : p.idx[0].shape();
  Shape mask_shape = idx_shape;
  mask_shape.insert(mask_shape.end(), nd, 1);
  array kept = full(mask_shape, array(true), Dtype::bool_, s);
  for (size_t k = 0; k < p.idx.size(); ++k) {
    const int64_t n = p.a.shape(axes[k]);
    const int64_t limit = n - p.block[axes[k]];
    array v = astype(p.idx[k], Dtype::int64, s);
    array zero(int64_t{0}, Dtype::int64);
    v = where(less(v, zero, s), add(v, array(n, Dtype::int64), s), v, s);
    array ok = logical_and(greater_equal(v, zero, s), less_equal(v, array(limit, Dtype::int64), s), s);
    kept = logical_and(kept, reshape(ok, mask_shape, s), s);
  }
  return kept;
}

// Per element of `a`, how many kept updates satisfy `mask` (int32).
array count_per_element(const ScatterParts& p, const array& mask, const std::vector<int>& axes, Stream s) {
  return scatter(zeros(p.a.shape(), Dtype::int32, s), p.idx, astype(mask, Dtype::int32, s), axes,
                 ScatterReduce::add, s);
}

// An `a`-shaped array read back at every update element (shape of updates).
array at_updates(const array& x, const ScatterParts& p, const std::vector<int>& axes, Stream s) {
  return gather(x, p.idx, axes, p.block, s);
}

// Scatter-prod partials: d out / d a (a-shaped) and d out_p(k) / d u_k
// (updates-shaped, zero for dropped updates).
struct ProdPartials {
  array wrt_a;
  array wrt_updates;
};

ProdPartials prod_partials(const ScatterParts& p, const std::vector<int>& axes, Stream s) {
  const Dtype d = p.a.dtype();
  array zero(0.0, d), one(1.0, d);
  array u_is_zero = equal(p.updates, zero, s);
  array u_nonzero = where(u_is_zero, one, p.updates, s);
  array n_zero = count_per_element(p, u_is_zero, axes, s);
  array prod_nonzero = scatter(ones_like(p.a, s), p.idx, u_nonzero, axes, ScatterReduce::prod, s);
  array wrt_a = where(equal(n_zero, array(0, Dtype::int32), s), prod_nonzero, zero, s);
  array zeros_k = at_updates(n_zero, p, axes, s);
  array prod_k = at_updates(prod_nonzero, p, axes, s);
  array others = where(u_is_zero, where(equal(zeros_k, array(1, Dtype::int32), s), prod_k, zero, s),
                       where(equal(zeros_k, array(0, Dtype::int32), s), divide(prod_k, u_nonzero, s), zero, s), s);
  array wrt_u = where(kept_updates(p, axes, s), multiply(at_updates(p.a, p, axes, s), others, s), zero, s);
  return {wrt_a, wrt_u};
}

// Scatter-max/min winners: which of a and of the updates equal the result,
// and 1 / (number of winners) per element of `a`.
struct Winners {
  array a_wins;        // a-shaped bool
  array update_wins;   // updates-shaped bool, false for dropped updates
  array share;         // a-shaped, 1 / winners (1 where nothing equals the result, e.g. nan)
};

Winners winners(const ScatterParts& p, const array& result, const std::vector<int>& axes, Stream s) {
  array a_wins = equal(p.a, result, s);
  array update_wins =
      logical_and(equal(p.updates, at_updates(result, p, axes, s), s), kept_updates(p, axes, s), s);
  array count = add(count_per_element(p, update_wins, axes, s), astype(a_wins, Dtype::int32, s), s);
  count = maximum(count, array(1, Dtype::int32), s);
  return {a_wins, update_wins, reciprocal(astype(count, p.a.dtype(), s), s)};
}

}  // namespace

std::vector<array> Scatter::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                const std::vector<int>& argnums, const std::vector<array>& outputs) {
  const Stream s = stream();
  const array& cot = cotangents[0];
  const int upd = static_cast<int>(primals.size()) - 1;
  ScatterParts p = scatter_parts(primals, axes_.size());
  array zero(0.0, cot.dtype());
  std::optional<ProdPartials> prod;
  std::optional<Winners> win;
  if (reduce_ == ScatterReduce::prod) prod = prod_partials(p, axes_, s);
  if (reduce_ == ScatterReduce::max || reduce_ == ScatterReduce::min) win = winners(p, outputs[0], axes_, s);
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      switch (reduce_) {
        case ScatterReduce::none:  // the overwritten elements receive nothing
          grads.push_back(scatter(cot, p.idx, zeros_like(p.updates, s), axes_, ScatterReduce::none, s));
          break;
        case ScatterReduce::add: grads.push_back(cot); break;
        case ScatterReduce::prod: grads.push_back(multiply(cot, prod->wrt_a, s)); break;
        case ScatterReduce::max:
        case ScatterReduce::min: grads.push_back(where(win->a_wins, multiply(cot, win->share, s), zero, s)); break;
      }
    } else if (arg == upd) {
      switch (reduce_) {
        case ScatterReduce::none:
        case ScatterReduce::add:
          grads.push_back(where(kept_updates(p, axes_, s), at_updates(cot, p, axes_, s), zero, s));
          break;
        case ScatterReduce::prod: grads.push_back(multiply(at_updates(cot, p, axes_, s), prod->wrt_updates, s)); break;
        case ScatterReduce::max:
        case ScatterReduce::min:
          grads.push_back(
              where(win->update_wins, at_updates(multiply(cot, win->share, s), p, axes_, s), zero, s));
          break;
      }
    } else {
      throw_index_vjp("scatter");
    }
  }
  return grads;
}

std::vector<array> Scatter::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>& argnums) {
  const Stream s = stream();
  const int upd = static_cast<int>(primals.size()) - 1;
  auto tangent = [&](int i) {
    auto it = std::find(argnums.begin(), argnums.end(), i);
    return it == argnums.end() ? zeros_like(primals[i], s) : tangents[it - argnums.begin()];
  };
  ScatterParts p = scatter_parts(primals, axes_.size());
  array t_a = tangent(0);
  array t_u = tangent(upd);
  switch (reduce_) {
    case ScatterReduce::none:
    case ScatterReduce::add: return {scatter(t_a, p.idx, t_u, axes_, reduce_, s)};
    case ScatterReduce::prod: {
      ProdPartials d = prod_partials(p, axes_, s);
      return {scatter(multiply(t_a, d.wrt_a, s), p.idx, multiply(t_u, d.wrt_updates, s), axes_, ScatterReduce::add,
                      s)};
    }
    case ScatterReduce::max:
    case ScatterReduce::min: {
      array result(p.a.shape(), p.a.dtype(), std::make_shared<Scatter>(s, axes_, reduce_), primals);
      Winners w = winners(p, result, axes_, s);
      array zero(0.0, t_a.dtype());
      array sum = scatter(where(w.a_wins, t_a, zero, s), p.idx, where(w.update_wins, t_u, zero, s), axes_,
                          ScatterReduce::add, s);
      return {multiply(sum, w.share, s)};
    }
  }
  return {};
}

}  // namespace alloy

// einsum and einsum_path: subscripts parsed into integer labels, a greedy
// pairwise contraction order, each pair contracted by matmul (or multiply
// when nothing is summed between them).
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "alloy/ops_shape.h"
#include "linalg_composites.h"
#include "op_utils.h"

namespace alloy {

namespace {

// Letters are their character codes; ellipsis dimensions are kEllipsis + j,
// j counted from the left of the widest ellipsis, so that they line up from
// the right as broadcasting does.
constexpr int kEllipsis = 256;
using Labels = std::vector<int>;
using LabelSet = std::set<int>;

struct Term {
  std::vector<int> letters_before, letters_after;  // around "..."
  bool ellipsis = false;
};

[[noreturn]] void bad_char(char c) {
  throw std::invalid_argument(std::string("[einsum] Subscripts must be letters, but got '") + c + "'.");
}

Term parse_term(const std::string& t) {
  Term out;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '.') {
      if (out.ellipsis || t.compare(i, 3, "...") != 0) bad_char(c);
      out.ellipsis = true;
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      (out.ellipsis ? out.letters_after : out.letters_before).push_back(c);
    } else {
      bad_char(c);
    }
  }
  return out;
}

struct Parsed {
  std::vector<Labels> inputs;
  Labels output;
  std::map<int, int64_t> sizes;
};

Parsed parse(const std::string& subscripts, const std::vector<array>& operands) {
  std::string text;
  for (char c : subscripts)
    if (!std::isspace(static_cast<unsigned char>(c))) text += c;
  const size_t arrow = text.find("->");
  const std::string lhs = text.substr(0, arrow);
  std::vector<Term> terms;
  size_t from = 0;
  while (true) {
    const size_t comma = lhs.find(',', from);
    terms.push_back(parse_term(lhs.substr(from, comma == std::string::npos ? std::string::npos : comma - from)));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  std::optional<Term> out_term;
  if (arrow != std::string::npos) out_term = parse_term(text.substr(arrow + 2));
  if (terms.size() != operands.size()) {
    throw std::invalid_argument("[einsum] Number of operands, " + std::to_string(operands.size()) +
                                ", does not match number of input subscripts, " + std::to_string(terms.size()));
  }
  // Ellipsis widths first: the widest decides the labels.
  std::vector<int> widths(terms.size(), 0);
  int widest = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int letters = static_cast<int>(terms[i].letters_before.size() + terms[i].letters_after.size());
    const int nd = operands[i].ndim();
    if (terms[i].ellipsis ? letters > nd : letters != nd) {
      throw std::invalid_argument("[einsum] Invalid number of subscripts " + std::to_string(letters) +
                                  " for input " + std::to_string(i) + " with " + std::to_string(nd) +
                                  " dimensions.");
    }
    widths[i] = terms[i].ellipsis ? nd - letters : 0;
    widest = std::max(widest, widths[i]);
  }
  Parsed p;
  for (size_t i = 0; i < terms.size(); ++i) {
    Labels l = terms[i].letters_before;
    for (int j = widest - widths[i]; j < widest; ++j) l.push_back(kEllipsis + j);
    l.insert(l.end(), terms[i].letters_after.begin(), terms[i].letters_after.end());
    for (size_t d = 0; d < l.size(); ++d) {
      const int64_t n = operands[i].shape(static_cast<int>(d));
      auto it = p.sizes.find(l[d]);
      if (it == p.sizes.end() || it->second == 1) {
        p.sizes[l[d]] = n;
      } else if (n != 1 && n != it->second) {
        throw std::invalid_argument("[einsum] Cannot broadcast dimension " + std::to_string(d) + " of input " +
                                    std::to_string(i) + " with shape " + shape_to_string(operands[i].shape()) +
                                    " to size " + std::to_string(it->second) + ".");
      }
    }
    p.inputs.push_back(std::move(l));
  }
  if (out_term) {
    Labels l = out_term->letters_before;
    if (out_term->ellipsis)
      for (int j = 0; j < widest; ++j) l.push_back(kEllipsis + j);
    l.insert(l.end(), out_term->letters_after.begin(), out_term->letters_after.end());
    if (LabelSet(l.begin(), l.end()).size() != l.size()) {
      throw std::invalid_argument("[einsum] Repeat indices not allowed in output.");
    }
    for (int c : l) {
      if (!p.sizes.count(c)) {
        throw std::invalid_argument(std::string("[einsum] Output subscript '") + static_cast<char>(c) +
                                    "' does not appear in the inputs.");
      }
    }
    p.output = std::move(l);
  } else {
    // Implicit output: the ellipsis, then letters used once, in order.
    std::map<int, int> count;
    for (const Labels& l : p.inputs)
      for (int c : l) ++count[c];
    for (int j = 0; j < widest; ++j) p.output.push_back(kEllipsis + j);
    for (auto [c, n] : count)
      if (c < kEllipsis && n == 1) p.output.push_back(c);
  }
  return p;
}

int64_t size_of_set(const LabelSet& s, const std::map<int, int64_t>& sizes) {
  int64_t n = 1;
  for (int c : s) n *= sizes.at(c);
  return n;
}

// Labels of operands other than i and j, and of the output: they must survive.
LabelSet kept_labels(const std::vector<LabelSet>& ops, size_t i, size_t j, const Labels& output) {
  LabelSet k(output.begin(), output.end());
  for (size_t o = 0; o < ops.size(); ++o)
    if (o != i && o != j) k.insert(ops[o].begin(), ops[o].end());
  return k;
}

LabelSet contracted_result(const LabelSet& a, const LabelSet& b, const LabelSet& kept) {
  LabelSet r;
  for (int c : a)
    if (kept.count(c)) r.insert(c);
  for (int c : b)
    if (kept.count(c)) r.insert(c);
  return r;
}

// Greedy order: repeatedly the pair whose result shrinks the data most
// (result size minus input sizes); pairs sharing a label before outer products.
std::vector<std::vector<int>> greedy_path(std::vector<LabelSet> ops, const Labels& output,
                                          const std::map<int, int64_t>& sizes) {
  std::vector<std::vector<int>> path;
  if (ops.size() == 1) return {{0}};
  while (ops.size() > 1) {
    bool found = false, found_shared = false;
    int64_t best = 0;
    size_t bi = 0, bj = 1;
    for (size_t i = 0; i < ops.size(); ++i) {
      for (size_t j = i + 1; j < ops.size(); ++j) {
        bool shared = false;
        for (int c : ops[i]) shared = shared || ops[j].count(c);
        if (found_shared && !shared) continue;
        LabelSet r = contracted_result(ops[i], ops[j], kept_labels(ops, i, j, output));
        const int64_t cost = size_of_set(r, sizes) - size_of_set(ops[i], sizes) - size_of_set(ops[j], sizes);
        if (!found || (shared && !found_shared) || cost < best) {
          found = true;
          found_shared = found_shared || shared;
          best = cost;
          bi = i;
          bj = j;
        }
      }
    }
    LabelSet r = contracted_result(ops[bi], ops[bj], kept_labels(ops, bi, bj, output));
    path.push_back({static_cast<int>(bi), static_cast<int>(bj)});
    ops.erase(ops.begin() + bj);
    ops.erase(ops.begin() + bi);
    ops.push_back(std::move(r));
  }
  return path;
}

struct Operand {
  array value;
  Labels labels;
};

int position(const Labels& l, int c) { return static_cast<int>(std::find(l.begin(), l.end(), c) - l.begin()); }

// Sums the labels of `op` that are not in `keep`.
Operand sum_unkept(Operand op, const LabelSet& keep, SD s) {
  std::vector<int> axes;
  Labels rest;
  for (size_t d = 0; d < op.labels.size(); ++d) {
    if (keep.count(op.labels[d])) {
      rest.push_back(op.labels[d]);
    } else {
      axes.push_back(static_cast<int>(d));
    }
  }
  if (axes.empty()) return op;
  return {sum(op.value, axes, false, s), rest};
}

// Broadcast size-1 dimensions to their label's size, then take diagonals of
// repeated labels, so every operand has distinct, full-size labels.
Operand prepare(const array& a, Labels labels, const std::map<int, int64_t>& sizes, SD s) {
  Shape full;
  for (int c : labels) full.push_back(static_cast<ShapeElem>(sizes.at(c)));
  array v = full == a.shape() ? a : broadcast_to(a, full, s);
  for (size_t d = 0; d < labels.size(); ++d) {
    for (size_t e = d + 1; e < labels.size(); ++e) {
      if (labels[d] != labels[e]) continue;
      const int c = labels[d];
      v = diagonal(v, 0, static_cast<int>(d), static_cast<int>(e), s);
      labels.erase(labels.begin() + e);
      labels.erase(labels.begin() + d);
      labels.push_back(c);
      d = static_cast<size_t>(-1);  // rescan: positions moved
      break;
    }
  }
  return {v, labels};
}

Operand contract_pair(Operand a, Operand b, const LabelSet& kept, const std::map<int, int64_t>& sizes, SD s) {
  LabelSet la(a.labels.begin(), a.labels.end()), lb(b.labels.begin(), b.labels.end());
  LabelSet keep_a = kept, keep_b = kept;
  keep_a.insert(lb.begin(), lb.end());
  keep_b.insert(la.begin(), la.end());
  a = sum_unkept(std::move(a), keep_a, s);
  b = sum_unkept(std::move(b), keep_b, s);
  Labels batch, contract, free_a, free_b;
  for (int c : a.labels) {
    if (std::find(b.labels.begin(), b.labels.end(), c) == b.labels.end()) {
      free_a.push_back(c);
    } else {
      (kept.count(c) ? batch : contract).push_back(c);
    }
  }
  for (int c : b.labels)
    if (std::find(a.labels.begin(), a.labels.end(), c) == a.labels.end()) free_b.push_back(c);
  auto perm = [](const Operand& op, std::initializer_list<const Labels*> groups) {
    std::vector<int> p;
    for (const Labels* g : groups)
      for (int c : *g) p.push_back(position(op.labels, c));
    return p;
  };
  auto dims = [&](const Labels& g) {
    Shape sh;
    for (int c : g) sh.push_back(static_cast<ShapeElem>(sizes.at(c)));
    return sh;
  };
  auto prod = [&](const Labels& g) {
    int64_t n = 1;
    for (int c : g) n *= sizes.at(c);
    return static_cast<ShapeElem>(n);
  };
  Labels result = batch;
  result.insert(result.end(), free_a.begin(), free_a.end());
  result.insert(result.end(), free_b.begin(), free_b.end());
  Shape out = dims(result);
  if (contract.empty()) {
    // Nothing summed between them: a broadcast product.
    Shape sa = dims(batch), sb = dims(batch);
    Shape fa = dims(free_a), fb = dims(free_b);
    sa.insert(sa.end(), fa.begin(), fa.end());
    sa.insert(sa.end(), fb.size(), 1);
    sb.insert(sb.end(), fa.size(), 1);
    sb.insert(sb.end(), fb.begin(), fb.end());
    array x = reshape(transpose(a.value, perm(a, {&batch, &free_a}), s), sa, s);
    array y = reshape(transpose(b.value, perm(b, {&batch, &free_b}), s), sb, s);
    return {multiply(x, y, s), result};
  }
  Shape sa = dims(batch), sb = dims(batch);
  sa.insert(sa.end(), {prod(free_a), prod(contract)});
  sb.insert(sb.end(), {prod(contract), prod(free_b)});
  array x = reshape(transpose(a.value, perm(a, {&batch, &free_a, &contract}), s), sa, s);
  array y = reshape(transpose(b.value, perm(b, {&batch, &contract, &free_b}), s), sb, s);
  return {reshape(inexact_matmul(x, y, s), out, s), result};
}

std::vector<LabelSet> label_sets(const std::vector<Labels>& inputs) {
  std::vector<LabelSet> out;
  for (const Labels& l : inputs) out.emplace_back(l.begin(), l.end());
  return out;
}

}  // namespace

array einsum(const std::string& subscripts, const std::vector<array>& operands, SD s) {
  Parsed p = parse(subscripts, operands);
  std::vector<Operand> ops;
  for (size_t i = 0; i < operands.size(); ++i) ops.push_back(prepare(operands[i], p.inputs[i], p.sizes, s));
  std::vector<LabelSet> sets = label_sets(p.inputs);
  for (const std::vector<int>& step : greedy_path(sets, p.output, p.sizes)) {
    if (step.size() != 2) break;  // a single operand: nothing to pair
    const size_t i = step[0], j = step[1];
    LabelSet kept = kept_labels(sets, i, j, p.output);
    Operand r = contract_pair(ops[i], ops[j], kept, p.sizes, s);
    LabelSet rs(r.labels.begin(), r.labels.end());
    ops.erase(ops.begin() + j);
    ops.erase(ops.begin() + i);
    sets.erase(sets.begin() + j);
    sets.erase(sets.begin() + i);
    ops.push_back(std::move(r));
    sets.push_back(std::move(rs));
  }
  Operand last = sum_unkept(ops[0], LabelSet(p.output.begin(), p.output.end()), s);
  std::vector<int> perm;
  for (int c : p.output) perm.push_back(position(last.labels, c));
  return transpose(last.value, perm, s);
}

std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands) {
  Parsed p = parse(subscripts, operands);
  std::vector<LabelSet> sets = label_sets(p.inputs);
  const LabelSet out(p.output.begin(), p.output.end());
  // FLOPs of one step as numpy counts them: the index space times (terms - 1,
  // at least 1), plus one when the step sums an index away.
  auto flops = [&](const LabelSet& idx, const LabelSet& result, size_t terms) {
    bool inner = false;
    for (int c : idx) inner = inner || !result.count(c);
    return size_of_set(idx, p.sizes) * static_cast<int64_t>(std::max<size_t>(1, terms - 1) + (inner ? 1 : 0));
  };
  LabelSet all;
  for (const LabelSet& l : sets) all.insert(l.begin(), l.end());
  const int64_t naive = flops(all, out, sets.size());
  auto path = greedy_path(sets, p.output, p.sizes);
  int64_t optimized = 0;
  size_t scaling = 0;
  for (const std::vector<int>& step : path) {
    if (step.size() == 1) {
      optimized += flops(sets[0], out, 1);
      scaling = std::max(scaling, sets[0].size());
      continue;
    }
    const size_t i = step[0], j = step[1];
    LabelSet idx = sets[i];
    idx.insert(sets[j].begin(), sets[j].end());
    LabelSet r = contracted_result(sets[i], sets[j], kept_labels(sets, i, j, p.output));
    optimized += flops(idx, r, 2);
    scaling = std::max(scaling, idx.size());
    sets.erase(sets.begin() + j);
    sets.erase(sets.begin() + i);
    sets.push_back(std::move(r));
  }
  std::ostringstream info;
  info << "  Complete contraction:  " << subscripts << "\n"
       << "         Naive scaling:  " << all.size() << "\n"
       << "     Optimized scaling:  " << scaling << "\n"
       << "      Naive FLOP count:  " << naive << "\n"
       << "  Optimized FLOP count:  " << optimized << "\n";
  return {path, info.str()};
}

}  // namespace alloy

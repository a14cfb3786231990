#include "transforms/fuse_elementwise.h"

#include <map>
#include <numeric>

#include "jit/nvrtc.h"
#include "primitives/binary.h"
#include "primitives/fused.h"
#include "primitives/layout.h"
#include "primitives/reduce.h"
#include "primitives/ternary.h"
#include "primitives/unary.h"

namespace alloy::detail {

namespace {

enum class Role { None, Compute, ScalarBroadcast };

// What a node can be in a fused chain: an elementwise op (unary, binary,
// cast, select) of one output, or a broadcast of a one-element value (a
// scalar operand). Both devices fuse; a chain never crosses streams.
Role role_of(const ExportedNode& n, const std::vector<Shape>& value_shapes) {
  if (!n.live || n.shapes.size() != 1) return Role::None;
  const Primitive* p = n.live.get();
  if (dynamic_cast<const Broadcast*>(p)) {
    return n.inputs.size() == 1 && shape_size(value_shapes[n.inputs[0]]) == 1 ? Role::ScalarBroadcast : Role::None;
  }
  if (!dynamic_cast<const Unary*>(p) && !dynamic_cast<const Binary*>(p) && !dynamic_cast<const AsType*>(p) &&
      !dynamic_cast<const Select*>(p)) {
    return Role::None;
  }
  return Role::Compute;
}

int find(std::vector<int>& parent, int i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

}  // namespace

ExportedTrace fuse_elementwise(const ExportedTrace& t, int* fused) {
  if (fused) *fused = 0;
  // Values: arguments, keyword arguments, constants, then node outputs.
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& [s, d] : t.args) shapes.push_back(s), dtypes.push_back(d);
  for (const auto& [name, sd] : t.kwargs) shapes.push_back(sd.first), dtypes.push_back(sd.second);
  for (const array& c : t.constants) shapes.push_back(c.shape()), dtypes.push_back(c.dtype());
  const size_t first_node_value = shapes.size();
  std::vector<int> producer(first_node_value, -1);
  std::vector<uint32_t> first_output(t.nodes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    first_output[i] = static_cast<uint32_t>(shapes.size());
    for (size_t k = 0; k < t.nodes[i].shapes.size(); ++k) {
      shapes.push_back(t.nodes[i].shapes[k]);
      dtypes.push_back(t.nodes[i].dtypes[k]);
      producer.push_back(static_cast<int>(i));
    }
  }
  std::vector<int> uses(shapes.size(), 0);
  for (const ExportedNode& n : t.nodes)
    for (uint32_t v : n.inputs) ++uses[v];
  for (uint32_t v : t.outputs) uses[v] += 2;  // an output is always materialised

  // Roles, and the nodes reading each value.
  std::vector<Role> roles(t.nodes.size());
  std::vector<std::vector<int>> readers(shapes.size());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    roles[i] = role_of(t.nodes[i], shapes);
    for (uint32_t v : t.nodes[i].inputs) readers[v].push_back(static_cast<int>(i));
  }
  // Whether operand `v` of compute node `i` can be computed inside i's chain:
  // made by a chain node of the same shape on the same stream.
  auto joinable = [&](uint32_t v, size_t i) {
    const int p = producer[v];
    return p >= 0 && roles[p] != Role::None && t.nodes[p].shapes[0] == t.nodes[i].shapes[0] &&
           t.nodes[p].live->stream() == t.nodes[i].live->stream();
  };
  // A value every reader of which can take it into its chain (it is no
  // output): those readers and its producer form one chain, which reads it
  // as often as it likes without storing it.
  auto shared_within = [&](uint32_t v) {
    if (readers[v].empty()) return false;
    for (uint32_t o : t.outputs)
      if (o == v) return false;
    for (int r : readers[v])
      if (roles[r] != Role::Compute || !joinable(v, r)) return false;
    return true;
  };
  std::vector<int> parent(t.nodes.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto join = [&](bool shared, const std::vector<bool>* only) {
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      if (roles[i] != Role::Compute || (only && !(*only)[i])) continue;
      for (uint32_t v : t.nodes[i].inputs) {
        if (!joinable(v, i) || (only && !(*only)[producer[v]])) continue;
        if (shared ? !shared_within(v) : uses[v] != 1) continue;
        parent[find(parent, producer[v])] = find(parent, static_cast<int>(i));
      }
    }
  };
  auto grouped = [&] {
    std::map<int, std::vector<int>> g;  // representative -> members in order
    for (size_t i = 0; i < t.nodes.size(); ++i)
      if (roles[i] != Role::None) g[find(parent, static_cast<int>(i))].push_back(static_cast<int>(i));
    return g;
  };
  // First with shared values. A chain is one node placed at its last member,
  // so only that member may be read from outside (or be an output): then
  // everything outside that reads the chain comes after all of it. A chain
  // where another member is read outside falls back to single readers
  // (trees, whose last member is always the only one read outside).
  join(/*shared=*/true, nullptr);
  std::vector<bool> redo(t.nodes.size(), false);
  bool any_redo = false;
  for (const auto& [rep, members] : grouped()) {
    bool valid = true;
    for (size_t k = 0; k + 1 < members.size() && valid; ++k) {
      const uint32_t v = first_output[members[k]];
      valid = shared_within(v) || (uses[v] == 1 && find(parent, readers[v][0]) == rep);
    }
    if (valid) continue;
    for (int m : members) redo[m] = true, parent[m] = m;
    any_redo = true;
  }
  if (any_redo) join(/*shared=*/false, &redo);
  std::map<int, std::vector<int>> chains = grouped();
  // Each chain under its last member, which reads or is every other member's
  // value (directly or through others).
  std::map<int, std::vector<int>> groups;
  for (auto& [rep, members] : chains) groups[members.back()] = std::move(members);
  std::vector<int> root_of(t.nodes.size(), -1);
  for (const auto& [root, members] : groups)
    for (int m : members) root_of[m] = root;
  // A reduction over trailing axes (all axes included) of a chain's result
  // that nothing else reads ends the chain: the values are reduced as they
  // are made, never stored.
  std::map<int, int> reduction_of;  // chain root -> the Reduce node
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const ExportedNode& n = t.nodes[i];
    auto* r = n.live ? dynamic_cast<const Reduce*>(n.live.get()) : nullptr;
    if (!r || n.shapes.size() != 1 || n.inputs.size() != 1) continue;
    const uint32_t v = n.inputs[0];
    const int p = producer[v];
    if (p < 0 || roles[p] != Role::Compute || uses[v] != 1 || root_of[p] != p ||
        t.nodes[p].live->stream() != r->stream()) {
      continue;
    }
    const int ndim = static_cast<int>(shapes[v].size());
    const std::vector<int>& axes = r->axes();
    bool trailing = !axes.empty();
    for (size_t k = 0; k < axes.size(); ++k) trailing = trailing && axes[k] == ndim - static_cast<int>(axes.size()) + static_cast<int>(k);
    if (trailing) reduction_of[p] = static_cast<int>(i);
  }
  std::vector<int> group_of(t.nodes.size(), -1);  // the root of a chain worth fusing
  std::vector<int> emitted_at(t.nodes.size(), -1);  // root -> the node whose place the fused node takes
  for (const auto& [root, members] : groups) {
    int computing = 0;
    for (int m : members) computing += roles[m] == Role::Compute;
    const bool reduced = reduction_of.count(root) > 0;
    if (computing < (reduced ? 1 : 2)) continue;  // one op alone: nothing to gain
    // A GPU chain is a kernel NVRTC compiles. Asked only here, so tracing
    // loads NVRTC only when there is a GPU chain to fuse; where it is
    // missing (built-in ops run ahead-of-time kernels) the chain replays unfused.
    if (t.nodes[root].live->stream().device.type == Device::gpu && !jit::nvrtc_available()) continue;
    for (int m : members) group_of[m] = root;
    emitted_at[root] = reduced ? reduction_of[root] : root;
    if (reduced) group_of[reduction_of[root]] = root;
  }

  ExportedTrace out;
  out.shapeless = t.shapeless;
  out.args = t.args;
  out.kwargs = t.kwargs;
  out.constants = t.constants;
  std::vector<uint32_t> renumber(shapes.size(), UINT32_MAX);
  for (size_t v = 0; v < first_node_value; ++v) renumber[v] = static_cast<uint32_t>(v);
  uint32_t next = static_cast<uint32_t>(first_node_value);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const ExportedNode& n = t.nodes[i];
    if (group_of[i] < 0) {
      ExportedNode copy = n;
      for (uint32_t& v : copy.inputs) v = renumber[v];
      for (size_t k = 0; k < n.shapes.size(); ++k) renumber[first_output[i] + k] = next++;
      out.nodes.push_back(std::move(copy));
      continue;
    }
    // Emitted at its chain's root (the last member), or at the reduction
    // that ends it.
    const int root = group_of[i];
    if (emitted_at[root] != static_cast<int>(i)) continue;
    // The chain as a program over its outside inputs.
    const std::vector<int>& members = groups[root];
    std::vector<FusedStep> steps;
    std::vector<uint32_t> inputs;              // outside values, old numbers
    std::map<uint32_t, int> step_of;           // value (old number) -> step
    auto operand = [&](uint32_t v) -> int {
      // A scalar broadcast outside the chain (others read it too): its scalar.
      if (producer[v] >= 0 && roles[producer[v]] == Role::ScalarBroadcast && group_of[producer[v]] < 0) {
        v = t.nodes[producer[v]].inputs[0];
      }
      if (auto it = step_of.find(v); it != step_of.end()) return it->second;
      FusedStep in;
      in.kind = FusedStep::Kind::Input;
      in.dtype = dtypes[v];
      in.input = static_cast<int>(inputs.size());
      inputs.push_back(v);
      steps.push_back(in);
      return step_of[v] = static_cast<int>(steps.size()) - 1;
    };
    for (int m : members) {
      const ExportedNode& node = t.nodes[m];
      const uint32_t result = first_output[m];
      if (roles[m] == Role::ScalarBroadcast) {
        step_of[result] = operand(node.inputs[0]);  // read as a scalar
        continue;
      }
      FusedStep st;
      st.dtype = node.dtypes[0];
      st.a = operand(node.inputs[0]);
      if (auto* u = dynamic_cast<const Unary*>(node.live.get())) {
        st.kind = FusedStep::Kind::Unary;
        st.unary = u->op();
      } else if (auto* b = dynamic_cast<const Binary*>(node.live.get())) {
        st.kind = FusedStep::Kind::Binary;
        st.binary = b->op();
        st.b = operand(node.inputs[1]);
      } else if (dynamic_cast<const Select*>(node.live.get())) {
        st.kind = FusedStep::Kind::Select;
        st.b = operand(node.inputs[1]);
        st.c = operand(node.inputs[2]);
      } else {
        st.kind = FusedStep::Kind::Cast;
      }
      steps.push_back(st);
      step_of[result] = static_cast<int>(steps.size()) - 1;
    }
    ExportedNode node;
    if (root != static_cast<int>(i)) {
      auto* r = static_cast<const Reduce*>(n.live.get());
      node.live = std::make_shared<FusedElementwise>(n.live->stream(), std::move(steps), t.nodes[root].shapes[0],
                                                     r->op(), r->axes());
    } else {
      node.live = std::make_shared<FusedElementwise>(n.live->stream(), std::move(steps));
    }
    for (uint32_t v : inputs) node.inputs.push_back(renumber[v]);
    node.shapes = n.shapes;
    node.dtypes = n.dtypes;
    renumber[first_output[i]] = next++;
    out.nodes.push_back(std::move(node));
    if (fused) ++*fused;
  }
  for (uint32_t v : t.outputs) out.outputs.push_back(renumber[v]);
  return out;
}

}  // namespace alloy::detail

// mx.export_to_dot: the unevaluated graph behind some arrays, in Graphviz's
// DOT language. Arrays are ellipses named by the caller (keyword arrays) or
// by letters in the order met; primitives are rectangles named by their op.
#include <functional>
#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "alloy/primitive.h"
#include "alloy/runtime.h"

namespace alloy {

namespace {

// "A".."Z", "AA".."ZZ", ...: spreadsheet column names.
std::string letters(size_t n) {
  std::string s;
  for (++n; n > 0; n = (n - 1) / 26) s.insert(s.begin(), static_cast<char>('A' + (n - 1) % 26));
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

void export_to_dot(std::ostream& os, const std::vector<std::pair<std::string, array>>& outputs) {
  std::unordered_map<const void*, std::string> names;
  for (const auto& [name, a] : outputs) {
    if (!name.empty()) names.emplace(a.id(), name);
  }
  size_t next = 0;
  auto name_of = [&](const array& a) -> const std::string& {
    auto it = names.find(a.id());
    if (it == names.end()) it = names.emplace(a.id(), letters(next++)).first;
    return it->second;
  };

  os << "digraph {\n";
  std::unordered_set<const void*> seen_nodes, seen_arrays;
  // Inputs before users, each primitive node once (siblings share it).
  std::function<void(const array&)> visit = [&](const array& a) {
    if (!seen_arrays.insert(a.id()).second) return;
    if (!a.has_primitive() || a.is_evaluated()) {
      os << "{ rank=source; " << quoted(name_of(a)) << "; }\n";
      return;
    }
    const void* node = a.primitive_ptr().get();
    std::vector<array> outs = a.outputs();
    for (const auto& in : a.inputs()) visit(in);
    if (!seen_nodes.insert(node).second) return;
    const std::string node_id = quoted("node" + std::to_string(seen_nodes.size()));
    os << "{ " << node_id << " [label=" << quoted(a.primitive().name()) << ", shape=rectangle]; }\n";
    for (const auto& in : a.inputs()) os << quoted(name_of(in)) << " -> " << node_id << "\n";
    for (const auto& o : outs) {
      seen_arrays.insert(o.id());
      os << "{ " << quoted(name_of(o)) << "; }\n" << node_id << " -> " << quoted(name_of(o)) << "\n";
    }
  };
  for (const auto& [name, a] : outputs) visit(a);
  os << "}\n";
}

}  // namespace alloy

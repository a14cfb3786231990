// export_function / import_function: a trace is the graph of primitives
// between a function's inputs and outputs. Values are numbered: positional
// inputs, keyword inputs (by name), constants (leaf arrays the function
// closes over), then each node's outputs in order; nodes are written so
// every input comes before its use.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "alloy/export.h"
#include "alloy/ops.h"
#include "alloy/transforms.h"
#include "export/graph_trace.h"
#include "export/primitive_codec.h"
#include "io/io_common.h"
#include "ops/op_utils.h"
#include "primitives/layout.h"
#include "transforms/tracer.h"

namespace alloy {

namespace {

using detail::ExportedNode;
using detail::ExportedTrace;

constexpr char kMagic[8] = {'A', 'L', 'L', 'O', 'Y', 'F', 'N', '\0'};
// 2: FFT nodes carry their scale (pocketfft's factor; session 48).
constexpr uint32_t kVersion = 2;

// The primitive's outputs that stand for `a` when the primitive only passes
// values through (custom_function's node shares its inputs' memory): the
// input behind output `position`, else nullptr.
const array* pass_through(const array& a) {
  if (std::string_view(a.primitive().name()) != "CustomTransforms") return nullptr;
  const size_t n_out = a.siblings().size() + 1;
  const auto& in = a.inputs();
  return &in[in.size() - n_out + a.sibling_position()];
}

}  // namespace

namespace detail {

ExportedTrace trace_graph(const ExportableFunction& fun, const ExportArgs& args_in, const ExportKwargs& kwargs_in,
                          bool shapeless, TraceMode mode) {
  ExportedTrace t;
  t.shapeless = shapeless;
  std::vector<array> outputs;
  ExportArgs args = args_in;
  ExportKwargs kwargs = kwargs_in;
  if (mode == TraceMode::Compile) {
    // Tracers (as grad makes them): everything computed from them keeps its
    // graph through evals, and custom functions record their own node, so a
    // compiled function keeps its custom derivatives.
    for (array& a : args) a = make_tracer(a);
    for (auto& [name, a] : kwargs) a = make_tracer(a);
  }
  {
    // Evals inside the function keep their graphs, so nothing computed from
    // an input is baked in as a constant.
    detail::TransformScope scope;
    outputs = fun(args, kwargs);
  }
  std::unordered_map<const void*, uint32_t> value_of;
  uint32_t next = 0;
  for (const array& a : args) {
    t.args.push_back({a.shape(), a.dtype()});
    value_of.emplace(a.id(), next++);
  }
  for (const auto& [name, a] : kwargs) {
    t.kwargs.push_back({name, {a.shape(), a.dtype()}});
    value_of.emplace(a.id(), next++);
  }
  // Constants and nodes are numbered as met; constants go before nodes in
  // the file, so node values are renumbered at the end.
  std::vector<std::pair<bool, uint32_t>> provisional;  // (is_constant, index) per value >= n_inputs
  const uint32_t n_inputs = next;
  // Iterative post-order walk from the outputs.
  std::vector<std::pair<array, bool>> stack;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back({*it, false});
  std::vector<std::vector<uint32_t>> node_inputs_provisional;
  while (!stack.empty()) {
    auto [a, expanded] = stack.back();
    stack.pop_back();
    if (value_of.count(a.id())) continue;
    if (a.has_primitive()) {
      const array* src = mode == TraceMode::Export ? pass_through(a) : nullptr;
      if (src) {
        if (!expanded) {
          stack.push_back({a, true});
          stack.push_back({*src, false});
        } else {
          value_of.emplace(a.id(), value_of.at(src->id()));
        }
        continue;
      }
      if (!expanded) {
        stack.push_back({a, true});
        const auto& in = a.inputs();
        for (auto it = in.rbegin(); it != in.rend(); ++it) stack.push_back({*it, false});
        continue;
      }
      ExportedNode node;
      if (mode == TraceMode::Export) {
        node.primitive = export_detail::encode_primitive(a.primitive());
      } else {
        node.live = a.primitive_ptr();
      }
      std::vector<uint32_t> ins;
      for (const array& in : a.inputs()) ins.push_back(value_of.at(in.id()));
      node_inputs_provisional.push_back(std::move(ins));
      const uint32_t index = static_cast<uint32_t>(t.nodes.size());
      for (const array& o : a.outputs()) {
        node.shapes.push_back(o.shape());
        node.dtypes.push_back(o.dtype());
        value_of.emplace(o.id(), next++);
        provisional.push_back({false, index});
      }
      t.nodes.push_back(std::move(node));
      continue;
    }
    // A leaf that is not an input: a constant.
    t.constants.push_back(mode == TraceMode::Export ? io::host_row_major(a) : a);
    value_of.emplace(a.id(), next++);
    provisional.push_back({true, static_cast<uint32_t>(t.constants.size() - 1)});
  }
  // Renumber: inputs, constants, then node outputs in node order.
  std::vector<uint32_t> node_first(t.nodes.size(), 0);
  uint32_t at = n_inputs + static_cast<uint32_t>(t.constants.size());
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    node_first[n] = at;
    at += static_cast<uint32_t>(t.nodes[n].shapes.size());
  }
  std::vector<uint32_t> final_of(next);
  for (uint32_t v = 0; v < n_inputs; ++v) final_of[v] = v;
  std::vector<uint32_t> seen_outputs(t.nodes.size(), 0);
  for (uint32_t v = n_inputs; v < next; ++v) {
    auto [is_constant, index] = provisional[v - n_inputs];
    final_of[v] = is_constant ? n_inputs + index : node_first[index] + seen_outputs[index]++;
  }
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    for (uint32_t v : node_inputs_provisional[n]) t.nodes[n].inputs.push_back(final_of[v]);
  }
  for (const array& o : outputs) t.outputs.push_back(final_of[value_of.at(o.id())]);
  return t;
}

}  // namespace detail

namespace {

using detail::ExportedNode;
using detail::ExportedTrace;

// ---- the file
void put_u32(std::ostream& o, uint32_t v) { io::write_le(o, v); }
void put_str(std::ostream& o, const std::string& s) {
  io::write_le<uint64_t>(o, s.size());
  o.write(s.data(), static_cast<std::streamsize>(s.size()));
}
void put_sig(std::ostream& o, const Shape& s, Dtype d) {
  io::write_le<uint8_t>(o, static_cast<uint8_t>(d));
  put_u32(o, static_cast<uint32_t>(s.size()));
  for (ShapeElem e : s) io::write_le<int64_t>(o, e);
}

struct In {
  std::istream& s;
  std::string file;
  uint32_t u32() { return io::read_le<uint32_t>(s, "import_function", file); }
  uint64_t u64() { return io::read_le<uint64_t>(s, "import_function", file); }
  std::string str() {
    const uint64_t n = u64();
    if (n > (1ull << 32)) throw std::runtime_error("[import_function] " + file + " is malformed.");
    std::string v(n, '\0');
    io::read_exact(s, v.data(), n, "import_function", file);
    return v;
  }
  std::pair<Shape, Dtype> sig() {
    const uint8_t d = io::read_le<uint8_t>(s, "import_function", file);
    if (d > static_cast<uint8_t>(Dtype::complex64)) throw std::runtime_error("[import_function] bad dtype in " + file);
    const uint32_t nd = u32();
    if (nd > 64) throw std::runtime_error("[import_function] " + file + " is malformed.");
    Shape sh;
    for (uint32_t i = 0; i < nd; ++i) sh.push_back(static_cast<ShapeElem>(io::read_le<int64_t>(s, "import_function", file)));
    return {sh, static_cast<Dtype>(d)};
  }
};

void write_file(const std::string& file, const std::vector<std::shared_ptr<ExportedTrace>>& traces,
                const std::string& metadata) {
  std::ofstream o = io::open_for_write(file, "export_function");
  o.write(kMagic, sizeof(kMagic));
  put_u32(o, kVersion);
  put_str(o, metadata);
  put_u32(o, static_cast<uint32_t>(traces.size()));
  for (const auto& tp : traces) {
    const ExportedTrace& t = *tp;
    io::write_le<uint8_t>(o, t.shapeless ? 1 : 0);
    put_u32(o, static_cast<uint32_t>(t.args.size()));
    for (const auto& [s, d] : t.args) put_sig(o, s, d);
    put_u32(o, static_cast<uint32_t>(t.kwargs.size()));
    for (const auto& [name, sd] : t.kwargs) {
      put_str(o, name);
      put_sig(o, sd.first, sd.second);
    }
    put_u32(o, static_cast<uint32_t>(t.constants.size()));
    for (const array& c : t.constants) {
      put_sig(o, c.shape(), c.dtype());
      io::write_array(o, c);
    }
    put_u32(o, static_cast<uint32_t>(t.nodes.size()));
    for (const ExportedNode& n : t.nodes) {
      put_str(o, n.primitive.tag);
      put_str(o, n.primitive.state);
      put_u32(o, static_cast<uint32_t>(n.inputs.size()));
      for (uint32_t v : n.inputs) put_u32(o, v);
      put_u32(o, static_cast<uint32_t>(n.shapes.size()));
      for (size_t i = 0; i < n.shapes.size(); ++i) put_sig(o, n.shapes[i], n.dtypes[i]);
    }
    put_u32(o, static_cast<uint32_t>(t.outputs.size()));
    for (uint32_t v : t.outputs) put_u32(o, v);
  }
  o.flush();
  if (!o) throw std::runtime_error("[export_function] Writing " + file + " failed.");
}

std::string describe(const ExportedTrace& t) {
  std::ostringstream m;
  m << "Function with " << t.args.size() << " positional inputs and " << t.kwargs.size() << " keyword inputs"
    << (t.shapeless ? " (shapeless)" : "") << ":\n";
  for (size_t i = 0; i < t.args.size(); ++i)
    m << "   " << i + 1 << ": " << shape_to_string(t.args[i].first) << " " << dtype_name(t.args[i].second) << "\n";
  for (const auto& [name, sd] : t.kwargs)
    m << "   \"" << name << "\": " << shape_to_string(sd.first) << " " << dtype_name(sd.second) << "\n";
  return m.str();
}

}  // namespace

namespace detail {

bool trace_matches(const ExportedTrace& t, const ExportArgs& args, const ExportKwargs& kwargs, bool exact) {
  if (t.args.size() != args.size() || t.kwargs.size() != kwargs.size()) return false;
  auto same = [&](const std::pair<Shape, Dtype>& want, const array& a) {
    if (want.second != a.dtype()) return false;
    return t.shapeless && !exact ? want.first.size() == a.shape().size() : want.first == a.shape();
  };
  for (size_t i = 0; i < args.size(); ++i)
    if (!same(t.args[i], args[i])) return false;
  for (const auto& [name, sd] : t.kwargs) {
    auto it = kwargs.find(name);
    if (it == kwargs.end() || !same(sd, it->second)) return false;
  }
  return true;
}

std::vector<array> replay_graph(const ExportedTrace& t, const ExportArgs& args, const ExportKwargs& kwargs) {
  std::vector<array> values;
  std::vector<Shape> recorded;  // each value's shape in the trace
  for (size_t i = 0; i < args.size(); ++i) {
    values.push_back(args[i]);
    recorded.push_back(t.args[i].first);
  }
  for (const auto& [name, sd] : t.kwargs) {
    values.push_back(kwargs.at(name));
    recorded.push_back(sd.first);
  }
  for (const array& c : t.constants) {
    values.push_back(c);
    recorded.push_back(c.shape());
  }
  // Shapeless: each traced shape that now has exactly one new shape (a
  // broadcast of a constant to an input's shape follows that input).
  std::map<Shape, std::optional<Shape>> renamed;
  auto note = [&](const Shape& traced, const Shape& now) {
    if (traced == now) return;
    auto [it, fresh] = renamed.emplace(traced, now);
    if (!fresh && it->second && *it->second != now) it->second = std::nullopt;
  };
  for (size_t v = 0; v < values.size(); ++v) note(recorded[v], values[v].shape());
  const Stream s = to_stream({});
  for (const ExportedNode& n : t.nodes) {
    std::vector<array> ins;
    std::vector<Shape> in_shapes;
    bool same_shapes = true;
    for (uint32_t v : n.inputs) {
      ins.push_back(values.at(v));
      in_shapes.push_back(values.at(v).shape());
      same_shapes = same_shapes && values.at(v).shape() == recorded.at(v);
    }
    auto primitive = n.live ? n.live : export_detail::decode_primitive(n.primitive, s);
    std::vector<Shape> shapes = n.shapes;
    const bool broadcast = n.live ? dynamic_cast<const Broadcast*>(n.live.get()) != nullptr
                                  : n.primitive.tag == "Broadcast";
    if (t.shapeless && broadcast) {
      auto it = renamed.find(n.shapes[0]);
      if (it != renamed.end() && it->second && broadcast_shapes(in_shapes[0], *it->second) == *it->second) {
        shapes = {*it->second};
        primitive = std::make_shared<Broadcast>(s, shapes[0]);
        same_shapes = true;
      }
    }
    if (!same_shapes) {
      std::optional<std::vector<Shape>> inferred;
      if (n.live) {
        if (auto tag = export_detail::registered_tag(*primitive)) {
          inferred = export_detail::infer_output_shapes({*tag, {}}, *primitive, in_shapes);
        }
      } else {
        inferred = export_detail::infer_output_shapes(n.primitive, *primitive, in_shapes);
      }
      if (!inferred) {
        throw std::invalid_argument("[import_function::call] The shapeless function cannot run on these shapes: its " +
                                    std::string(primitive->name()) +
                                    " holds the shapes it was traced with (export the function for these shapes, "
                                    "or without shapeless).");
      }
      shapes = *inferred;
    }
    std::vector<array> outs = array::make_arrays(shapes, n.dtypes, primitive, ins);
    // No derivative flows through stop_gradient: differentiation must not
    // walk into what is behind it (a custom function's body, say, whose
    // kernels may have no derivative rule).
    if (dynamic_cast<const StopGradient*>(primitive.get())) {
      for (array& o : outs) o.set_tracer(false);
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      values.push_back(outs[i]);
      recorded.push_back(n.shapes[i]);
      note(n.shapes[i], outs[i].shape());
    }
  }
  std::vector<array> out;
  for (uint32_t v : t.outputs) out.push_back(values.at(v));
  return out;
}

}  // namespace detail

FunctionExporter::FunctionExporter(std::string file, ExportableFunction fun, bool shapeless, std::string metadata)
    : file_(std::move(file)), fun_(std::move(fun)), shapeless_(shapeless),
      metadata_(std::move(metadata)) {}
FunctionExporter::~FunctionExporter() = default;
FunctionExporter::FunctionExporter(FunctionExporter&&) noexcept = default;
FunctionExporter& FunctionExporter::operator=(FunctionExporter&&) noexcept = default;

void FunctionExporter::operator()(const ExportArgs& args, const ExportKwargs& kwargs) {
  if (closed_) throw std::runtime_error("[export_function] The exporter of " + file_ + " is closed.");
  auto t = std::make_shared<ExportedTrace>(detail::trace_graph(fun_, args, kwargs, shapeless_, detail::TraceMode::Export));
  for (const auto& old : traces_) {
    if (old->args == t->args && old->kwargs == t->kwargs && !shapeless_) {
      throw std::invalid_argument("[export_function] A trace with these input shapes and dtypes is already in " +
                                  file_ + ".");
    }
  }
  traces_.push_back(std::move(t));
  write_file(file_, traces_, metadata_);
}

void FunctionExporter::close() { closed_ = true; }

void export_function(const std::string& file, const ExportableFunction& fun, const ExportArgs& args,
                     const ExportKwargs& kwargs, bool shapeless, const std::string& metadata) {
  FunctionExporter e(file, fun, shapeless, metadata);
  e(args, kwargs);
  e.close();
}

ImportedFunction import_function(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  if (!f) throw std::runtime_error("[import_function] Failed to open " + file);
  In in{f, file};
  char magic[sizeof(kMagic)];
  io::read_exact(f, magic, sizeof(magic), "import_function", file);
  if (std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    throw std::runtime_error("[import_function] " + file +
                             " is not a function exported by Alloy (MLX's .mlxfn files are not read).");
  }
  const uint32_t version = in.u32();
  if (version != kVersion) {
    throw std::runtime_error("[import_function] " + file + " has format version " + std::to_string(version) +
                             "; this Alloy reads version " + std::to_string(kVersion) + ".");
  }
  ImportedFunction fn;
  fn.metadata_ = in.str();
  const uint32_t n_traces = in.u32();
  for (uint32_t k = 0; k < n_traces; ++k) {
    auto t = std::make_shared<ExportedTrace>();
    t->shapeless = io::read_le<uint8_t>(f, "import_function", file) != 0;
    for (uint32_t i = 0, n = in.u32(); i < n; ++i) t->args.push_back(in.sig());
    for (uint32_t i = 0, n = in.u32(); i < n; ++i) {
      std::string name = in.str();
      t->kwargs.push_back({std::move(name), in.sig()});
    }
    for (uint32_t i = 0, n = in.u32(); i < n; ++i) {
      auto [shape, dtype] = in.sig();
      t->constants.push_back(io::read_array(f, shape, dtype, "import_function", file));
    }
    uint32_t n_values = static_cast<uint32_t>(t->args.size() + t->kwargs.size() + t->constants.size());
    for (uint32_t i = 0, n = in.u32(); i < n; ++i) {
      ExportedNode node;
      node.primitive.tag = in.str();
      node.primitive.state = in.str();
      for (uint32_t j = 0, m = in.u32(); j < m; ++j) {
        const uint32_t v = in.u32();
        if (v >= n_values) throw std::runtime_error("[import_function] " + file + " is malformed (a value is used before it is made).");
        node.inputs.push_back(v);
      }
      for (uint32_t j = 0, m = in.u32(); j < m; ++j) {
        auto [shape, dtype] = in.sig();
        node.shapes.push_back(shape);
        node.dtypes.push_back(dtype);
      }
      n_values += static_cast<uint32_t>(node.shapes.size());
      export_detail::decode_primitive(node.primitive, to_stream({}));  // checks the state now
      t->nodes.push_back(std::move(node));
    }
    for (uint32_t j = 0, m = in.u32(); j < m; ++j) {
      const uint32_t v = in.u32();
      if (v >= n_values) throw std::runtime_error("[import_function] " + file + " is malformed (an output is unknown).");
      t->outputs.push_back(v);
    }
    fn.traces_.push_back(std::move(t));
  }
  return fn;
}

std::vector<array> ImportedFunction::operator()(const ExportArgs& args, const ExportKwargs& kwargs) const {
  for (const auto& t : traces_) {
    if (detail::trace_matches(*t, args, kwargs)) return detail::replay_graph(*t, args, kwargs);
  }
  std::ostringstream m;
  m << "[import_function::call] No imported function found which matches the given positional and keyword "
       "arguments. Possible functions include:\n";
  for (size_t i = 0; i < traces_.size(); ++i) m << " " << i + 1 << ". " << describe(*traces_[i]);
  m << "\nCalled with " << args.size() << " positional inputs and " << kwargs.size() << " keyword inputs:\n";
  for (size_t i = 0; i < args.size(); ++i)
    m << "   " << i + 1 << ": " << shape_to_string(args[i].shape()) << " " << dtype_name(args[i].dtype()) << "\n";
  for (const auto& [name, a] : kwargs)
    m << "   \"" << name << "\": " << shape_to_string(a.shape()) << " " << dtype_name(a.dtype()) << "\n";
  throw std::invalid_argument(m.str());
}

}  // namespace alloy

#include "export/primitive_codec.h"

#include <cstring>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <unordered_map>

#include "alloy/ops.h"
#include "primitives/binary.h"
#include "primitives/creation.h"
#include "primitives/depends.h"
#include "primitives/fft.h"
#include "primitives/indexing.h"
#include "primitives/layout.h"
#include "primitives/linalg.h"
#include "primitives/linalg_decomp.h"
#include "primitives/random.h"
#include "primitives/reduce.h"
#include "primitives/scan.h"
#include "primitives/shape.h"
#include "primitives/softmax.h"
#include "primitives/sort.h"
#include "primitives/ternary.h"
#include "primitives/unary.h"
#include "primitives/view.h"

namespace alloy::export_detail {
namespace {

// ---- fields as bytes: arithmetic values and enums as they are in memory
// (little-endian hosts only), vectors as a count then their elements.
template <class T> void put(std::string& out, const T& v) {
  if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  } else {
    const uint64_t n = v.size();
    put(out, n);
    for (const auto& e : v) put(out, e);
  }
}

struct Reader {
  std::string_view bytes;
  size_t at = 0;
  void take(void* dst, size_t n) {
    if (at + n > bytes.size()) throw std::runtime_error("[import_function] A primitive's state is truncated.");
    std::memcpy(dst, bytes.data() + at, n);
    at += n;
  }
};

template <class T> void get(Reader& r, T& v) {
  if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
    r.take(&v, sizeof(T));
  } else {
    uint64_t n = 0;
    get(r, n);
    if (n > r.bytes.size()) throw std::runtime_error("[import_function] A primitive's state is malformed.");
    v.resize(n);
    for (auto& e : v) get(r, e);
  }
}

template <class Tuple> struct Decayed;
template <class... A> struct Decayed<std::tuple<A...>> {
  using type = std::tuple<std::decay_t<A>...>;
};

struct Codec {
  std::string tag;
  std::function<std::string(const Primitive&)> encode;
  std::function<std::shared_ptr<Primitive>(Reader&, Stream)> decode;
};

struct Registry {
  std::unordered_map<std::type_index, Codec> by_type;
  std::unordered_map<std::string, Codec> by_tag;

  template <class P> void add(const char* tag) {
    Codec c;
    c.tag = tag;
    c.encode = [](const Primitive& p) {
      std::string out;
      std::apply([&](const auto&... field) { (put(out, field), ...); }, static_cast<const P&>(p).state());
      return out;
    };
    c.decode = [](Reader& r, Stream s) -> std::shared_ptr<Primitive> {
      typename Decayed<decltype(std::declval<const P&>().state())>::type fields;
      std::apply([&](auto&... field) { (get(r, field), ...); }, fields);  // in order (comma fold)
      return std::apply([&](auto&&... field) { return std::make_shared<P>(s, std::move(field)...); },
                        std::move(fields));
    };
    by_type.emplace(std::type_index(typeid(P)), c);
    by_tag.emplace(tag, std::move(c));
  }
};

const Registry& registry() {
  static const Registry r = [] {
    Registry g;
    g.add<Unary>("Unary");
    g.add<Binary>("Binary");
    g.add<Select>("Select");
    g.add<AsType>("AsType");
    g.add<Broadcast>("Broadcast");
    g.add<Identity>("Identity");
    g.add<StopGradient>("StopGradient");
    g.add<View>("View");
    g.add<AsStrided>("AsStrided");
    g.add<Reshape>("Reshape");
    g.add<Transpose>("Transpose");
    g.add<Concatenate>("Concatenate");
    g.add<Slice>("Slice");
    g.add<SliceUpdate>("SliceUpdate");
    g.add<Gather>("Gather");
    g.add<Scatter>("Scatter");
    g.add<Reduce>("Reduce");
    g.add<ArgReduce>("ArgReduce");
    g.add<Variance>("Variance");
    g.add<Softmax>("Softmax");
    g.add<LogSumExp>("LogSumExp");
    g.add<Scan>("Scan");
    g.add<Sort>("Sort");
    g.add<ArgSort>("ArgSort");
    g.add<Partition>("Partition");
    g.add<ArgPartition>("ArgPartition");
    g.add<Matmul>("Matmul");
    g.add<Arange>("Arange");
    g.add<Linspace>("Linspace");
    g.add<Eye>("Eye");
    g.add<RandomBits>("RandomBits");
    g.add<Depends>("Depends");
    g.add<FFT>("FFT");
    g.add<Cholesky>("Cholesky");
    g.add<Inverse>("Inverse");
    g.add<LUF>("LUF");
    g.add<QRF>("QRF");
    g.add<SVD>("SVD");
    g.add<Eig>("Eig");
    g.add<Eigh>("Eigh");
    return g;
  }();
  return r;
}

Shape broadcast_all(const std::vector<Shape>& shapes) {
  Shape out = shapes.empty() ? Shape{} : shapes[0];
  for (size_t i = 1; i < shapes.size(); ++i) out = broadcast_shapes(out, shapes[i]);
  return out;
}

}  // namespace

EncodedPrimitive encode_primitive(const Primitive& p) {
  const Registry& r = registry();
  auto it = r.by_type.find(std::type_index(typeid(p)));
  if (it == r.by_type.end()) {
    throw std::invalid_argument(std::string("[export_function] Primitive ") + p.name() +
                                " cannot be exported (custom kernels and custom primitives are not supported).");
  }
  return {it->second.tag, it->second.encode(p)};
}

std::optional<std::string> registered_tag(const Primitive& p) {
  const Registry& r = registry();
  auto it = r.by_type.find(std::type_index(typeid(p)));
  if (it == r.by_type.end()) return std::nullopt;
  return it->second.tag;
}

std::shared_ptr<Primitive> decode_primitive(const EncodedPrimitive& e, Stream s) {
  const Registry& r = registry();
  auto it = r.by_tag.find(e.tag);
  if (it == r.by_tag.end()) {
    throw std::runtime_error("[import_function] Unknown primitive '" + e.tag +
                             "' in the file (written by a newer Alloy?).");
  }
  Reader reader{e.state};
  auto p = it->second.decode(reader, s);
  if (reader.at != e.state.size()) {
    throw std::runtime_error("[import_function] The state of primitive '" + e.tag + "' has trailing bytes.");
  }
  return p;
}

std::optional<std::vector<Shape>> infer_output_shapes(const EncodedPrimitive& e, const Primitive& p,
                                                      const std::vector<Shape>& in) {
  const std::string& t = e.tag;
  if (t == "Unary" || t == "Binary" || t == "Select" || t == "AsType" || t == "Identity" || t == "StopGradient") {
    return std::vector<Shape>{broadcast_all(in)};
  }
  if (t == "Scan" || t == "Softmax" || t == "Sort" || t == "ArgSort" || t == "Partition" || t == "ArgPartition") {
    return std::vector<Shape>{in.at(0)};
  }
  if (t == "Variance") {
    Shape out = in.at(0);
    out.at(static_cast<size_t>(static_cast<const Variance&>(p).axis())) = 1;
    return std::vector<Shape>{out};
  }
  if (t == "LogSumExp") {
    Shape out = in.at(0);
    out.back() = 1;
    return std::vector<Shape>{out};
  }
  if (t == "Reduce" || t == "ArgReduce") {
    std::vector<int> axes;
    bool keepdims = false;
    if (t == "Reduce") {
      const auto& r = static_cast<const Reduce&>(p);
      axes = r.axes();
      keepdims = r.keepdims();
    } else {
      const auto [op, axis, keep] = static_cast<const ArgReduce&>(p).state();
      axes = {axis};
      keepdims = keep;
    }
    Shape out;
    const Shape& s = in.at(0);
    for (int i = 0; i < static_cast<int>(s.size()); ++i) {
      bool reduced = false;
      for (int a : axes) reduced = reduced || a == i;
      if (!reduced) out.push_back(s[i]);
      else if (keepdims) out.push_back(1);
    }
    return std::vector<Shape>{out};
  }
  if (t == "Reshape") {  // a fixed target shape still serves inputs of its size
    const auto& [shape] = static_cast<const Reshape&>(p).state();
    size_t want = 1, have = 1;
    for (ShapeElem d : shape) want *= static_cast<size_t>(d);
    for (ShapeElem d : in.at(0)) have *= static_cast<size_t>(d);
    if (want == have) return std::vector<Shape>{shape};
    return std::nullopt;
  }
  if (t == "Transpose") {
    const auto& [axes] = static_cast<const Transpose&>(p).state();
    Shape out;
    for (int a : axes) out.push_back(in.at(0).at(a));
    return std::vector<Shape>{out};
  }
  if (t == "Concatenate") {
    const auto& [axis] = static_cast<const Concatenate&>(p).state();
    Shape out = in.at(0);
    const int ax = axis < 0 ? axis + static_cast<int>(out.size()) : axis;
    out.at(ax) = 0;
    for (const Shape& s : in) out.at(ax) += s.at(ax);
    return std::vector<Shape>{out};
  }
  if (t == "Matmul" && in.size() >= 2 && in[0].size() >= 2 && in[1].size() >= 2) {
    Shape a(in[0].begin(), in[0].end() - 2), b(in[1].begin(), in[1].end() - 2);
    Shape out = broadcast_shapes(a, b);
    out.push_back(in[0][in[0].size() - 2]);
    out.push_back(in[1].back());
    return std::vector<Shape>{out};
  }
  return std::nullopt;
}

}  // namespace alloy::export_detail

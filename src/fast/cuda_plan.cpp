#include "fast/cuda_plan.h"

#include <cstdint>
#include <cstring>

#include "jit/digest.h"
#include "jit/embedded_headers.h"
#include "jit/nvrtc.h"

namespace alloy::fast {
namespace {

constexpr char kMagic[] = "ALLOYPLAN2";

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

void put_text(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

// Reads fields in order; any read past the end leaves ok() false.
class Reader {
 public:
  Reader(const std::string& b, size_t from) : b_(b), pos_(from) {}
  uint32_t u32() {
    if (pos_ + 4 > b_.size()) return fail();
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(b_[pos_ + i])) << (8 * i);
    pos_ += 4;
    return v;
  }
  std::string text() {
    uint32_t n = u32();
    if (!ok_ || pos_ + n > b_.size()) return fail(), std::string();
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == b_.size(); }

 private:
  uint32_t fail() {
    ok_ = false;
    return 0;
  }
  const std::string& b_;
  size_t pos_;
  bool ok_ = true;
};

std::string param_text(const msl::ParamSpec& p) {
  return p.name + "|" + p.type + "|" + (p.is_scalar ? "s" : "") + (p.in_constant ? "c" : "");
}

}  // namespace

std::string cuda_plan_key(const msl::KernelSpec& spec, const std::string& arch) {
  jit::NvrtcOptions opts;
  opts.arch = arch;
  opts.math_mode = spec.math_mode;
  jit::KeyBuilder key;
  key.add("kind", kMagic)
      .add("front_end", front_end_digest())
      .add("nvrtc", jit::nvrtc_identity())
      .add("name", spec.name)
      .add("source", spec.source)
      .add("header", spec.header)
      .add("atomic_outputs", spec.atomic_outputs ? "1" : "0")
      .add("dialect", std::to_string(static_cast<int>(spec.dialect)))
      .add("threadgroup_storage", std::to_string(static_cast<int>(spec.threadgroup_storage)))
      .add("program_entry", spec.program_entry)
      .add("bounds_check", spec.bounds_check ? (spec.tolerate_input_reads ? "inputs" : "1") : "0")
      .add("launch_bound", std::to_string(spec.cuda_launch_bound));
  // A program's threadgroup parameters size the launch's dynamic shared
  // memory (the plan's dynamic_threadgroup), not the code.
  for (unsigned b : spec.threadgroup_bytes) key.add("threadgroup_bytes", std::to_string(b));
  for (const auto& p : spec.inputs) key.add("input", param_text(p));
  for (const auto& p : spec.outputs) key.add("output", param_text(p));
  for (const auto& t : spec.template_args) key.add("template", t.name + "|" + std::to_string(t.kind) + "|" + t.value);
  for (const auto& l : spec.constant_layouts) {
    std::string text;
    for (int d : l.shape) text += std::to_string(d) + ",";
    text += "|";
    for (int64_t d : l.strides) text += std::to_string(d) + ",";
    text += "|" + std::to_string(l.elements);
    key.add("constant_layout", text);
  }
  for (const auto& o : jit::nvrtc_options(opts)) key.add("option", o);
  return key.hex();
}

std::string encode_plan(const CudaLaunchPlan& plan) {
  std::string out(kMagic);
  put_u32(out, static_cast<uint32_t>(plan.params.size()));
  for (const auto& p : plan.params) {
    put_u32(out, static_cast<uint32_t>(p.kind));
    put_u32(out, static_cast<uint32_t>(p.index));
  }
  put_u32(out, static_cast<uint32_t>(plan.threadgroups_per_block));
  put_text(out, plan.entry);
  put_u32(out, plan.dynamic_threadgroup);
  put_u32(out, plan.buffer_alignment);
  put_text(out, plan.cubin ? *plan.cubin : std::string());
  return out;
}

std::optional<CudaLaunchPlan> decode_plan(const std::string& bytes) {
  const size_t magic = std::strlen(kMagic);
  if (bytes.compare(0, magic, kMagic) != 0) return std::nullopt;
  Reader r(bytes, magic);
  CudaLaunchPlan plan;
  const uint32_t n = r.u32();
  if (!r.ok() || n > bytes.size()) return std::nullopt;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    msl::GlueParam p;
    const uint32_t kind = r.u32();
    if (kind > msl::GlueParam::Ndim) return std::nullopt;
    p.kind = static_cast<msl::GlueParam::Kind>(kind);
    p.index = static_cast<int>(r.u32());
    plan.params.push_back(p);
  }
  plan.threadgroups_per_block = static_cast<int>(r.u32());
  plan.entry = r.text();
  plan.dynamic_threadgroup = r.u32();
  plan.buffer_alignment = r.u32();
  std::string cubin = r.text();
  if (!r.ok() || !r.at_end() || plan.threadgroups_per_block < 1 || plan.entry.empty() || cubin.empty())
    return std::nullopt;
  plan.cubin = std::make_shared<const std::string>(std::move(cubin));
  return plan;
}

}  // namespace alloy::fast

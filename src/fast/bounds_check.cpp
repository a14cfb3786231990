#include "fast/bounds_check.h"

#include <sstream>
#include <stdexcept>

#include "fast/prepared_launch.h"

namespace alloy::fast {

std::string source_line(const std::string& text, int line) {
  std::istringstream in(text);
  std::string s;
  for (int k = 1; std::getline(in, s); ++k)
    if (k == line) return s;
  return "";
}

namespace {

// Two threads on one element of a threadgroup array with no barrier between
// (runtime/metal_race.h): the later access, then the earlier one.
[[noreturn]] void throw_race(const KernelVariant& v, const alloy_msl::BoundsReport& r) {
  const auto& names = v.translated.bounds_names;
  const std::string name = r.slot >= 0 && r.slot < static_cast<int>(names.size()) ? names[r.slot] : "?";
  auto thread = [](const unsigned* t) {
    return "thread (" + std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " + std::to_string(t[2]) + ")";
  };
  auto quoted = [&](int line) {
    const std::string text = source_line(v.spec.source, line);
    return text.empty() ? std::string() : ":\n    " + text;
  };
  std::ostringstream m;
  m << kernel_label(v) << ": threadgroup memory race on '" << name << "' element " << r.index << ": "
    << thread(r.other_thread) << (r.other_write ? " wrote" : " read") << " it at source line " << r.other_line
    << quoted(r.other_line) << "\nand " << thread(r.thread) << (r.write ? " wrote" : " read")
    << " it at source line " << r.line << quoted(r.line)
    << "\nwith no threadgroup_barrier between them: on a GPU "
    << (r.write && r.other_write ? "the element may keep either value." : "the read may see either value.")
    << "\n(race_check is on: the first race is reported, the launch's outputs are not valid)";
  throw std::runtime_error(m.str());
}

}  // namespace

void throw_bounds_fault(const KernelVariant& v, const alloy_msl::BoundsReport& r, const std::string& why) {
  if (r.race) throw_race(v, r);
  const auto& names = v.translated.bounds_names;
  const int n_in = static_cast<int>(v.spec.inputs.size());
  const int n_out = static_cast<int>(v.spec.outputs.size());
  std::ostringstream m;
  m << kernel_label(v) << ": out-of-bounds " << (r.write ? "write to " : "read of ");
  const std::string name = r.slot >= 0 && r.slot < static_cast<int>(names.size()) ? names[r.slot] : "?";
  if (r.slot < n_in) {
    m << "input '" << name << "' (input " << r.slot << ")";
  } else if (r.slot < n_in + n_out) {
    m << "output '" << name << "' (output " << r.slot - n_in << ")";
  } else {
    m << "threadgroup array '" << name << "'";
    if (r.dim > 0) m << " in its dimension " << r.dim;
  }
  m << " at index " << r.index << "; ";
  if (r.slot < n_in + n_out && r.size == ~0ull)  // a buffer whose size the caller did not give
    m << "the index is negative";
  else if (r.slot < n_in + n_out)
    m << "it has " << r.size << " element" << (r.size == 1 ? "" : "s");
  else
    m << "the dimension has " << r.size;
  m << ". Thread (" << r.thread[0] << ", " << r.thread[1] << ", " << r.thread[2] << "), source line " << r.line;
  const std::string quoted = source_line(v.spec.source, r.line);
  if (!quoted.empty()) m << ":\n    " << quoted;
  m << "\n(" << (why.empty() ? "bounds_check is on: the first fault is reported, the launch's outputs are not valid" : why)
    << ")";
  throw std::runtime_error(m.str());
}

}  // namespace alloy::fast

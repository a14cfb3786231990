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

std::string thread_name(const unsigned* t) {
  return "thread (" + std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " + std::to_string(t[2]) + ")";
}

std::string quoted_line(const KernelVariant& v, int line) {
  const std::string text = source_line(v.spec.source, line);
  return text.empty() ? std::string() : ":\n    " + text;
}

std::string slot_name(const KernelVariant& v, int slot) {
  const auto& names = v.translated.bounds_names;
  return slot >= 0 && slot < static_cast<int>(names.size()) ? names[slot] : "?";
}

// Two threads on one element of a threadgroup array with no barrier between
// (runtime/metal_race.h): the later access, then the earlier one.
[[noreturn]] void throw_race(const KernelVariant& v, const alloy_msl::BoundsReport& r) {
  const alloy_msl::BoundsAccess& a = r.access;
  std::ostringstream m;
  m << kernel_label(v) << ": threadgroup memory race on '" << slot_name(v, a.slot) << "' element " << a.index
    << ": " << thread_name(r.other_thread) << (r.other_write ? " wrote" : " read") << " it at source line "
    << r.other_line << quoted_line(v, r.other_line) << "\nand " << thread_name(a.thread)
    << (a.write ? " wrote" : " read") << " it at source line " << a.line << quoted_line(v, a.line)
    << "\nwith no threadgroup_barrier between them: on a GPU "
    << (a.write && r.other_write ? "the element may keep either value." : "the read may see either value.")
    << "\n(race_check is on: the first race is reported, the launch's outputs are not valid)";
  throw std::runtime_error(m.str());
}

}  // namespace

std::string describe_out_of_bounds(const KernelVariant& v, const alloy_msl::BoundsAccess& a) {
  const int n_in = static_cast<int>(v.spec.inputs.size());
  const int n_out = static_cast<int>(v.spec.outputs.size());
  const std::string name = slot_name(v, a.slot);
  std::ostringstream m;
  m << "out-of-bounds " << (a.write ? "write to " : "read of ");
  if (a.slot < n_in) {
    m << "input '" << name << "' (input " << a.slot << ")";
  } else if (a.slot < n_in + n_out) {
    m << "output '" << name << "' (output " << a.slot - n_in << ")";
  } else {
    m << "threadgroup array '" << name << "'";
    if (a.dim > 0) m << " in its dimension " << a.dim;
  }
  m << " at index " << a.index << "; ";
  if (a.slot < n_in + n_out && a.size == ~0ull)  // a buffer whose size the caller did not give
    m << "the index is negative";
  else if (a.slot < n_in + n_out)
    m << "it has " << a.size << " element" << (a.size == 1 ? "" : "s");
  else
    m << "the dimension has " << a.size;
  std::string thread = thread_name(a.thread);
  thread[0] = 'T';
  m << ". " << thread << ", source line " << a.line << quoted_line(v, a.line);
  return m.str();
}

void throw_bounds_fault(const KernelVariant& v, const alloy_msl::BoundsReport& r, const std::string& why) {
  if (r.race) throw_race(v, r);
  throw std::runtime_error(
      kernel_label(v) + ": " + describe_out_of_bounds(v, r.access) + "\n(" +
      (why.empty() ? "bounds_check is on: the first fault is reported, the launch's outputs are not valid" : why) +
      ")");
}

}  // namespace alloy::fast

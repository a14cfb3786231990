// Evaluation: order the unevaluated part of the graph, run each primitive on
// its stream's device, then drop the graph above results nobody traces.
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "alloy/errors.h"
#include "alloy/primitive.h"
#include "alloy/transforms.h"
#include "core/eval_profile.h"
#include "core/streams.h"

namespace alloy {

namespace {

// A set of node ids (open addressing, linear probing): the tape is built on
// every eval, and a node-based hash set would allocate once per node.
class IdSet {
 public:
  // Inserts `id`; false if it was already there.
  bool insert(const void* id) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = slot_of(id);
    while (slots_[i]) {
      if (slots_[i] == id) return false;
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = id;
    ++size_;
    return true;
  }
  bool contains(const void* id) const {
    if (slots_.empty()) return false;
    size_t i = slot_of(id);
    while (slots_[i]) {
      if (slots_[i] == id) return true;
      i = (i + 1) & (slots_.size() - 1);
    }
    return false;
  }

 private:
  size_t slot_of(const void* id) const {
    auto h = reinterpret_cast<uintptr_t>(id);
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h >> 20) & (slots_.size() - 1);
  }
  void grow() {
    std::vector<const void*> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, nullptr);
    size_ = 0;
    for (const void* id : old)
      if (id) insert(id);
  }
  std::vector<const void*> slots_;
  size_t size_ = 0;
};

// Post-order over unevaluated nodes, iteratively (graphs can be very deep).
std::vector<array> build_tape(const std::vector<array>& outputs) {
  std::vector<array> tape;
  IdSet visited;
  std::vector<std::pair<array, size_t>> stack;
  for (auto& o : outputs) {
    if (o.is_evaluated() || !visited.insert(o.id())) continue;
    stack.emplace_back(o, 0);
    while (!stack.empty()) {
      auto& [a, next] = stack.back();
      if (next < a.inputs().size()) {
        const array& in = a.inputs()[next++];
        if (!in.is_evaluated() && visited.insert(in.id())) stack.emplace_back(in, 0);
        continue;
      }
      tape.push_back(a);
      for (auto& s : a.siblings()) visited.insert(s.id());
      stack.pop_back();
    }
  }
  return tape;
}

bool all_on(const std::vector<array>& inputs, Device::DeviceType type) {
  for (const array& in : inputs)
    if (in.device().type != type) return false;
  return true;
}

// Runs the node that computes `a` and marks its outputs computed.
void run_node(const array& a) {
  if (!a.has_primitive()) {
    throw std::runtime_error("[eval] an array has neither data nor a primitive to compute it.");
  }
  std::vector<array> outs = a.outputs();
  eval_profile::timed(a.primitive().name(), [&] { eval_primitive(a.primitive(), a.inputs(), outs); });
  for (auto& o : outs) o.set_status(array::Status::evaluated);
}

// A computed node that no transformation traces no longer needs its graph:
// nor do its outputs that still exist (siblings the user dropped need nothing).
void release_graph(array& a) {
  if (a.is_tracer()) return;
  std::vector<array> sibs = a.siblings();  // no allocation for a single output
  a.detach();
  for (auto& s : sibs) s.detach();
}

// One node whose inputs are all computed: a launch followed by its own eval.
bool is_leaf_node(const array& a) {
  if (a.is_evaluated()) return false;
  for (const array& in : a.inputs())
    if (!in.is_evaluated()) return false;
  return true;
}

// Ctrl-C, an alarm or a timeout stopped device work (only Metal kernels
// poll for it), as opposed to a failure that loses everything.
bool is_stop(const std::exception& e) {
  return dynamic_cast<const KernelInterrupted*>(&e) || dynamic_cast<const KernelTimeout*>(&e);
}

}  // namespace

void eval(std::vector<array> outputs) {
  std::vector<array> tape;
  const array* running = nullptr;  // the node being run, while one is
  // What this eval computed is not valid after a failure, and reading it says
  // why. A stop (Ctrl-C, an alarm, a timeout) cuts only Metal kernels (their
  // loops poll the stop flag): the requested outputs, the node that was
  // stopped and the stoppable nodes beside it. A fault loses everything.
  auto mark_lost = [&](const std::exception& e, bool stop) {
    auto why = std::make_shared<const std::string>(
        std::string("[eval] this array's value was lost: the evaluation that computed it failed (") + e.what() + ")");
    auto mark = [&](const array& a) {
      if (a.is_evaluated() && a.data_shared_ptr() && a.device().type == Device::gpu) a.data_shared_ptr()->lost = why;
    };
    if (running) {
      // Stopped inside its eval: outputs allocated but never marked computed;
      // marked so now, or reading them would launch the endless kernel again.
      for (array o : running->outputs()) {
        if (o.data_shared_ptr() && o.device().type == Device::gpu) {
          o.set_status(array::Status::evaluated);
          mark(o);
        }
      }
    }
    for (const array& a : outputs) mark(a);
    for (const array& a : tape) {
      if (!stop || (a.has_primitive() && a.primitive().stoppable())) mark(a);
    }
  };
  try {
    if (outputs.size() == 1 && is_leaf_node(outputs[0])) {
      // No tape to build: the launch goes out sooner, and the graph is
      // released while the device runs it.
      running = &outputs[0];
      run_node(outputs[0]);
      running = nullptr;
      if (detail::transform_depth() == 0) release_graph(outputs[0]);
    } else {
      tape = build_tape(outputs);
      if (!run_tape_as_graph(tape, run_node, running)) {
        for (auto& a : tape) {
          running = &a;
          if (!a.is_evaluated()) run_node(a);  // else produced with a sibling
        }
      }
      running = nullptr;
      if (detail::transform_depth() == 0) {
        for (auto& a : tape) release_graph(a);
      }
    }
  } catch (const std::exception& e) {
    // A launch waited for inside its node (timeout=, a bounds-checked
    // launch) was stopped; other errors leave what was computed valid.
    if (is_stop(e)) mark_lost(e, true);
    throw;
  }
  try {
    eval_profile::timed("(synchronize)", [&] { synchronize_streams_for(outputs); });
  } catch (const std::exception& e) {
    mark_lost(e, is_stop(e));
    throw;
  }
}

array to_host(const array& a) {
  array e = a;
  e.eval();
  if (e.device().type == Device::cpu) return e;
  return inputs_on_host({e})[0];
}

namespace {
thread_local const Stream* t_evaluating = nullptr;
}  // namespace

const Device* evaluating_device() { return t_evaluating ? &t_evaluating->device : nullptr; }
const Stream* evaluating_stream() { return t_evaluating; }

void eval_primitive(Primitive& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  // allocator() without a device answers for this primitive's device meanwhile.
  struct Evaluating {
    const Stream* saved;
    explicit Evaluating(const Stream& s) : saved(t_evaluating) { t_evaluating = &s; }
    ~Evaluating() { t_evaluating = saved; }
  } evaluating(p.stream());
  for (const array& in : inputs) {
    if (const auto& d = in.data_shared_ptr(); d && d->lost) throw std::runtime_error(*d->lost);
    if (const auto& d = in.data_shared_ptr(); d && gpu_memory_lost(*d)) {
      // Its host copy, if one was made before the fault, still serves a CPU op.
      if (!(p.device().type == Device::cpu && d->mirror)) throw std::runtime_error(gpu_memory_lost_message());
    }
  }
  // Inputs already on the primitive's device are passed as they are.
  if (p.device().type == Device::cpu) {
    if (all_on(inputs, Device::cpu)) {
      p.eval_cpu(inputs, outputs);
    } else {
      p.eval_cpu(inputs_on_host(inputs), outputs);
    }
  } else {
    if (all_on(inputs, Device::gpu)) {
      order_inputs_on(inputs, p.stream());
      p.eval_gpu(inputs, outputs);
    } else {
      auto on_device = inputs_on_device(inputs, p.stream());
      order_inputs_on(on_device, p.stream());
      p.eval_gpu(on_device, outputs);
    }
  }
}

void Primitive::eval_gpu(const std::vector<array>&, std::vector<array>&) {
  throw std::runtime_error(std::string("[") + name() + "] has no GPU implementation yet.");
}

std::vector<array> Primitive::vjp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&,
                                  const std::vector<array>&) {
  throw std::invalid_argument(std::string("[") + name() + "] is not differentiable (no vjp).");
}

std::vector<array> Primitive::jvp(const std::vector<array>&, const std::vector<array>&, const std::vector<int>&) {
  throw std::invalid_argument(std::string("[") + name() + "] has no forward-mode derivative (no jvp).");
}

namespace detail {
namespace {
thread_local int depth = 0;
}
int transform_depth() { return depth; }
TransformScope::TransformScope() { ++depth; }
TransformScope::~TransformScope() { --depth; }
}  // namespace detail

}  // namespace alloy

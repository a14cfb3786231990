// Deep lazy graphs of small ops on the GPU: one CUDA graph launch per eval
// instead of one kernel launch per node.
//
// The driver's cuLaunchKernel costs 3-5 us of host time, more than a small
// op's kernel runs, so a chain of thousands of tiny ops is bound by it
// (docs/benchmarks.md). When a tape of the same shape comes again (a training
// step, a decoding loop) and every node only enqueues work
// (Primitive::graph_capturable), the nodes' evals run as usual but under
// stream capture on a private stream of this thread: each launch is recorded
// (about 1 us), the recording updates the executable graph kept from the last
// time (cuGraphExecUpdate, about 0.3 us a node, checked by the driver: another
// topology makes a new one), and cuGraphLaunch on the Alloy stream runs
// the nodes in the same order the direct path would. Long tapes go in
// segments, each launched before the next is recorded, so the GPU runs one
// while the host records the next. A shape seen for the
// first time runs node by node and is remembered. ALLOY_CUDA_GRAPHS=0 turns
// the path off.
#include "backend/cuda/graph_eval.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "alloy/allocator.h"
#include "alloy/primitive.h"
#include "backend/cuda/device.h"
#include "backend/cuda/fault.h"
#include "core/env_switch.h"
#include "core/streams.h"

namespace alloy {
namespace cuda {
namespace {

namespace drv = cuda_driver;

constexpr size_t kMinNodes = 8;     // below this a graph launch saves little
constexpr size_t kSeenShapes = 64;  // tape shapes remembered per thread
constexpr size_t kSegment = 256;    // nodes recorded per graph launch
constexpr size_t kExecs = 64;       // executable graphs (segments) kept per thread

std::atomic<uint64_t> launches{0};

bool enabled() {
  static const bool on = switched_on("ALLOY_CUDA_GRAPHS");
  return on;
}

// This thread's capture state. Executables and the stream belong to the
// context they were made in; after a GPU fault rebuilt it they are dropped
// (leaked: they died with the old context).
struct Capture {
  struct Exec {
    uint64_t key;
    drv::CUgraphExec exec;
    uint64_t last_use;
  };
  drv::CUstream stream = nullptr;
  unsigned generation = 0;
  uint64_t seen[kSeenShapes] = {};
  size_t seen_next = 0;
  std::vector<Exec> execs;
  uint64_t tick = 0;
  bool active = false;
  std::vector<Buffer> deferred;

  ~Capture() {
    if (generation != context_generation() || !drv::is_available()) return;
    const drv::Api& a = drv::api();
    for (auto& e : execs) a.cuGraphExecDestroy(e.exec);  // errors at teardown are ignored
    if (stream) a.cuStreamDestroy(stream);
  }

  void forget_old_context() {
    if (generation == context_generation()) return;
    stream = nullptr;
    execs.clear();
    generation = context_generation();
  }

  // Whether `key` was seen before; remembers it either way.
  bool seen_before(uint64_t key) {
    for (uint64_t k : seen)
      if (k == key) return true;
    seen[seen_next] = key;
    seen_next = (seen_next + 1) % kSeenShapes;
    return false;
  }

  // The executable for `key`, updated to `g`'s nodes or made from them; null
  // when the driver refuses both.
  drv::CUgraphExec exec_for(uint64_t key, drv::CUgraph g) {
    const drv::Api& a = drv::api();
    ++tick;
    for (auto it = execs.begin(); it != execs.end(); ++it) {
      if (it->key != key) continue;
      drv::GraphExecUpdateInfo info{};
      if (a.cuGraphExecUpdate(it->exec, g, &info) == drv::CUDA_SUCCESS) {
        it->last_use = tick;
        return it->exec;
      }
      a.cuGraphExecDestroy(it->exec);  // another topology under the same key
      execs.erase(it);
      break;
    }
    drv::CUgraphExec exec = nullptr;
    if (a.cuGraphInstantiateWithFlags(&exec, g, 0) != drv::CUDA_SUCCESS) return nullptr;
    if (execs.size() >= kExecs) {
      auto oldest = execs.begin();
      for (auto it = execs.begin(); it != execs.end(); ++it)
        if (it->last_use < oldest->last_use) oldest = it;
      a.cuGraphExecDestroy(oldest->exec);
      execs.erase(oldest);
    }
    execs.push_back({key, exec, tick});
    return exec;
  }

  void release_deferred() {
    std::vector<Buffer> held;
    held.swap(deferred);
    for (const Buffer& b : held) allocator(Device(Device::gpu)).free(b);
  }
};

thread_local Capture t_state;

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// A key for the tape's shape (its nodes' kinds, sizes and dtypes, in order),
// or 0 when some node cannot be recorded or the nodes use several streams.
uint64_t tape_key(const std::vector<array>& tape, Stream& stream) {
  uint64_t h = mix(0x51ed27, tape.size());
  bool first = true;
  for (const array& a : tape) {
    if (!a.has_primitive()) return 0;
    Primitive& p = a.primitive();
    if (p.device().type != Device::gpu || !p.graph_capturable()) return 0;
    if (first) {
      stream = p.stream();
      first = false;
    } else if (!(p.stream() == stream)) {
      return 0;
    }
    h = mix(h, reinterpret_cast<uintptr_t>(p.name()));
    h = mix(h, a.size());
    h = mix(h, static_cast<uint64_t>(a.dtype()));
    h = mix(h, a.inputs().size());
  }
  return h ? h : 1;
}

// Inputs from host memory reach the device before recording starts (their
// copies are not recorded: a recorded copy from pageable memory is refused);
// eval_primitive then finds the device copies kept beside them.
void stage_host_inputs(const std::vector<array>& tape, const Stream& s) {
  for (const array& a : tape) {
    for (const array& in : a.inputs()) {
      if (in.is_evaluated() && in.device().type != Device::gpu) inputs_on_device({in}, s);
    }
  }
}

// Forgets that the tape's nodes were computed: their recording was lost.
void unmark(const std::vector<array>& tape) {
  for (const array& node : tape) {
    for (array o : node.outputs()) o.set_status(array::Status::unscheduled);
  }
}

// Runs a graph once; false when the driver refuses.
bool launch_once(drv::CUgraph g, drv::CUstream stream) {
  const drv::Api& a = drv::api();
  drv::CUgraphExec exec = nullptr;
  if (a.cuGraphInstantiateWithFlags(&exec, g, 0) != drv::CUDA_SUCCESS) return false;
  const bool ok = a.cuGraphLaunch(exec, stream) == drv::CUDA_SUCCESS;
  a.cuGraphExecDestroy(exec);  // freed once the launch is over
  return ok;
}

}  // namespace

bool defer_free_while_capturing(const Buffer& b) {
  Capture& c = t_state;
  if (!c.active) return false;
  c.deferred.push_back(b);
  return true;
}

uint64_t graph_launches() { return launches.load(std::memory_order_relaxed); }

}  // namespace cuda

bool run_tape_as_graph(const std::vector<array>& tape, void (*run)(const array&), const array*& running) {
  using namespace cuda;
  if (tape.size() < kMinNodes || !enabled() || !drv::is_available() || gpu_unusable()) return false;
  const drv::Api& a = drv::api();
  if (!a.has_graphs()) return false;
  Stream s;
  const uint64_t key = tape_key(tape, s);
  if (key == 0) return false;
  Capture& c = t_state;
  if (c.active) return false;  // a node's eval evaluating a tape of its own
  ensure_context();
  c.forget_old_context();
  if (!c.seen_before(key)) return false;
  stage_host_inputs(tape, s);
  // Inputs made, and blocks last used, by other streams: one wait for all of
  // them before recording (a recording cannot wait on events from outside).
  order_after(s, kManyStreams);
  if (!c.stream) check(a.cuStreamCreate(&c.stream, drv::kStreamNonBlocking), "eval", "cuStreamCreate");
  const CUstream target = stream_for(s);
  auto stop_recording = [&] {
    c.active = false;
    t_capture_stream = nullptr;
    drv::CUgraph g = nullptr;
    if (a.cuStreamEndCapture(c.stream, &g) != drv::CUDA_SUCCESS) g = nullptr;
    return g;
  };
  // Node by node from `first` on (nothing recorded from there has run).
  auto run_directly = [&](size_t first) {
    c.release_deferred();
    const std::vector<array> rest(tape.begin() + static_cast<std::ptrdiff_t>(first), tape.end());
    unmark(rest);
    for (const array& node : rest) {
      running = &node;
      if (!node.is_evaluated()) run(node);
    }
    return true;
  };
  // Segments of the tape, each recorded and launched before the next is
  // recorded: the GPU runs one while the host records the next.
  for (size_t first = 0; first < tape.size(); first += kSegment) {
    const size_t end = std::min(tape.size(), first + kSegment);
    if (a.cuStreamBeginCapture(c.stream, drv::kCaptureModeRelaxed) != drv::CUDA_SUCCESS) return run_directly(first);
    c.active = true;
    t_capture_stream = c.stream;
    try {
      for (size_t i = first; i < end; ++i) {
        running = &tape[i];
        if (!tape[i].is_evaluated()) run(tape[i]);  // else produced with a sibling
      }
    } catch (...) {
      drv::CUgraph g = stop_recording();
      // Lost, the recording may be why the node failed (a call it refuses
      // made later ones fail): the direct path tells.
      if (!g) return run_directly(first);
      // Else the failure is the node's own: the nodes before it run, as they
      // would have on the direct path, and the error goes on.
      const bool ran = launch_once(g, target);
      a.cuGraphDestroy(g);
      if (!ran) return run_directly(first);
      c.release_deferred();
      note_pending(s);
      throw;
    }
    drv::CUgraph g = stop_recording();
    drv::CUgraphExec exec = g ? c.exec_for(mix(key, first), g) : nullptr;
    if (!exec) {
      // The recording was lost or refused.
      if (g) a.cuGraphDestroy(g);
      return run_directly(first);
    }
    const drv::CUresult r = a.cuGraphLaunch(exec, target);
    a.cuGraphDestroy(g);
    if (r != drv::CUDA_SUCCESS) {
      if (!drv::is_context_fault(r) && !drv::is_context_gone(r)) return run_directly(first);
      c.release_deferred();
      unmark(tape);
      check(r, "eval", "cuGraphLaunch");  // the fault handler reports it
    }
    c.release_deferred();
    note_pending(s);
    launches.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

}  // namespace alloy

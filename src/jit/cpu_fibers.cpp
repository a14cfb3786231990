// One threadgroup's threads as fibers on the calling OS thread (boost.context's
// fcontext: a switch is a few register saves). A scheduler loop resumes ready
// fibers in order; a fiber leaves the ready set only at a threadgroup barrier
// or a SIMD-group exchange, and comes back when that rendezvous completes:
//   - a barrier completes when every thread that has not returned waits at it
//     (returned threads no longer count, as on Metal and CUDA); threads waiting
//     at barriers of different call sites are a divergence error;
//   - a SIMD exchange completes when every living lane of the SIMD group waits
//     at a SIMD-group function, or, when nothing else can run, over the lanes
//     waiting (the others wait at a threadgroup barrier: they are inactive
//     for this call). Lanes waiting at different call sites diverged: as a
//     GPU's SIMT scheduler runs the lowest program counter first, the lanes
//     at the earliest site in the source complete together, and the others
//     wait on (so `if (c) a = simd_sum(x); b = simd_sum(y);` sums y over
//     every lane once the branch's lanes have caught up).
// When nothing can run and nothing can complete, the group is deadlocked: the
// error names the threads and where each waits, and the run stops.
// The same scheduler runs threads that are C++20 coroutines (a kernel whose
// synchronising calls the translator turned into `co_await`s): a coroutine
// arrives at a barrier or exchange, then returns here by suspending, and is
// resumed where a fiber would be switched to. No stack per thread: what lives
// across a barrier is in the coroutine's frame.
#include "jit/cpu_fibers.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace alloy::jit {
namespace {

namespace bctx = boost::context::detail;
using alloy_msl::cpu::kSimdSlotBytes;
using alloy_msl::cpu::SimdView;
using alloy_msl::cpu::SyncSite;
constexpr unsigned kLanes = 32;

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

size_t fiber_stack_bytes() {
  static const size_t bytes = [] {
    size_t kb = 256;
    if (const char* env = std::getenv("ALLOY_CPU_FIBER_STACK_KB")) {
      long v = std::atol(env);
      if (v >= 16) kb = static_cast<size_t>(v);
    }
    size_t p = page_size();
    return (kb * 1024 + p - 1) / p * p;
  }();
  return bytes;
}

// TSan follows a stack switch only when told: each fiber is a TSan fiber too,
// and every jump between a fiber and the scheduler is announced first. The
// switches synchronise (flag 0): one OS thread runs the group's fibers one
// after another, so what a fiber wrote before it yielded happens before what
// the next one reads. Without this TSan loses track of the stacks and its
// verdict on fiber kernels means nothing. No-ops in other builds.
#if defined(__SANITIZE_THREAD__)
void* tsan_current_fiber() { return __tsan_get_current_fiber(); }
void* tsan_new_fiber() { return __tsan_create_fiber(0); }
void tsan_drop_fiber(void* f) {
  if (f) __tsan_destroy_fiber(f);
}
void tsan_switch(void* f) {
  if (f) __tsan_switch_to_fiber(f, 0);
}
#else
void* tsan_current_fiber() { return nullptr; }
void* tsan_new_fiber() { return nullptr; }
void tsan_drop_fiber(void*) {}
void tsan_switch(void*) {}
#endif

// Stacks for one OS thread's fibers, grown on demand and kept for reuse.
class StackPool {
 public:
  ~StackPool() {
    for (char* base : bases_) munmap(base, fiber_stack_bytes() + page_size());
  }
  // Top of stack i (stacks grow down), or null when memory ran out.
  void* top(size_t i) {
    while (bases_.size() <= i) {
      size_t len = fiber_stack_bytes() + page_size();
      void* m = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) return nullptr;
      char* base = static_cast<char*>(m);
      // The lowest page stays PROT_NONE: an overflowing fiber faults instead of
      // writing into its neighbour's stack.
      if (mprotect(base + page_size(), fiber_stack_bytes(), PROT_READ | PROT_WRITE) != 0) {
        munmap(m, len);
        return nullptr;
      }
      bases_.push_back(base);
    }
    char* stack = bases_[i] + page_size();
#if defined(__SANITIZE_ADDRESS__)
    // A stack handed to a new fiber still carries the poison of the frames
    // the last one left there (ASan does not see fiber switches): cleared,
    // or the new fiber's first writes read as overflows.
    ASAN_UNPOISON_MEMORY_REGION(stack, fiber_stack_bytes());
#endif
    return stack + fiber_stack_bytes();
  }

 private:
  std::vector<char*> bases_;
};

enum class State : unsigned char { Ready, Running, Barrier, Simd, Done };

struct Fiber {
  bctx::fcontext_t ctx;
  void* tsan;       // the fiber as TSan knows it (TSan builds only)
  void* coroutine;  // the thread's coroutine handle, when threads are coroutines
  State state;
  SyncSite site;
  const unsigned char* simd_slots;  // result of the last exchange
  unsigned simd_mask;
  void (*settle)(void*);  // a coroutine's, run as it resumes from an exchange
  void* settle_arg;
};

struct SimdGroup {
  unsigned living;   // lanes that have not returned
  unsigned waiting;  // lanes waiting at an exchange
  unsigned width;    // lanes that exist
  unsigned gen;      // exchanges completed; picks the slot buffer
  // Two buffers: a lane may deposit for the next exchange while others still
  // read this one's values (they cannot be two exchanges behind).
  unsigned char slots[2][kLanes][kSimdSlotBytes];
  // What lanes of a completed exchange share (SimdView::results).
  unsigned char results[2][kLanes][kSimdSlotBytes];
  unsigned results_ready[2];
};

// Source order of two sites (file, then line, then column): the earlier
// one's lanes are the ones a SIMT machine would run first.
bool site_before(const SyncSite& a, const SyncSite& b) {
  int f = a.file == b.file ? 0 : std::strcmp(a.file ? a.file : "", b.file ? b.file : "");
  if (f != 0) return f < 0;
  if (a.line != b.line) return a.line < b.line;
  return a.column < b.column;
}

bool same_site(const SyncSite& a, const SyncSite& b) {
  if (a.line != b.line || a.column != b.column) return false;
  if (a.file != b.file && std::strcmp(a.file ? a.file : "", b.file ? b.file : "") != 0) return false;
  return a.what == b.what || std::strcmp(a.what ? a.what : "", b.what ? b.what : "") == 0;
}

std::string site_text(const SyncSite& s) {
  std::string t = s.what ? s.what : "?";
  t += " (";
  t += s.file ? s.file : "?";
  t += ":" + std::to_string(s.line) + ")";
  return t;
}

// "0-15, 17" from sorted ids.
std::string ranges_text(const std::vector<unsigned>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ids[i]);
    if (j > i) out += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

// Coroutine frames of one threadgroup: bump-allocated, all released when
// the next group starts (a frame outlives its thread's return until then).
class FrameArena {
 public:
  void* take(size_t bytes) {
    bytes = (bytes + 15) / 16 * 16;
    if (chunks_.empty() || used_ + bytes > chunks_.back().size) {
      size_t size = std::max<size_t>(bytes, 64 * 1024);
      if (!chunks_.empty()) size = std::max(size, 2 * chunks_.back().size);
      Chunk c{static_cast<char*>(std::aligned_alloc(16, size)), size};
      if (!c.base) return nullptr;
      chunks_.push_back(c);
      used_ = 0;
    }
    void* p = chunks_.back().base + used_;
    used_ += bytes;
    return p;
  }
  // Keeps the largest chunk; the next group of the same kernel then fits in it.
  void reset() {
    if (chunks_.size() > 1) {
      Chunk keep = chunks_.back();
      for (size_t i = 0; i + 1 < chunks_.size(); ++i) std::free(chunks_[i].base);
      chunks_.assign(1, keep);
    }
    used_ = 0;
  }
  ~FrameArena() {
    for (Chunk& c : chunks_) std::free(c.base);
  }

 private:
  struct Chunk {
    char* base;
    size_t size;
  };
  std::vector<Chunk> chunks_;
  size_t used_ = 0;
};

class Group {
 public:
  int run(unsigned count, const unsigned pos[3], void (*entry)(void*, unsigned), void* arg, char* err, size_t err_size);
  int run_coroutines(unsigned count, const unsigned pos[3], const alloy_msl::cpu::CoroutineThreads* threads, char* err,
                     size_t err_size);

  // A fiber waits (arrives, then switches to the scheduler); a coroutine
  // arrives and then suspends itself.
  void barrier(const SyncSite& site) {
    arrive_barrier(site);
    suspend();
  }
  void simd_exchange(const SyncSite& site, const void* value, unsigned size, SimdView* out) {
    arrive_simd(site, value, size);
    suspend();
    simd_result(out);
  }
  void arrive_barrier(const SyncSite& site);
  void arrive_simd(const SyncSite& site, const void* value, unsigned size, void (*settle)(void*) = nullptr,
                   void* settle_arg = nullptr);
  void simd_result(SimdView* out);
  void* frame_alloc(size_t bytes) { return frames_.take(bytes); }
  unsigned lane() const { return current_ % kLanes; }
  void thread(unsigned* index, unsigned* count) const {
    *index = current_;
    *count = count_;
  }

 private:
  void start(unsigned count, const unsigned pos[3], char* err, size_t err_size);
  // Runs ready threads until all have returned, the group fails or deadlocks.
  void schedule();
  static void fiber_main(bctx::transfer_t t);
  void suspend() {
    tsan_switch(sched_tsan_);
    bctx::transfer_t t = bctx::jump_fcontext(sched_, nullptr);
    sched_ = t.fctx;
  }
  void finish(unsigned i);
  void release_barrier();
  void resolve_simd(unsigned s);
  bool resolve_stall();
  void make_ready(unsigned i) {
    fibers_[i].state = State::Ready;
    ready_.push_back(i);
  }
  // Threads in `state` grouped by call site: "threads 0-15 at X, threads 16-31 at Y".
  std::string waiting_text(State state, unsigned first, unsigned last, const char* noun) const;
  void fail(const std::string& what);

  unsigned count_ = 0, pos_[3] = {0, 0, 0};
  void (*entry_)(void*, unsigned) = nullptr;
  void* arg_ = nullptr;
  const alloy_msl::cpu::CoroutineThreads* coroutines_ = nullptr;  // null: threads are fibers
  FrameArena frames_;
  char* err_ = nullptr;
  size_t err_size_ = 0;
  std::vector<Fiber> fibers_;
  std::vector<SimdGroup> simd_;
  std::vector<unsigned> ready_;
  size_t ready_head_ = 0;
  unsigned living_ = 0, at_barrier_ = 0, current_ = 0;
  bool failed_ = false;
  bctx::fcontext_t sched_ = nullptr;
  void* sched_tsan_ = nullptr;  // the scheduler's own TSan fiber
  StackPool stacks_;
};

thread_local Group t_group;

void Group::fiber_main(bctx::transfer_t t) {
  Group& g = t_group;
  g.sched_ = t.fctx;
  unsigned i = static_cast<unsigned>(reinterpret_cast<uintptr_t>(t.data));
  g.entry_(g.arg_, i);
  g.finish(i);
  tsan_switch(g.sched_tsan_);
  bctx::jump_fcontext(g.sched_, nullptr);  // a finished fiber is never resumed
  __builtin_unreachable();
}

void Group::start(unsigned count, const unsigned pos[3], char* err, size_t err_size) {
  count_ = count;
  for (int d = 0; d < 3; ++d) pos_[d] = pos[d];
  err_ = err;
  err_size_ = err_size;
  failed_ = false;
  living_ = count;
  at_barrier_ = 0;
  fibers_.assign(count, Fiber{nullptr, nullptr, nullptr, State::Ready, SyncSite{}, nullptr, 0, nullptr, nullptr});
  ready_.clear();
  ready_head_ = 0;
  for (unsigned i = 0; i < count; ++i) ready_.push_back(i);
  unsigned nsimd = (count + kLanes - 1) / kLanes;
  simd_.resize(nsimd);
  for (unsigned s = 0; s < nsimd; ++s) {
    unsigned width = count - s * kLanes < kLanes ? count - s * kLanes : kLanes;
    simd_[s].width = width;
    simd_[s].living = width == kLanes ? 0xffffffffu : ((1u << width) - 1u);
    simd_[s].waiting = 0;
    simd_[s].gen = 0;
    simd_[s].results_ready[0] = simd_[s].results_ready[1] = 0;
  }
}

int Group::run(unsigned count, const unsigned pos[3], void (*entry)(void*, unsigned), void* arg, char* err,
               size_t err_size) {
  start(count, pos, err, err_size);
  entry_ = entry;
  arg_ = arg;
  coroutines_ = nullptr;
  schedule();
  for (Fiber& f : fibers_) tsan_drop_fiber(f.tsan);
  return failed_ ? 1 : 0;
}

int Group::run_coroutines(unsigned count, const unsigned pos[3], const alloy_msl::cpu::CoroutineThreads* threads,
                          char* err, size_t err_size) {
  start(count, pos, err, err_size);
  coroutines_ = threads;
  frames_.reset();
  schedule();
  // Threads stopped by a failure are suspended mid-kernel: destroying their
  // frames runs the destructors of what they hold.
  for (Fiber& f : fibers_)
    if (f.coroutine) threads->destroy(f.coroutine);
  coroutines_ = nullptr;
  return failed_ ? 1 : 0;
}

void Group::schedule() {
  sched_tsan_ = tsan_current_fiber();
  while (living_ > 0 && !failed_) {
    if (ready_head_ == ready_.size()) {
      ready_.clear();
      ready_head_ = 0;
      if (!resolve_stall()) break;
      continue;
    }
    unsigned i = ready_[ready_head_++];
    Fiber& f = fibers_[i];
    current_ = i;
    if (coroutines_) {
      if (!f.coroutine && !(f.coroutine = coroutines_->start(coroutines_->arg, this, i))) {
        fail("cannot allocate the coroutine frame of thread " + std::to_string(i));
        break;
      }
      f.state = State::Running;
      if (f.settle) {
        void (*settle)(void*) = f.settle;
        f.settle = nullptr;
        settle(f.settle_arg);
      }
      if (coroutines_->resume(f.coroutine)) finish(i);
      continue;
    }
    if (!f.ctx) {
      void* top = stacks_.top(i);
      if (!top) {
        fail("cannot allocate a fiber stack of " + std::to_string(fiber_stack_bytes() / 1024) +
             " KiB for thread " + std::to_string(i) + " (set ALLOY_CPU_FIBER_STACK_KB lower)");
        break;
      }
      f.ctx = bctx::make_fcontext(top, fiber_stack_bytes(), &Group::fiber_main);
      f.tsan = tsan_new_fiber();
    }
    f.state = State::Running;
    tsan_switch(f.tsan);
    bctx::transfer_t t = bctx::jump_fcontext(f.ctx, reinterpret_cast<void*>(static_cast<uintptr_t>(i)));
    fibers_[i].ctx = t.fctx;
  }
  if (!failed_ && living_ > 0) {
    fail("deadlock: no thread can proceed; " + waiting_text(State::Barrier, 0, count_, "threads") + "; " +
         waiting_text(State::Simd, 0, count_, "threads"));
  }
}

void Group::finish(unsigned i) {
  fibers_[i].state = State::Done;
  --living_;
  SimdGroup& sg = simd_[i / kLanes];
  sg.living &= ~(1u << (i % kLanes));
  if (living_ > 0 && at_barrier_ == living_) release_barrier();
  if (!failed_ && sg.waiting != 0 && sg.waiting == sg.living) resolve_simd(i / kLanes);
}

void Group::arrive_barrier(const SyncSite& site) {
  Fiber& f = fibers_[current_];
  f.state = State::Barrier;
  f.site = site;
  ++at_barrier_;
  if (at_barrier_ == living_) release_barrier();
}

void Group::release_barrier() {
  const SyncSite* first = nullptr;
  for (unsigned i = 0; i < count_; ++i) {
    if (fibers_[i].state != State::Barrier) continue;
    if (!first) {
      first = &fibers_[i].site;
    } else if (!same_site(*first, fibers_[i].site)) {
      fail("barrier divergence: " + waiting_text(State::Barrier, 0, count_, "threads") +
           "; every thread of a threadgroup that has not returned must reach the same threadgroup_barrier");
      return;
    }
  }
  for (unsigned i = 0; i < count_; ++i)
    if (fibers_[i].state == State::Barrier) make_ready(i);
  at_barrier_ = 0;
}

void Group::arrive_simd(const SyncSite& site, const void* value, unsigned size, void (*settle)(void*),
                        void* settle_arg) {
  unsigned i = current_, s = i / kLanes, lane = i % kLanes;
  SimdGroup& sg = simd_[s];
  if (size) std::memcpy(sg.slots[sg.gen & 1][lane], value, size);
  Fiber& f = fibers_[i];
  f.settle = settle;
  f.settle_arg = settle_arg;
  f.state = State::Simd;
  f.site = site;
  sg.waiting |= 1u << lane;
  if (sg.waiting == sg.living) resolve_simd(s);
}

void Group::simd_result(SimdView* out) {
  const Fiber& f = fibers_[current_];
  SimdGroup& sg = simd_[current_ / kLanes];
  out->slots = f.simd_slots;
  out->mask = f.simd_mask;
  out->lane = current_ % kLanes;
  out->width = sg.width;
  // The buffer of the exchange this lane returns from.
  const unsigned buffer = f.simd_slots == &sg.slots[1][0][0] ? 1 : 0;
  out->results = &sg.results[buffer][0][0];
  out->results_ready = &sg.results_ready[buffer];
}

void Group::resolve_simd(unsigned s) {
  SimdGroup& sg = simd_[s];
  // The earliest call site among the waiting lanes; its lanes are this
  // call's active lanes.
  const SyncSite* first = nullptr;
  for (unsigned l = 0; l < kLanes; ++l) {
    if (!((sg.waiting >> l) & 1u)) continue;
    const SyncSite& site = fibers_[s * kLanes + l].site;
    if (!first || site_before(site, *first)) first = &site;
  }
  unsigned active = 0;
  for (unsigned l = 0; l < kLanes; ++l)
    if (((sg.waiting >> l) & 1u) && same_site(*first, fibers_[s * kLanes + l].site)) active |= 1u << l;
  const unsigned char* slots = &sg.slots[sg.gen & 1][0][0];
  sg.results_ready[sg.gen & 1] = 0;
  for (unsigned l = 0; l < kLanes; ++l) {
    if (!((active >> l) & 1u)) continue;
    Fiber& f = fibers_[s * kLanes + l];
    f.simd_slots = slots;
    f.simd_mask = active;
    make_ready(s * kLanes + l);
  }
  // Lanes still waiting keep their values: copy them to the buffer the next
  // exchange writes into.
  const unsigned rest = sg.waiting & ~active;
  for (unsigned l = 0; l < kLanes; ++l)
    if ((rest >> l) & 1u) std::memcpy(sg.slots[(sg.gen + 1) & 1][l], sg.slots[sg.gen & 1][l], kSimdSlotBytes);
  sg.waiting = rest;
  ++sg.gen;
}

// Nothing is ready: complete the SIMD exchanges whose other lanes wait at a
// threadgroup barrier (or elsewhere). Returns whether anything became ready.
bool Group::resolve_stall() {
  bool any = false;
  for (unsigned s = 0; s < simd_.size() && !failed_; ++s) {
    if (simd_[s].waiting) {
      resolve_simd(s);
      any = true;
    }
  }
  return any && !failed_;
}

std::string Group::waiting_text(State state, unsigned first, unsigned last, const char* noun) const {
  std::vector<const SyncSite*> sites;
  std::vector<std::vector<unsigned>> ids;
  for (unsigned i = first; i < last && i < count_; ++i) {
    if (fibers_[i].state != state) continue;
    size_t k = 0;
    while (k < sites.size() && !same_site(*sites[k], fibers_[i].site)) ++k;
    if (k == sites.size()) {
      sites.push_back(&fibers_[i].site);
      ids.emplace_back();
    }
    ids[k].push_back(i);
  }
  if (sites.empty()) return std::string("no ") + noun + (state == State::Barrier ? " at a barrier" : " at a SIMD-group function");
  std::string out;
  for (size_t k = 0; k < sites.size(); ++k) {
    if (k) out += ", ";
    out += std::string(noun) + " " + ranges_text(ids[k]) + " wait at " + site_text(*sites[k]);
  }
  return out;
}

void Group::fail(const std::string& what) {
  if (failed_) return;
  failed_ = true;
  if (!err_ || err_size_ == 0) return;
  std::snprintf(err_, err_size_, "[alloy_msl::cpu::run] threadgroup (%u, %u, %u) of %u threads: %s", pos_[0], pos_[1],
                pos_[2], count_, what.c_str());
}

int api_run_group(unsigned count, const unsigned group[3], void (*entry)(void*, unsigned), void* arg, char* err,
                  size_t err_size) {
  return t_group.run(count, group, entry, arg, err, err_size);
}
void api_barrier(SyncSite site) { t_group.barrier(site); }
void api_simd_exchange(SyncSite site, const void* value, unsigned size, SimdView* out) {
  t_group.simd_exchange(site, value, size, out);
}
unsigned api_lane() { return t_group.lane(); }
void api_thread(unsigned* index, unsigned* count) { t_group.thread(index, count); }
int api_run_group_coroutines(unsigned count, const unsigned group[3], const alloy_msl::cpu::CoroutineThreads* threads,
                             char* err, size_t err_size) {
  return t_group.run_coroutines(count, group, threads, err, err_size);
}
void api_arrive_barrier(void* group, SyncSite site) { static_cast<Group*>(group)->arrive_barrier(site); }
void api_arrive_simd(void* group, SyncSite site, const void* value, unsigned size, void (*settle)(void*), void* arg) {
  static_cast<Group*>(group)->arrive_simd(site, value, size, settle, arg);
}
void api_simd_result(void* group, SimdView* out) { static_cast<Group*>(group)->simd_result(out); }
void* api_frame_alloc(size_t bytes) { return t_group.frame_alloc(bytes); }

const alloy_msl::cpu::FiberApi kApi = {&api_run_group,   &api_barrier,       &api_simd_exchange,
                                       &api_lane,        &api_thread,        &api_run_group_coroutines,
                                       &api_arrive_barrier, &api_arrive_simd, &api_simd_result,
                                       &api_frame_alloc};

}  // namespace

const alloy_msl::cpu::FiberApi* cpu_fiber_api() { return &kApi; }

}  // namespace alloy::jit

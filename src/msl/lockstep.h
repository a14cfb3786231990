// The lanes of a SIMD group run in lockstep on Apple's GPUs, and kernels
// lean on it: one lane writes threadgroup memory that another reads in the
// next statement, with no barrier between. xLSTM-metal's per-head layer
// norm reads `tmp[0]` in every lane and then writes `tmp[lane]`; the classic
// warp-synchronous reduction is
//
//   if (tid < 32) { s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; ... }
//
// The CPU runs a group's threads one after the other between barriers, so
// there lane 0 saw none of the later lanes' writes and every later lane saw
// lane 0's: wrong numbers, and nothing said. CUDA's warps execute such
// statements together, but the compiler may keep a lane's element in a
// register across them (nvcc -O3 stored `s[tid]` once, after all six steps'
// loads, so each lane added the original values). So a barrier is written
// into the body before each statement that shares threadgroup memory that
// way with an earlier statement of its block since the block's last
// synchronising statement, and at the end of a loop's body whose first
// statements share it with its last: the lanes of a SIMD group then all
// finish one statement, its stores included, before any starts the next, as
// in lockstep. On the CPU, in a block every thread of the group runs (the
// body's own scope, or a block with a threadgroup barrier of its own) it is
// a threadgroup barrier, which the CPU's regions take as they take the
// user's; elsewhere (a branch some lanes take) a `simdgroup_barrier`, which
// waits for the lanes present, as Metal's SIMD-group functions do. On CUDA
// it is `alloy_msl::lockstep_point()` (runtime/cuda_sync.h): a warp barrier
// of the lanes executing it, which cannot wait for a lane that is not
// there. Race-free code computes the same with either; the race check
// (KernelSpec::race_check) gets the body as written, and reports the
// sharing.
//
// Two statements share memory that way when one writes an element of a
// threadgroup array the body declares (`=`, `op=`, `++`, `--`, a member of
// the element) and the other reads one, their subscripts differ as written,
// and one of the two subscripts may differ between threads: it names a
// per-thread attribute, a macro that names anything, or a name the body
// sets from an expression that does (`uint lane = gid & 31;`). A write
// against a write is not counted (a race Apple's GPUs do not order either).
// Not seen: sharing within one statement (`s[i] = s[i ^ 1];`), through
// pointers, in helper functions, and in a body the statement parser
// (cpu_regions_syntax.h) does not read.
//
// Each addition is on the line of the statement it precedes (or follows), so
// every line keeps its number.
#pragma once

#include <optional>
#include <string>

#include "alloy/msl/translate.h"
#include "msl/lexer.h"

namespace alloy::msl {

struct LockstepPoints {
  std::string source;  // the body with the barriers written in
  std::string note;    // "Barriers are written in at lines 56, 64: ..."
};

// For Target::Cpp or Target::Cuda; nullopt where the body needs none.
std::optional<LockstepPoints> add_lockstep_points(const KernelSpec& spec, const LexedKernel& lexed, Target target);

}  // namespace alloy::msl

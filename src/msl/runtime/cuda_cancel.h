// Stopping a runaway kernel on the GPU. The translation polls keep_going()
// in every loop that has no counted bound (msl/rewrite.cpp: `while`,
// do-while, `for` without a condition or a step); the host points
// alloy_msl_cancel_flag at a device int it sets to stop every running Metal
// kernel (Ctrl-C, SIGALRM, timeout=), whose loops then end.
//
// The flag is read only while the SM's cycle counter is in a window of 4096
// cycles every 2^20 (about 0.5 ms at 2 GHz), so a loop pays a counter read
// and a compare per iteration, and an iteration shorter than the window
// reads the flag at least once per 2^20 cycles.
#pragma once

extern "C" __device__ const volatile int* alloy_msl_cancel_flag = nullptr;

namespace alloy_msl {

__device__ __forceinline__ bool keep_going() {
  unsigned now;
  asm volatile("mov.u32 %0, %%clock;" : "=r"(now));
  if ((now & 0xFFFFFu) >= 4096u) return true;
  const volatile int* flag = alloy_msl_cancel_flag;
  return flag == nullptr || *flag == 0;
}

}  // namespace alloy_msl

// CUDA target: Metal's thread ids from a 1-D block of prod(threadgroup)
// threads (see cuda_launch.h for the launch shape).
//
// A threadgroup at the grid's upper edge is partial: its actual size is
// min(threadgroup, grid - origin) per dimension, and Metal numbers its
// threads linearly over that actual size. Block thread t < prod(actual) is
// Metal's thread_index_in_threadgroup t; threads beyond do not exist and
// return false. SIMD groups are then warps, exactly as Metal forms them.
#pragma once

#include "cuda_launch.h"

namespace alloy_msl {
namespace cuda {

// Fills `t` for this CUDA thread; false for a thread outside the grid (the
// caller returns at once). Also records the threadgroup's thread count for
// the SIMD-group functions (cuda_sync.h). Unused fields cost nothing: the
// call is inlined and dead values are dropped.
// `group_x`: the threadgroup along x this block runs now (blockIdx.x, or a
// later one when a sync-free kernel's block runs several in turn).
ALLOY_FUNC bool thread_ids(const Dispatch& d, ThreadIds& t, unsigned group_x) {
  const unsigned tid = threadIdx.x;
  const unsigned tgx = d.threadgroup[0], tgy = d.threadgroup[1], tgz = d.threadgroup[2];
  const unsigned gx = group_x;
  unsigned gy = blockIdx.y, gz = blockIdx.z;
  unsigned ax = tgx, ay = tgy, az = tgz, px = tid, py = 0u, pz = 0u, n;
  if (d.whole) {
    // Every group whole, every block in the grid: only the position to split.
    n = tgx * tgy * tgz;
    if (d.x_shift != 0u) {
      py = tid >> (d.x_shift - 1u);
      px = tid & (tgx - 1u);
    } else if (tgy != 1u || tgz != 1u) {
      const unsigned plane = tgx * tgy;
      pz = tid / plane;
      const unsigned rest = tid - pz * plane;
      py = rest / tgx;
      px = rest - py * tgx;
    }
  } else {
    if (d.fold_y != 0u) {  // more than 65535 threadgroups in y or z: unfold (cuda_launch.h)
      const unsigned linear = blockIdx.z * gridDim.y + blockIdx.y;
      gy = linear % d.fold_y;
      gz = linear / d.fold_y;
      if (gz * tgz >= d.grid[2]) return false;  // padding past the last threadgroup
    }
    if (gx * tgx >= d.grid[0]) return false;  // a threadgroup past the grid (x)
    const unsigned left_x = d.grid[0] - gx * tgx;
    ax = left_x < tgx ? left_x : tgx;
    ay = 1u;
    az = 1u;
    n = ax;
    if (tgy != 1u || tgz != 1u) {  // 2-D/3-D threadgroups: divide the linear index
      const unsigned left_y = d.grid[1] - gy * tgy, left_z = d.grid[2] - gz * tgz;
      ay = left_y < tgy ? left_y : tgy;
      az = left_z < tgz ? left_z : tgz;
      if (d.x_shift != 0u && ax == tgx) {
        // 2-D, as wide as requested, a power of two: no division.
        n = ax * ay;
        py = tid >> (d.x_shift - 1u);
        px = tid & (tgx - 1u);
      } else {
        const unsigned plane = ax * ay;
        n = plane * az;
        pz = tid / plane;
        const unsigned rest = tid - pz * plane;
        py = rest / ax;
        px = rest - py * ax;
      }
    }
    if (tid >= n) return false;
  }
  set_simd_group_state(tid, n);

  const unsigned tg_threads = tgx * tgy * tgz;
  t.thread_position_in_grid = metal::uint3(gx * tgx + px, gy * tgy + py, gz * tgz + pz);
  t.thread_position_in_threadgroup = metal::uint3(px, py, pz);
  t.threadgroup_position_in_grid = metal::uint3(gx, gy, gz);
  t.threads_per_threadgroup = metal::uint3(ax, ay, az);
  t.threads_per_grid = metal::uint3(d.grid[0], d.grid[1], d.grid[2]);
  t.threadgroups_per_grid =
      metal::uint3(threadgroups_per_grid(d, 0), threadgroups_per_grid(d, 1), threadgroups_per_grid(d, 2));
  t.grid_size = t.threads_per_grid;
  t.grid_origin = metal::uint3(0u);
  t.dispatch_threads_per_threadgroup = metal::uint3(tgx, tgy, tgz);
  t.thread_index_in_threadgroup = tid;
  t.thread_index_in_simdgroup = tid & 31u;
  t.threads_per_simdgroup = 32u;
  t.simdgroup_index_in_threadgroup = tid >> 5;
  t.simdgroups_per_threadgroup = (n + 31u) >> 5;
  t.dispatch_simdgroups_per_threadgroup = (tg_threads + 31u) >> 5;
  t.thread_execution_width = 32u;
  t.thread_index_in_quadgroup = tid & 3u;
  t.quadgroup_index_in_threadgroup = tid >> 2;
  t.quadgroups_per_threadgroup = (n + 3u) >> 2;
  t.dispatch_quadgroups_per_threadgroup = (tg_threads + 3u) >> 2;
  return true;
}

ALLOY_FUNC bool thread_ids(const Dispatch& d, ThreadIds& t) { return thread_ids(d, t, blockIdx.x); }

}  // namespace cuda
}  // namespace alloy_msl

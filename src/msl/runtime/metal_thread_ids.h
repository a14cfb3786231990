// Shared by both targets: the Metal attribute values of one thread, computed
// with dispatchThreads semantics (partial edge threadgroups; SIMD groups of 32
// and quad groups of 4 formed from the linear index within the threadgroup).
#pragma once

#include "metal_vector.h"

namespace alloy_msl {

inline constexpr unsigned kSimdWidth = 32;

// One member per Metal attribute the translator passes to a kernel.
struct ThreadIds {
  metal::uint3 thread_position_in_grid;
  metal::uint3 thread_position_in_threadgroup;
  metal::uint3 threadgroup_position_in_grid;
  metal::uint3 threads_per_threadgroup;           // actual size: smaller in edge groups
  metal::uint3 threads_per_grid;                  // the requested grid
  metal::uint3 threadgroups_per_grid;
  metal::uint3 grid_size;                         // = threads_per_grid (no stage-in region)
  metal::uint3 grid_origin;                       // = 0
  metal::uint3 dispatch_threads_per_threadgroup;  // the requested threadgroup size
  metal::uint thread_index_in_threadgroup;
  metal::uint thread_index_in_simdgroup;
  metal::uint threads_per_simdgroup;              // the execution width, 32
  metal::uint simdgroup_index_in_threadgroup;
  metal::uint simdgroups_per_threadgroup;         // of the actual threadgroup
  metal::uint dispatch_simdgroups_per_threadgroup;
  metal::uint thread_execution_width;
  metal::uint thread_index_in_quadgroup;
  metal::uint quadgroup_index_in_threadgroup;
  metal::uint quadgroups_per_threadgroup;
  metal::uint dispatch_quadgroups_per_threadgroup;
};

// What all threads of one threadgroup share.
struct GroupGeometry {
  metal::uint3 grid, threadgroup, groups, position, actual;
  unsigned count;  // actual.x * actual.y * actual.z
};

// grid and threadgroup as launched (threadgroup already clamped to the grid);
// `linear_group` counts threadgroups with x fastest.
ALLOY_FUNC GroupGeometry group_geometry(const unsigned grid[3], const unsigned tg[3], unsigned long long linear_group) {
  GroupGeometry g;
  for (int d = 0; d < 3; ++d) {
    g.grid[d] = grid[d];
    g.threadgroup[d] = tg[d];
    g.groups[d] = (grid[d] + tg[d] - 1) / tg[d];
  }
  g.position.x = unsigned(linear_group % g.groups.x);
  g.position.y = unsigned((linear_group / g.groups.x) % g.groups.y);
  g.position.z = unsigned(linear_group / ((unsigned long long)g.groups.x * g.groups.y));
  for (int d = 0; d < 3; ++d) {
    unsigned start = g.position[d] * tg[d];
    unsigned left = grid[d] - start;
    g.actual[d] = left < tg[d] ? left : tg[d];
  }
  g.count = g.actual.x * g.actual.y * g.actual.z;
  return g;
}

// Fills every attribute of the thread at local position `local` (linear index `linear`).
ALLOY_FUNC void fill_thread_ids(ThreadIds& t, const GroupGeometry& g, metal::uint3 local, unsigned linear) {
  unsigned requested = g.threadgroup.x * g.threadgroup.y * g.threadgroup.z;
  t.thread_position_in_threadgroup = local;
  t.threadgroup_position_in_grid = g.position;
  t.thread_position_in_grid = g.position * g.threadgroup + local;
  t.threads_per_threadgroup = g.actual;
  t.threads_per_grid = g.grid;
  t.threadgroups_per_grid = g.groups;
  t.grid_size = g.grid;
  t.grid_origin = metal::uint3(0u);
  t.dispatch_threads_per_threadgroup = g.threadgroup;
  t.thread_index_in_threadgroup = linear;
  t.thread_index_in_simdgroup = linear % kSimdWidth;
  t.threads_per_simdgroup = kSimdWidth;
  t.simdgroup_index_in_threadgroup = linear / kSimdWidth;
  t.simdgroups_per_threadgroup = (g.count + kSimdWidth - 1) / kSimdWidth;
  t.dispatch_simdgroups_per_threadgroup = (requested + kSimdWidth - 1) / kSimdWidth;
  t.thread_execution_width = kSimdWidth;
  t.thread_index_in_quadgroup = linear % 4;
  t.quadgroup_index_in_threadgroup = linear / 4;
  t.quadgroups_per_threadgroup = (g.count + 3) / 4;
  t.dispatch_quadgroups_per_threadgroup = (requested + 3) / 4;
}

// The thread with linear index `linear` inside the (possibly partial) group.
ALLOY_FUNC void fill_thread_ids(ThreadIds& t, const GroupGeometry& g, unsigned linear) {
  metal::uint3 local;
  local.x = linear % g.actual.x;
  local.y = (linear / g.actual.x) % g.actual.y;
  local.z = linear / (g.actual.x * g.actual.y);
  fill_thread_ids(t, g, local, linear);
}

// A whole program's attribute parameter in the type it declares
// (metal_library): `uint2 gid [[thread_position_in_grid]]` takes x and y,
// `ushort lane [[thread_index_in_simdgroup]]` the value narrowed.
template <class T> struct attribute_shape {
  static constexpr int components = 1;
  using element = T;
};
template <class E, int N> struct attribute_shape<metal::vec<E, N>> {
  static constexpr int components = N;
  using element = E;
};

template <class T> ALLOY_FUNC T attribute_as(metal::uint v) { return T(v); }

template <class T> ALLOY_FUNC T attribute_as(const metal::uint3& v) {
  using E = typename attribute_shape<T>::element;
  constexpr int n = attribute_shape<T>::components;
  if constexpr (n == 1) {
    return T(v.x);
  } else if constexpr (n == 2) {
    return T(E(v.x), E(v.y));
  } else {
    return T(E(v.x), E(v.y), E(v.z));
  }
}

}  // namespace alloy_msl

// mx.distributed for one process. Alloy has no communication backend yet, so
// every group is the singleton group (rank 0 of size 1) that MLX returns when
// no backend is configured: collectives return their input (a copy), and
// point-to-point calls raise, exactly as MLX does in a single process.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;

namespace {

struct Group {
  int rank() const { return 0; }
  int size() const { return 1; }
};

constexpr const char* kBackends[] = {"any", "mpi", "nccl", "jaccl", "ring"};

void check_backend(const std::string& backend) {
  for (auto b : kBackends) {
    if (backend == b) return;
  }
  throw std::invalid_argument(
      "[distributed] The only valid values for backend are 'any', 'mpi', 'nccl', 'jaccl' and 'ring' but '" + backend +
      "' was provided.");
}

// With one process a reduction, gather or scatter over the group is the
// identity; MLX still returns a new array.
array collective(nb::handle x, StreamOrDevice s) { return copy(py::to_array(x), s); }

}  // namespace

void init_distributed(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("distributed", "Communication between processes (single-process group).");
  nb::class_<Group>(m, "Group", "A group of processes that communicate; here always the single-process group.")
      .def("rank", &Group::rank, "This process's rank in the group.")
      .def("size", &Group::size, "The number of processes in the group.")
      .def(
          "split",
          [](const Group&, int color, int key) -> Group {
            throw std::runtime_error("Cannot split the distributed group further.");
          },
          nb::arg("color"), nb::arg("key") = -1,
          "Splits the group by color (the single-process group cannot be split).");

  m.def(
      "is_available",
      [](const std::string& backend) {
        // The singleton group is always there; no named backend is built in.
        return backend == "any";
      },
      nb::arg("backend") = "any", "Whether a distributed backend is available (only the single-process group here).");
  m.def(
      "init",
      [](bool strict, const std::string& backend, nb::handle all_gather_factory) {
        check_backend(backend);
        if (strict) throw std::runtime_error("[distributed] Couldn't initialize any backend");
        return Group{};
      },
      nb::arg("strict") = false, nb::arg("backend") = "any", nb::kw_only(), nb::arg("all_gather_factory") = nb::none(),
      "Initializes the distributed group: without a backend, the single-process group of rank 0 and size 1\n"
      "(``strict=True`` raises instead).");

  const char* names[] = {"all_sum", "all_gather", "all_max", "all_min", "sum_scatter"};
  for (const char* name : names) {
    m.def(
        name, [](nb::handle x, std::optional<Group>, StreamOrDevice s) { return collective(x, s); }, nb::arg("x"),
        nb::kw_only(), nb::arg("group") = nb::none(), nb::arg("stream") = nb::none(),
        "A collective over the group; over the single-process group it returns a copy of ``x``.");
  }
  m.def(
      "send",
      [](nb::handle x, int dst, std::optional<Group>, StreamOrDevice) -> array {
        throw std::invalid_argument("Cannot send to a singleton group");
      },
      nb::arg("x"), nb::arg("dst"), nb::kw_only(), nb::arg("group") = nb::none(), nb::arg("stream") = nb::none(),
      "Sends ``x`` to process ``dst`` (raises in a single-process group).");
  m.def(
      "recv",
      [](std::vector<int> shape, Dtype dtype, int src, std::optional<Group>, StreamOrDevice) -> array {
        throw std::invalid_argument("Cannot recv from a singleton group");
      },
      nb::arg("shape"), nb::arg("dtype"), nb::arg("src"), nb::kw_only(), nb::arg("group") = nb::none(),
      nb::arg("stream") = nb::none(), "Receives an array from process ``src`` (raises in a single-process group).");
  m.def(
      "recv_like",
      [](const array& x, int src, std::optional<Group>, StreamOrDevice) -> array {
        throw std::invalid_argument("Cannot recv from a singleton group");
      },
      nb::arg("x"), nb::arg("src"), nb::kw_only(), nb::arg("group") = nb::none(), nb::arg("stream") = nb::none(),
      "Receives an array shaped like ``x`` from ``src`` (raises in a single-process group).");
}

// export_function / import_function (as mlx.core 0.32.4): a function traced
// on example arrays is written to a file as its graph of primitives, with the
// arrays it closes over as constants; importing the file gives a callable
// that rebuilds the graph on new inputs of the same shapes and dtypes (or,
// for a shapeless export, the same dtypes and ranks). One file holds several
// traces (FunctionExporter); a call runs the first whose signature matches.
// The file format is Alloy's own (docs/design/export.md): MLX's .mlxfn files
// are not read, nor Alloy's by MLX.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "alloy/array.h"

namespace alloy {

using ExportArgs = std::vector<array>;
using ExportKwargs = std::map<std::string, array>;
using ExportableFunction = std::function<std::vector<array>(const ExportArgs&, const ExportKwargs&)>;

namespace detail {
struct ExportedTrace;
}

// Appends traces of one function to a file (rewritten after each trace).
class FunctionExporter {
 public:
  FunctionExporter(std::string file, ExportableFunction fun, bool shapeless = false, std::string metadata = "");
  ~FunctionExporter();
  FunctionExporter(FunctionExporter&&) noexcept;
  FunctionExporter& operator=(FunctionExporter&&) noexcept;
  // Traces the function on these example inputs and adds the trace.
  void operator()(const ExportArgs& args, const ExportKwargs& kwargs = {});
  // No more traces (later calls raise).
  void close();

 private:
  std::string file_;
  ExportableFunction fun_;
  bool shapeless_;
  std::string metadata_;
  bool closed_ = false;
  std::vector<std::shared_ptr<detail::ExportedTrace>> traces_;
};

void export_function(const std::string& file, const ExportableFunction& fun, const ExportArgs& args,
                     const ExportKwargs& kwargs = {}, bool shapeless = false, const std::string& metadata = "");

class ImportedFunction {
 public:
  // The outputs of the first trace whose signature matches the inputs; a
  // ValueError-class error (std::invalid_argument) lists the traces when none does.
  std::vector<array> operator()(const ExportArgs& args, const ExportKwargs& kwargs = {}) const;
  const std::string& metadata() const { return metadata_; }

 private:
  friend ImportedFunction import_function(const std::string& file);
  std::vector<std::shared_ptr<const detail::ExportedTrace>> traces_;
  std::string metadata_;
};

ImportedFunction import_function(const std::string& file);

}  // namespace alloy

// A primitive is one operation of the graph. Ops validate and build nodes;
// primitives say how to compute them on each backend and how to differentiate.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/device.h"

namespace alloy {

class Primitive {
 public:
  explicit Primitive(Stream stream) : stream_(stream) {}
  virtual ~Primitive() = default;
  Primitive(const Primitive&) = delete;
  Primitive& operator=(const Primitive&) = delete;

  const Stream& stream() const { return stream_; }
  Device device() const { return stream_.device; }

  // Names the primitive in messages; extensions written for MLX (which has no
  // such method) get a generic one.
  virtual const char* name() const { return "CustomPrimitive"; }

  // Compute `outputs` (already shaped and typed) from evaluated `inputs`.
  virtual void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) = 0;
  // The default says plainly that the GPU backend lacks this primitive.
  virtual void eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs);

  // Reverse mode: cotangents of the outputs -> cotangents of inputs[argnums].
  virtual std::vector<array> vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                 const std::vector<int>& argnums, const std::vector<array>& outputs);
  // Forward mode: tangents of inputs[argnums] -> tangents of the outputs.
  virtual std::vector<array> jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                 const std::vector<int>& argnums);

  // Whether two nodes compute the same thing (used by graph simplification).
  virtual bool is_equivalent(const Primitive& other) const { return false; }

  // Whether Ctrl-C, an alarm or a timeout can cut this node's work short
  // (Metal kernels poll the stop flag): eval then marks its outputs lost.
  virtual bool stoppable() const { return false; }

  // Whether its GPU eval only enqueues work on its stream (kernel launches,
  // device-to-device copies, views): no waits, no reads of device memory on
  // the host, no host-to-device copies beyond its inputs'. Evaluation may
  // then record it into a CUDA graph with its neighbours.
  virtual bool graph_capturable() const { return false; }

 private:
  Stream stream_;
};

// Runs a primitive's eval for its stream's device.
void eval_primitive(Primitive& p, const std::vector<array>& inputs, std::vector<array>& outputs);

}  // namespace alloy

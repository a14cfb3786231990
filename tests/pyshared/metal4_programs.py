"""What the Metal 4 tensor tests share: the includes their programs start
with, a launcher for one program's kernels, and 4-bit codes packed as the
runtime reads them (the lowest bits first)."""
import functools

import numpy as np

import alloy.core as mx

PRELUDE = r"""#include <metal_stdlib>
#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
"""


class Program:
    """A metal_library program (after PRELUDE), built on first use; run()
    launches one of its kernels on `stream`."""

    def __init__(self, source, stream):
        self.source, self.stream = source, stream

    @functools.cached_property
    def library(self):
        return mx.fast.metal_library(self.source, header=PRELUDE)

    def run(self, name, args, grid, threadgroup, dispatch="threads"):
        return self.library.kernel(name)(args=args, grid=grid, threadgroup=threadgroup, dispatch=dispatch,
                                         stream=self.stream)


def pack_codes(codes, bits=4):
    """`bits`-bit codes (..., n) packed 8 / bits a byte, element j of a byte's
    group in its bits j*bits and up (the lowest first)."""
    per = 8 // bits
    c = np.asarray(codes).astype(np.uint8) & ((1 << bits) - 1)
    return np.bitwise_or.reduce([c[..., j::per] << (j * bits) for j in range(per)], axis=0).astype(np.uint8)

"""What the Metal 4 tensor tests share: the includes their programs start
with, a launcher for one program's kernels, and 4-bit codes packed as the
runtime reads them (two a byte, the even element in the low nibble)."""
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


def pack_nibbles(codes):
    """4-bit codes (..., 2n) packed two a byte, the even element in the low nibble."""
    codes = np.asarray(codes).astype(np.uint8) & 0xF
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)

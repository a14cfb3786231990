// Alloy's C++ API in one include.
#pragma once

#include "alloy/allocator.h"
#include "alloy/array.h"
#include "alloy/device.h"
#include "alloy/dtype.h"
#include "alloy/compile.h"
#include "alloy/export.h"
#include "alloy/fast.h"
#include "alloy/fast_ops.h"
#include "alloy/fft.h"
#include "alloy/io.h"
#include "alloy/ops.h"
#include "alloy/runtime.h"
#include "alloy/ops_math.h"
#include "alloy/ops_shape.h"
#include "alloy/ops_conv.h"
#include "alloy/ops_sort.h"
#include "alloy/ops_quant.h"
#include "alloy/linalg.h"
#include "alloy/metal.h"
#include "alloy/primitive.h"
#include "alloy/transforms.h"
#if __has_include("alloy/random.h")
#include "alloy/random.h"
#endif

// Fixed-width integers for code compiled by NVRTC without the CUDA toolkit's
// headers (NVRTC has no <stdint.h>): LP64, as glibc spells them, so the
// host and the device agree on int64_t = long.
#pragma once

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;

// <stddef.h>'s offsetof, which NVRTC lacks too (Metal kernels use it on
// their structs), and NVRTC has no __builtin_offsetof: the member's address
// in an object placed at a nonzero address (not a constant expression).
#ifndef offsetof
#define offsetof(type, member) \
  ((unsigned long)((const char*)&(((const type*)64)->member) - (const char*)64))
#endif

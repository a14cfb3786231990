// The buffer protocol's slots for mx.array's type (buffer_protocol.cpp).
#pragma once

#include "bindings.h"

PyType_Slot* array_buffer_slots();

#include "bindings.h"

// Bindings for this op family are not written yet.
void init_linalg(nb::module_& m) {}

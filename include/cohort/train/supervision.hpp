// Forwarding header, kept for one release: this header is now cohort/ops/supervision.hpp, namespace
// cohort::ops (the ops module, docs/architecture.md). Code that includes this path and names
// cohort::train:: builds as before; include the new path and name cohort::ops:: instead.
#pragma once

#include "cohort/ops/supervision.hpp"

namespace cohort::train {
using namespace ::cohort::ops;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train

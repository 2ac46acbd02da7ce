// Forwarding header, kept for one release: this header is now cohort/bench/control.hpp, namespace
// cohort::bench (the bench module, docs/architecture.md). Code that includes this path and names
// cohort::train:: builds as before; include the new path and name cohort::bench:: instead.
#pragma once

#include "cohort/bench/control.hpp"

namespace cohort::train {
using namespace ::cohort::bench;  // NOLINT(google-build-using-namespace)
}  // namespace cohort::train

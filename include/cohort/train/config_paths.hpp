// Forwarding header, kept for one release: this header is now cohort/settings/config_paths.hpp (the
// settings module, docs/architecture.md). Code that includes this path builds as before; include
// the new path instead.
#pragma once

#include "cohort/settings/config_paths.hpp"

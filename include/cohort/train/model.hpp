// Forwarding header, kept for one release: the model API is now cohort/models/model.hpp (the
// models module, docs/models.md "C++ models"). A plugin written against this path builds as
// before; include the new path instead.
#pragma once

#include "cohort/models/model.hpp"

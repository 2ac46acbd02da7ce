// Torch dtypes and reduce ops as MPI datatypes and ops. bf16 and fp16 have no MPI type: they
// travel as 16-bit words and reduce through user-defined MPI ops that compute in float.
#pragma once

#include <c10/core/ScalarType.h>
#include <mpi.h>

#include "cohort/comm/types.hpp"

namespace cohort::comm::mpi {

// Throws CommError naming the dtype when MPI cannot carry it.
MPI_Datatype datatype(c10::ScalarType type);
// kAvg maps to sum; the caller divides.
MPI_Op reduce_op(ReduceOp op, c10::ScalarType type);

}  // namespace cohort::comm::mpi

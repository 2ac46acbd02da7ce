// The MPI session shared by all MPI test cases of one process.
#pragma once

#include "cohort/comm/mpi_session.hpp"

namespace cohort::test {

const comm::MpiSession& session();

}  // namespace cohort::test

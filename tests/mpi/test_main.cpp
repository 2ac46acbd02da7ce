// MPI test runner: every rank runs every test case; MPI lives for the whole process through one
// MpiSession held by a global fixture (sessions made inside tests then neither init nor finalize).
#define BOOST_TEST_MODULE cohort mpi tests
#include <boost/test/unit_test.hpp>
#include <memory>

#include "cohort/comm/mpi_session.hpp"

struct MpiFixture {
  MpiFixture() : session(std::make_unique<cohort::comm::MpiSession>(nullptr, nullptr)) {}
  std::unique_ptr<cohort::comm::MpiSession> session;
};

BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

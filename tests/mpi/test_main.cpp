// MPI test runner: every rank runs every test case; MPI lives for the whole process through one
// MpiSession held by a global fixture (sessions made inside tests then neither init nor finalize).
#define BOOST_TEST_MODULE cohort mpi tests
#include <boost/test/unit_test.hpp>
#include <memory>

#include "mpi_fixture.hpp"

namespace {
std::unique_ptr<cohort::comm::MpiSession> g_session;
}

const cohort::comm::MpiSession& cohort::test::session() { return *g_session; }

struct MpiFixture {
  MpiFixture() { g_session = std::make_unique<cohort::comm::MpiSession>(nullptr, nullptr); }
  ~MpiFixture() { g_session.reset(); }
};

BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

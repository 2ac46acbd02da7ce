// A rank skips a collective: the others must not hang. Rank 1 skips all_reduce #3 and sleeps; the
// watchdog on the other ranks fires after the 2 s timeout and aborts the job with exit code 76.
#include <ATen/ops/ones.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cohort/comm/factory.hpp"

int main(int argc, char** argv) {
  cohort::comm::MpiSession session(&argc, &argv);
  cohort::comm::CommOptions options;
  options.timeout = std::chrono::seconds(2);
  auto comm = cohort::comm::make_communicator(session, cohort::comm::Backend::kMpi, options);
  at::Tensor t = at::ones({1024});
  for (int i = 0; i < 3; ++i) comm->all_reduce(t);
  comm->set_step(12);
  if (comm->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // never calls all_reduce #3
    return 0;
  }
  // The test measures from here (MPI start-up under a loaded CI machine takes seconds).
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "watchdog_skip: rank %d issues all_reduce #3 at %.3f\n", comm->rank(), now);
  std::fflush(stderr);
  comm->all_reduce(t);
  return 0;
}

// An operation that never completes, buried under many that do: it must still be reported. Rank 0
// posts a receive that rank 1 never sends (recv #0), then both run 150 all-reduces, more than the
// flight recorder's ring holds, and wait. The watchdog on rank 0 must name recv #0 after the 2 s
// timeout. Rank 1 meanwhile holds a send that completed in MPI but that nobody tests or waits
// for: its watchdog must see it complete (the probe), not take it for a hang.
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "cohort/comm/factory.hpp"

int main(int argc, char** argv) {
  cohort::comm::MpiSession session(&argc, &argv);
  cohort::comm::CommOptions options;
  options.timeout = std::chrono::seconds(2);
  auto comm = cohort::comm::make_communicator(session, cohort::comm::Backend::kMpi, options);
  at::Tensor never = at::zeros({4});
  at::Tensor small = at::ones({4});
  cohort::comm::WorkPtr held;
  if (comm->rank() == 0) {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::fprintf(stderr, "watchdog_buried: rank 0 posts recv #0 at %.3f\n", now);
    std::fflush(stderr);
    held = comm->recv_async(never, 1, /*tag=*/99);  // rank 1 never sends it
    comm->recv(small, 1, /*tag=*/5);
  } else {
    held = comm->send_async(small, 0, /*tag=*/5);  // completes; nobody asks
  }
  at::Tensor t = at::ones({256});
  for (int i = 0; i < 150; ++i) comm->all_reduce(t);
  comm->set_step(7);
  std::this_thread::sleep_for(std::chrono::seconds(60));  // holding `held`, never waiting
  return 0;
}

// The MPI backend: CPU tensors over Cohort's own duplicate of a session communicator (errors
// returned, never aborting silently). Collectives are blocking MPI calls, run on the caller's
// thread (blocking form) or, in issue order, on the Worker thread (asynchronous form). Send and
// receive are MPI_Isend/MPI_Irecv, posted at once and completed by Work::wait/test.
#pragma once

#include <mpi.h>

#include <memory>

#include "../worker.hpp"
#include "cohort/comm/communicator.hpp"

namespace cohort::comm {

class MpiCommunicator final : public Communicator {
 public:
  // Takes ownership of `comm` (freed by the destructor).
  MpiCommunicator(MPI_Comm comm, CommOptions options, std::shared_ptr<Watchdog> watchdog);
  ~MpiCommunicator() override;

  Backend backend() const override { return Backend::kMpi; }

 protected:
  WorkPtr run(const Call& call, std::function<void()> on_done) override;
  void drain() override { worker_->drain(); }
  std::unique_ptr<Communicator> make_split(int color, int key) override;
  std::vector<std::int64_t> gather_fingerprints(const std::array<std::int64_t, 4>& mine) override;
  bool device_ok(const at::Tensor& tensor) const override;
  const char* device_name() const override { return "CPU"; }

 private:
  void execute(const Call& call);
  void reduce_scatter(const Call& call);
  WorkPtr post_p2p(const Call& call, std::function<void()> on_done);

  MPI_Comm comm_;
  std::unique_ptr<Worker> worker_;
};

}  // namespace cohort::comm

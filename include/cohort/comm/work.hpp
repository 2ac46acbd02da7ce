// Work: the handle of one asynchronous communication operation (c10d's Work, simplified).
//
// Protocol: an operation is issued by a Communicator `*_async` call and completes in the
// background. test() says whether it has finished without blocking; wait() blocks until it has
// and rethrows its error if it failed. An operation past its timeout is the watchdog's: it
// reports the operation and aborts the job (exit code 76), since a blocked MPI or NCCL call
// cannot be interrupted. The tensors given to the call must stay alive and untouched until
// wait() returns or test() is true.
#pragma once

#include <memory>

namespace cohort::comm {

class Work {
 public:
  virtual ~Work() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
  // For the watchdog's thread: true once the operation has completed (marking it so), without
  // blocking and safely while another thread uses the Work; false also when it cannot tell now
  // (another thread is waiting on it). Backends whose operations complete on their own (the
  // worker thread's collectives) need not override it.
  virtual bool poll() { return false; }
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace cohort::comm

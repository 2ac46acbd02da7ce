// Work: the handle of one asynchronous communication operation (c10d's Work, simplified).
//
// Protocol: an operation is issued by a Communicator `*_async` call and completes in the
// background. test() says whether it has finished without blocking; wait() blocks until it has,
// rethrows its error if it failed, and enforces the operation's timeout (the watchdog: the
// communicator's OnTimeout decides between aborting the job and throwing WatchdogError). The
// tensors given to the call must stay alive and untouched until wait() returns or test() is true.
#pragma once

#include <memory>

namespace cohort::comm {

class Work {
 public:
  virtual ~Work() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace cohort::comm

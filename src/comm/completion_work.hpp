// CompletionWork: the bookkeeping every backend Work shares. A backend calls completed() once its
// operation has finished (from test() or wait()); that runs the communicator's on_done (the
// flight recorder marks the operation done). A Work dropped without being waited for also runs
// it, from the destructor, so that the watchdog does not take it for a hang: the watchdog only
// watches what is waited for.
#pragma once

#include <functional>
#include <utility>

#include "cohort/comm/work.hpp"

namespace cohort::comm {

class CompletionWork : public Work {
 public:
  ~CompletionWork() override {
    if (!done_ && on_done_) on_done_();
  }

 protected:
  explicit CompletionWork(std::function<void()> on_done) : on_done_(std::move(on_done)) {}
  bool done() const { return done_; }
  void completed() {
    if (done_) return;
    done_ = true;
    if (on_done_) on_done_();
  }

 private:
  std::function<void()> on_done_;
  bool done_ = false;
};

}  // namespace cohort::comm

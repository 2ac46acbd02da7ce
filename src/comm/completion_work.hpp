// CompletionWork: the bookkeeping every backend Work shares. A backend calls completed() once its
// operation has finished (from test() or wait()); that runs the communicator's on_done (the
// flight recorder marks the operation done). A Work dropped without being waited for also runs
// it, from the destructor, so that the watchdog does not take it for a hang: the watchdog only
// watches what is waited for.
//
// PolledWork: a CompletionWork whose completion is tested under one lock that test(), wait() and
// the watchdog's poll() take in turn (MPI forbids two threads on one request; a CUDA event's
// query goes with the Work's bookkeeping). poll() is the watchdog's and defined once here: it
// never waits behind the owner and never throws, since an error is the owner's, told at its next
// test() or wait(). A backend defines test_locked() and takes mutex() in test() and wait().
#pragma once

#include <exception>
#include <functional>
#include <mutex>
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

class PolledWork : public CompletionWork {
 public:
  bool poll() final {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    try {
      return test_locked();
    } catch (const std::exception&) {  // told by the owner's next test() or wait()
      return false;
    }
  }

 protected:
  using CompletionWork::CompletionWork;
  std::mutex& mutex() { return mutex_; }
  // Whether the operation has finished, called with mutex() held; it calls completed() once it has.
  virtual bool test_locked() = 0;

 private:
  std::mutex mutex_;  // test(), wait() and the watchdog's poll() of one operation, one at a time
};

}  // namespace cohort::comm

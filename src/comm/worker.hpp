// Worker: one background thread that runs a communicator's asynchronous operations one at a time,
// in the order they were issued (all ranks issue in the same order, so collectives match). A
// blocking library call on this thread progresses by itself, which is what lets communication
// overlap the caller's computation: MPI's non-blocking collectives made no progress here unless
// MPI was entered (bench/README.md has the measurement).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "cohort/comm/work.hpp"

namespace cohort::comm {

// The Work of one task: completed by whoever runs the task.
class TaskWork : public Work {
 public:
  bool test() override;
  void wait() override;
  bool poll() override { return test(); }
  void complete(std::exception_ptr error);

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

class Worker {
 public:
  Worker();
  ~Worker();  // runs what is queued, then stops
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Queues `task`; its Work completes when it returns or throws. `on_done` runs right after it.
  std::shared_ptr<TaskWork> submit(std::function<void()> task, std::function<void()> on_done);
  // Runs `task` on the calling thread, after everything queued before it.
  std::shared_ptr<TaskWork> run_inline(const std::function<void()>& task,
                                       const std::function<void()>& on_done);
  void drain();

 private:
  struct Item {
    std::function<void()> task;
    std::function<void()> on_done;
    std::shared_ptr<TaskWork> work;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Item> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cohort::comm

#include "worker.hpp"

#include "cohort/comm/device.hpp"

namespace cohort::comm {

bool TaskWork::test() {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void TaskWork::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  // No deadline here: a hung operation is the watchdog's to catch (it aborts the job).
  done_cv_.wait(lock, [this] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

void TaskWork::complete(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  done_cv_.notify_all();
}

namespace {

void run_task(const std::function<void()>& task, const std::function<void()>& on_done,
              TaskWork& work) {
  std::exception_ptr error;
  try {
    task();
  } catch (...) {
    error = std::current_exception();  // handed to whoever waits on the Work
  }
  if (on_done) on_done();
  work.complete(error);
}

}  // namespace

Worker::Worker() : thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<TaskWork> Worker::submit(std::function<void()> task,
                                         std::function<void()> on_done) {
  auto work = std::make_shared<TaskWork>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(task), std::move(on_done), work});
  }
  wake_.notify_one();
  return work;
}

std::shared_ptr<TaskWork> Worker::run_inline(const std::function<void()>& task,
                                             const std::function<void()>& on_done) {
  drain();
  auto work = std::make_shared<TaskWork>();
  run_task(task, on_done, *work);
  return work;
}

void Worker::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void Worker::loop() {
  make_rank_device_current();  // whatever a task touches of CUDA is on the rank's device
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stop_ with nothing left
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    run_task(item.task, item.on_done, *item.work);
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
}

}  // namespace cohort::comm

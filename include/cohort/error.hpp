// The one error hierarchy of Cohort. Every failure that reaches `main` is a cohort::Error, and its
// exit_code() is what `cohort` returns (docs/exit-codes.md).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace cohort {

// Exit codes returned by the `cohort` executable.
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,    // a bug: report it
  kUsage = 2,       // usage, config or environment error
  kInput = 3,       // data or checkpoint input error
  kDiverged = 4,    // training diverged: the loss became NaN or infinite
  kResumable = 75,  // checkpointed and stopped to be resumed
  kWatchdog = 76,   // a collective timed out
  kPeerLost = 77,   // a peer rank or node was lost
  kNodeFault = 78,  // this node's accelerator failed (CUDA, NCCL internal, a GPU lost)
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ExitCode code = ExitCode::kInternal)
      : std::runtime_error(what), code_(code) {}
  ExitCode exit_code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

// Bad command line.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what, ExitCode::kUsage) {}
};

// Bad configuration file or value.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& what) : Error(what, ExitCode::kUsage) {}
};

// The job environment (launcher variables) is malformed or contradicts itself.
class EnvironmentError : public Error {
 public:
  explicit EnvironmentError(const std::string& what) : Error(what, ExitCode::kUsage) {}
};

// A file could not be read or written, or its content is invalid.
class IoError : public Error {
 public:
  explicit IoError(const std::string& what) : Error(what, ExitCode::kInput) {}
};

// Training cannot go on: the loss became NaN or infinite.
class TrainingError : public Error {
 public:
  explicit TrainingError(const std::string& what) : Error(what, ExitCode::kDiverged) {}
};

// A communication library (MPI, NCCL) call failed.
class CommError : public Error {
 public:
  explicit CommError(const std::string& what, ExitCode code = ExitCode::kPeerLost)
      : Error(what, code) {}
};

// The node's accelerator failed: a CUDA error, NCCL's unhandled CUDA error, a GPU lost. A node
// fault, not the application's: the supervisor excludes the node and requeues.
class DeviceError : public Error {
 public:
  explicit DeviceError(const std::string& what) : Error(what, ExitCode::kNodeFault) {}
};

// A collective outlived its timeout (the watchdog).
// A libslurm call failed.
class SlurmError : public Error {
 public:
  explicit SlurmError(const std::string& what) : Error(what, ExitCode::kInternal) {}
};

namespace detail {

template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

}  // namespace detail
}  // namespace cohort

// COHORT_CHECK(condition, ErrorType, message parts...): throws ErrorType(concatenated parts) when
// the condition is false. The parts are only evaluated on failure.
#define COHORT_CHECK(condition, ErrorType, ...)               \
  do {                                                        \
    if (!(condition)) {                                       \
      throw ErrorType(::cohort::detail::concat(__VA_ARGS__)); \
    }                                                         \
  } while (false)

// COHORT_THROW(ErrorType, message parts...): unconditional form.
#define COHORT_THROW(ErrorType, ...) throw ErrorType(::cohort::detail::concat(__VA_ARGS__))

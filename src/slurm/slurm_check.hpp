// COHORT_SLURM_CHECK(call): runs a libslurm call that returns 0 on success and -1 (with
// errno) or an error code otherwise, and throws SlurmError naming the call and Slurm's
// message.
#pragma once

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include <memory>
#include <string>

#include "cohort/error.hpp"

namespace cohort::slurm::detail {

[[noreturn]] void throw_slurm_error(const char* call, int rc);

// libslurm reads slurm.conf (SLURM_CONF or its default) once per process before any call.
void init_library();

// init_library(), then, once per process, the controller's release checked against libslurm's
// RPC window (require_rpc_window, version.cpp): what every call that relies on the controller
// goes through first.
void init_once();
void require_rpc_window();

struct JobInfoFree {
  void operator()(job_info_msg_t* msg) const noexcept { slurm_free_job_info_msg(msg); }
};
using JobInfo = std::unique_ptr<job_info_msg_t, JobInfoFree>;

// The controller's record of job `job_id` (a number); SlurmError when it has none.
JobInfo load_job(const std::string& job_id);

}  // namespace cohort::slurm::detail

#define COHORT_SLURM_CHECK(call)                                           \
  do {                                                                     \
    const int cohort_slurm_rc_ = (call);                                   \
    if (cohort_slurm_rc_ != 0) {                                           \
      ::cohort::slurm::detail::throw_slurm_error(#call, cohort_slurm_rc_); \
    }                                                                      \
  } while (false)

// Which Slurm releases can talk to each other, and the check Cohort makes before it relies on
// libslurm (requeue, node queries, the job's end time).
//
// libslurm speaks the RPC protocol of its own release. Slurm's rule (upgrades.html, "Compatibility
// Window"): a slurmctld accepts clients of its own major release and of the two before it, or the
// three before it from 24.11 on (releases every six months since 24.05); a client newer than the
// controller is not supported. Outside that window a libslurm call fails with a protocol error
// that says nothing of versions, so Cohort asks the controller for its release once per process
// (slurm_load_ctl_conf) before the first other call and, outside the window, stops with one line
// naming both releases (EnvironmentError, exit 2) instead of a silent failure to requeue.
#pragma once

#include <optional>
#include <string>

namespace cohort::slurm {

struct SlurmRelease {
  int year = 0;   // 24 in 24.11.5
  int month = 0;  // 11
  int micro = 0;  // 5
};

// "24.11.5", "24.11.5-1", "slurm 24.11.5" or "24.11"; nullopt when it is none of these.
std::optional<SlurmRelease> parse_release(const std::string& text);
std::string to_string(const SlurmRelease& release);

struct WindowCheck {
  bool compatible = true;
  std::string message;  // one line; empty when compatible and nothing needs saying
};

// The decision, apart from any RPC: may a client of release `library` talk to a slurmctld of
// release `controller`? Unknown releases (a text that is no release, a major release this build
// does not know) are judged compatible, with a message saying the window could not be checked.
WindowCheck check_rpc_window(const std::string& library, const std::string& controller);

// The libslurm this process runs with: the release of the headers it was built with (libslurm's
// soname pins its major release, so the library loaded is of that major release) and the API
// version the loaded library reports (slurm_api_version).
std::string library_release();
std::string library_api_version();

// slurmctld's release (slurm_load_ctl_conf). SlurmError when the controller cannot answer; when it
// refuses libslurm's protocol, EnvironmentError naming libslurm's release and the window.
std::string controller_release();

}  // namespace cohort::slurm

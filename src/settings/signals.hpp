// The signals slurm.signals may name, shared by the config check (at load) and Preemption (which
// installs the handlers).
#pragma once

#include <string>
#include <vector>

namespace cohort::settings {

// The first item of a "USR1,SIGTERM" list that names no signal Cohort handles, or "".
std::string unknown_signal(const std::string& list);
// "USR1,TERM" -> {SIGUSR1, SIGTERM}; the list was checked at load (unknown names are skipped).
std::vector<int> parse_signals(const std::string& list);
// "SIGUSR1"; "signal N" for a number without a name.
std::string signal_name(int signal);

}  // namespace cohort::settings

#include "cohort/slurm/submit.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <regex>
#include <sstream>

#include "cohort/error.hpp"
#include "cohort/io/unique_fd.hpp"

namespace cohort::slurm {
namespace {

// std::regex recurses once per character of the value: bounded first (the longest valid value is
// 64 characters), so a user's value cannot overflow the stack.
void check_value(const std::string& value, const char* pattern, const char* option) {
  constexpr std::size_t kMaxValue = 64;
  COHORT_CHECK(value.size() <= kMaxValue && std::regex_match(value, std::regex(pattern)),
               UsageError, "cohort submit: ", option, " '", value.substr(0, kMaxValue),
               value.size() > kMaxValue ? "...'" : "'", " is not valid (expected ", pattern, ")");
}

// "#SBATCH --name=value" for every option the user gave, validated.
std::vector<std::pair<std::string, std::string>> directives(const SubmitOptions& o) {
  COHORT_CHECK(o.nodes >= 1 && o.tasks_per_node >= 1 && o.cpus_per_task >= 0 &&
                   o.gpus_per_node >= 0 && o.spare_nodes >= 0 && o.nodes <= (1 << 20) &&
                   o.spare_nodes <= (1 << 20),
               UsageError, "cohort submit: --nodes and --tasks-per-node must be at least 1");
  std::vector<std::pair<std::string, std::string>> d = {
      {"--job-name", o.job_name},
      {"--nodes", std::to_string(o.nodes + o.spare_nodes)},
      {"--ntasks-per-node", std::to_string(o.tasks_per_node)}};
  check_value(o.job_name, "[A-Za-z0-9._-]{1,64}", "--job-name");
  if (o.cpus_per_task > 0) d.emplace_back("--cpus-per-task", std::to_string(o.cpus_per_task));
  if (o.gpus_per_node > 0) d.emplace_back("--gpus-per-node", std::to_string(o.gpus_per_node));
  if (!o.time.empty()) {
    check_value(o.time, "([0-9]+-)?[0-9]+(:[0-9]{2}){0,2}", "--time");
    d.emplace_back("--time", o.time);
  }
  if (!o.partition.empty()) {
    check_value(o.partition, "[A-Za-z0-9._-]{1,64}", "--partition");
    d.emplace_back("--partition", o.partition);
  }
  return d;
}

}  // namespace

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (const char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string render_job_script(const std::string& template_text, const SubmitOptions& o) {
  auto wanted = directives(o);
  std::string args = "set -- " + shell_quote(o.config);
  for (const auto& item : o.overrides) args += " --set " + shell_quote(item);
  std::istringstream in(template_text);
  std::vector<std::string> lines;
  std::size_t last_directive = 0;
  bool args_set = false;
  for (std::string line; std::getline(in, line);) {
    for (auto it = wanted.begin(); it != wanted.end(); ++it) {
      if (line.rfind("#SBATCH " + it->first + "=", 0) == 0) {
        line = "#SBATCH " + it->first + "=" + it->second;
        wanted.erase(it);
        break;
      }
    }
    if (line.rfind("#SBATCH ", 0) == 0) last_directive = lines.size() + 1;
    lines.push_back(line);
    if (line == "set -uo pipefail") {
      lines.push_back(args + "  # rendered by cohort submit");
      args_set = true;
    }
  }
  COHORT_CHECK(args_set && last_directive > 0, UsageError,
               "cohort submit: the template has no #SBATCH lines or no 'set -uo pipefail' line");
  std::vector<std::string> added;
  for (const auto& [name, value] : wanted) added.push_back("#SBATCH " + name + "=" + value);
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(last_directive), added.begin(),
               added.end());
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

std::string sbatch(const std::string& script_path) {
  std::array<int, 2> ends{};
  COHORT_CHECK(::pipe(ends.data()) == 0, SlurmError, "cohort submit: pipe() failed");
  UniqueFd read_end(ends[0]), write_end(ends[1]);
  const pid_t child = ::fork();
  COHORT_CHECK(child >= 0, SlurmError, "cohort submit: fork() failed");
  if (child == 0) {  // only async-signal-safe calls until exec
    ::dup2(write_end.get(), STDOUT_FILENO);
    const char* argv[] = {"sbatch", "--parsable", script_path.c_str(), nullptr};
    ::execvp("sbatch", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  write_end.reset();
  std::string reply;
  std::array<char, 256> buffer{};
  for (ssize_t n; (n = ::read(read_end.get(), buffer.data(), buffer.size())) != 0;) {
    if (n > 0) reply.append(buffer.data(), static_cast<std::size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  while (!reply.empty() && (reply.back() == '\n' || reply.back() == ' ')) reply.pop_back();
  COHORT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && !reply.empty(), SlurmError,
               "sbatch --parsable ", script_path, " failed (its message is above)");
  return reply.substr(0, reply.find(';'));  // "id" or "id;cluster"
}

}  // namespace cohort::slurm

// stage: copy a dataset to node-local storage on every node of the allocation and verify it.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "cohort/data/tools.hpp"
#include "cohort/env/environment.hpp"
#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "cohort/io/files.hpp"
#include "cohort/io/input.hpp"
#include "cohort/io/output.hpp"
#include "cohort/io/text.hpp"
#include "cohort/io/unique_fd.hpp"

extern char** environ;

namespace cohort::data {
namespace fs = std::filesystem;
namespace {

// Runs argv (PATH lookup), passing stderr through; returns its stdout. Throws IoError when it
// cannot start or exits non-zero, naming the command.
std::string run_process(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  COHORT_CHECK(::pipe2(pipe_fds, O_CLOEXEC) == 0, IoError, "pipe: ", std::strerror(errno));
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  std::vector<char*> c_argv;
  for (const auto& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  COHORT_CHECK(rc == 0, IoError, "stage: cannot run ", argv[0], ": ", std::strerror(rc));
  write_end.reset();  // the child holds the write end now: EOF once it exits
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(read_end.get(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.append(buffer, static_cast<std::size_t>(got));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string command;
  for (const auto& arg : argv) command += (command.empty() ? "" : " ") + arg;
  COHORT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, IoError, "stage: '", command,
               "' failed (status ", WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")");
  return out;
}

// Through the one way in and the one way out: read from the checked source, written into a
// temporary created exclusively beside `to`, renamed over it (never through a link).
void copy_file(const std::string& from, const std::string& to) {
  const auto in = io::InputFile::open(from, std::numeric_limits<std::int64_t>::max());
  io::TemporaryFile temporary(to);
  const UniqueFd out = temporary.create();
  std::vector<char> buffer(1 << 20);
  for (std::int64_t done = 0; done < in.size();) {
    const auto want = static_cast<std::size_t>(
        std::min<std::int64_t>(static_cast<std::int64_t>(buffer.size()), in.size() - done));
    io::read_at(in.fd(), done, buffer.data(), want, from);
    io::write_fully(out.get(), std::string_view(buffer.data(), want), temporary.path());
    done += static_cast<std::int64_t>(want);
  }
  temporary.commit();  // durable; removes the temporary if it fails
}

std::vector<std::string> srun_per_node(const std::vector<std::string>& command) {
  std::vector<std::string> argv{"srun", "--ntasks-per-node=1", "--kill-on-bad-exit=1"};
  if (const auto nodes = env::Environment::from_process().get("SLURM_JOB_NUM_NODES")) {
    argv.push_back("--nodes=" + *nodes);
    argv.push_back("--ntasks=" + *nodes);
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// Lines "node<TAB>bytes<TAB>checksum<TAB>path" from `cohort data checksum`, checked against the
// source files (whose paths print as they are: stage() refused the others); returns the nodes
// seen.
std::vector<std::string> verify(const std::string& report, const std::vector<StagedFile>& files) {
  std::map<std::string, const StagedFile*> expected;
  for (const auto& f : files) expected[f.destination] = &f;
  std::map<std::string, std::size_t> seen_per_node;
  std::istringstream lines(report);
  // Split on the tabs only: a path may hold spaces (read with >>, "my data/x.h5" broke the check
  // after the files had been copied).
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1), t3 = line.find('\t', t2 + 1);
    COHORT_CHECK(t1 != std::string::npos && t2 != std::string::npos && t3 != std::string::npos,
                 IoError, "stage: malformed checksum report line '", line, "'");
    const std::string node = line.substr(0, t1), sum = line.substr(t2 + 1, t3 - t2 - 1);
    const std::string path = line.substr(t3 + 1);
    std::int64_t bytes = -1;
    std::from_chars(line.data() + t1 + 1, line.data() + t2, bytes);
    const auto it = expected.find(path);
    COHORT_CHECK(it != expected.end(), IoError, "stage: unexpected file in report: ", path);
    COHORT_CHECK(bytes == it->second->bytes && sum == it->second->checksum, IoError,
                 "stage: ", path, " on node ", node, " has ", bytes, " bytes ", sum, ", expected ",
                 it->second->bytes, " bytes ", it->second->checksum);
    ++seen_per_node[node];
  }
  std::vector<std::string> nodes;
  for (const auto& [name, count] : seen_per_node) {
    COHORT_CHECK(count >= files.size(), IoError, "stage: node ", name, " verified ", count, " of ",
                 files.size(), " files");
    nodes.push_back(name);
  }
  COHORT_CHECK(!nodes.empty(), IoError, "stage: no node reported the staged files");
  return nodes;
}

}  // namespace

StageResult stage(const std::string& source, const std::string& dest_dir,
                  const std::string& cohort_exe) {
  const auto start = std::chrono::steady_clock::now();
  const auto sources = shard_paths(source);
  const bool directory = fs::is_directory(source);
  StageResult result;
  const std::string name = fs::path(source).lexically_normal().filename().string();
  result.destination =
      dest_dir + "/" + (name.empty() ? fs::path(source).parent_path().filename().string() : name);
  const std::string target_dir = directory ? result.destination : dest_dir;
  // Scripts read the staged path from stdout (DATA=$(cohort data stage ...)), and the checksum
  // report comes back as text: a path that would not print as it is (not UTF-8, a control
  // character, a tab or a newline) is refused before anything is copied, never printed altered.
  COHORT_CHECK(io::printable(result.destination) == result.destination, UsageError,
               "stage: the staged path '", result.destination,
               "' would not print as it is (bytes that are not UTF-8, or control characters): "
               "stage into a directory, and from a dataset, whose names print");
  for (const auto& file : sources) {
    StagedFile staged;
    staged.source = file;
    staged.destination = target_dir + "/" + fs::path(file).filename().string();
    COHORT_CHECK(io::printable(staged.destination) == staged.destination, UsageError,
                 "stage: the staged file '", staged.destination,
                 "' would not print as it is (bytes that are not UTF-8, or control characters)");
    staged.bytes = io::file_bytes(file);
    staged.checksum = io::file_checksum(file);
    result.files.push_back(staged);
  }
  // Never a file staged over itself or over another input (the node-local place of an sbcast run
  // may not exist here: then only the sources are compared, where it does).
  const bool slurm = env::Environment::from_process().has("SLURM_JOB_ID");
  if (!slurm) io::make_directories(target_dir);
  io::OutputPlan plan;
  std::error_code error;
  const bool here = fs::is_directory(target_dir, error);
  for (const auto& f : result.files) {
    plan.read(f.source, "SOURCE");
    if (here) plan.write(f.destination, "--to");
  }
  plan.check();
  std::vector<std::string> check{cohort_exe, "data", "checksum"};
  for (const auto& f : result.files) check.push_back(f.destination);
  if (slurm) {
    result.method = "sbcast";
    run_process(srun_per_node({"mkdir", "-p", target_dir}));
    for (const auto& f : result.files) run_process({"sbcast", "--force", f.source, f.destination});
    result.nodes = verify(run_process(srun_per_node(check)), result.files);
  } else {
    result.method = "copy";
    for (const auto& f : result.files) copy_file(f.source, f.destination);
    result.nodes = verify(run_process(check), result.files);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

nlohmann::json to_json(const StageResult& result) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : result.files) {
    files.push_back({{"source", f.source},
                     {"destination", f.destination},
                     {"bytes", f.bytes},
                     {"checksum", f.checksum}});
  }
  return {{"method", result.method},
          {"destination", result.destination},
          {"files", files},
          {"nodes", result.nodes},
          {"seconds", result.seconds}};
}

}  // namespace cohort::data

// Fuzz target: the node fault reports a failed run leaves in <train.run_dir>/node_faults/ (files
// "<node>.fault", read by read_fault_reports before `cohort supervise` or `cohort slurm requeue`
// excludes those nodes). The input is a list of entries made in that directory: a kind byte
// (regular file, directory, or symbolic link to a name in the directory), a name length byte, the
// name, a content length (2 bytes, little-endian) and the content (the file's text, or the link's
// target). Reports never throw; each node read is a name Slurm gives (letters, digits, '-', '_',
// '.', not starting with '.'), once, from a regular file <dir>/<node>.fault, with a problem of
// 1 to 4096 bytes and no newline; at most 1024 nodes, one path each.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "cohort/train/supervision.hpp"
#include "fuzz_contract.hpp"

namespace fs = std::filesystem;

namespace {

const std::string& fault_dir() {
  static const std::string dir = fs::temp_directory_path().string() + "/cohort-fuzz-node-faults-" +
                                 std::to_string(::getpid()) + "/node_faults";
  return dir;
}

bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

// The entries the input describes, made in a fresh directory; entries the filesystem refuses
// (a name too long, a second entry by one name) are left out.
void make_entries(const std::uint8_t* data, std::size_t size) {
  std::error_code ignored;
  fs::remove_all(fault_dir(), ignored);
  fs::create_directories(fault_dir());
  std::size_t at = 0;
  for (int entries = 0; entries < 1100 && at + 4 <= size; ++entries) {
    const int kind = data[at] % 3;
    const std::size_t name_bytes = data[at + 1];
    at += 2;
    if (at + name_bytes + 2 > size) break;
    const std::string name(reinterpret_cast<const char*>(data) + at, name_bytes);
    at += name_bytes;
    const std::size_t content_bytes =
        std::min<std::size_t>(data[at] | (std::size_t{data[at + 1]} << 8), size - at - 2);
    at += 2;
    const std::string content(reinterpret_cast<const char*>(data) + at, content_bytes);
    at += content_bytes;
    if (!plain_name(name)) continue;
    const fs::path path = fs::path(fault_dir()) / name;
    if (fs::exists(fs::symlink_status(path, ignored))) continue;
    if (kind == 0) {
      std::ofstream(path, std::ios::binary) << content;
    } else if (kind == 1) {
      fs::create_directory(path, ignored);
    } else if (plain_name(content)) {  // a link inside the directory only
      fs::create_symlink(content, path, ignored);
    }
  }
}

bool slurm_node_name(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name[0] != '.' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
         });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  make_entries(data, size);
  cohort::fuzz::expect_contract([&] {
    std::vector<std::string> paths;
    const auto nodes = cohort::train::read_fault_reports(fault_dir(), paths);
    if (nodes.size() != paths.size() || nodes.size() > 1024) std::abort();
    std::set<std::string> seen;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto& node = nodes[i];
      if (!slurm_node_name(node.name) || !seen.insert(node.name).second) std::abort();
      if (paths[i] != fault_dir() + "/" + node.name + ".fault" || !fs::is_regular_file(paths[i])) {
        std::abort();
      }
      if (node.problem.empty() || node.problem.size() > 4096 ||
          node.problem.find('\n') != std::string::npos) {
        std::abort();
      }
    }
  });
  return 0;
}

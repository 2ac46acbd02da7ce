// check_env_views FILE --world N [--launcher NAME] [--hosts a,b] [--job]
// Reads the `cohort env --json` views of every rank (JSON lines, or one JSON array from
// --all-ranks) and checks that they form one consistent job. Exits 1 naming the first problem.
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using nlohmann::json;

namespace {

std::vector<json> read_views(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const auto first = text.find_first_not_of(" \n\t");
  if (first != std::string::npos && text[first] == '[')
    return json::parse(text).get<std::vector<json>>();
  std::vector<json> views;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    views.push_back(json::parse(line));
  }
  return views;
}

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

void check(const std::vector<json>& views, int world, const std::string& launcher,
           const std::string& hosts_csv) {
  expect(static_cast<int>(views.size()) == world,
         "expected " + std::to_string(world) + " views, got " + std::to_string(views.size()));
  std::set<int> ranks;
  std::map<int, std::set<int>> locals;  // node -> local ranks
  std::map<int, int> local_size;
  const json& first = views.front();
  for (const auto& v : views) {
    const int rank = v.at("rank");
    expect(ranks.insert(rank).second, "rank " + std::to_string(rank) + " appears twice");
    expect(v.at("world_size") == world,
           "rank " + std::to_string(rank) + " says world size " + v.at("world_size").dump());
    if (!launcher.empty())
      expect(v.at("launcher") == launcher,
             "rank " + std::to_string(rank) + " says launcher " + v.at("launcher").dump());
    expect(v.at("launcher") == first.at("launcher"), "ranks disagree on the launcher");
    expect(v.at("hosts") == first.at("hosts"), "ranks disagree on the host list");
    expect(v.at("slurm").is_null() == first.at("slurm").is_null(), "ranks disagree on Slurm");
    if (!v.at("slurm").is_null()) {
      expect(v["slurm"]["job_id"] == first["slurm"]["job_id"], "ranks disagree on the job id");
    }
    const int node = v.at("node_index");
    expect(node >= 0 && node < v.at("node_count").get<int>(),
           "rank " + std::to_string(rank) + " has node index " + std::to_string(node));
    expect(locals[node].insert(v.at("local_rank").get<int>()).second,
           "local rank repeated on node " + std::to_string(node));
    local_size[node] = v.at("local_size");
    if (!v.at("hosts").empty() && !v.at("host").get<std::string>().empty()) {
      expect(v.at("host") == v.at("hosts").at(static_cast<size_t>(node)),
             "rank " + std::to_string(rank) + " host " + v.at("host").dump() + " is not hosts[" +
                 std::to_string(node) + "]");
    }
  }
  expect(*ranks.rbegin() == world - 1, "ranks are not 0.." + std::to_string(world - 1));
  for (const auto& [node, set] : locals) {
    expect(
        static_cast<int>(set.size()) == local_size[node] && *set.rbegin() == local_size[node] - 1,
        "node " + std::to_string(node) + " local ranks do not cover its local size");
  }
  if (!hosts_csv.empty()) {
    std::string joined;
    for (const auto& h : first.at("hosts"))
      joined += (joined.empty() ? "" : ",") + h.get<std::string>();
    expect(joined == hosts_csv, "hosts are " + joined + ", expected " + hosts_csv);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: check_env_views FILE --world N [--launcher NAME] [--hosts a,b]\n";
    return 2;
  }
  int world = 0;
  std::string launcher, hosts;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key == "--world")
      world = std::stoi(argv[i + 1]);
    else if (key == "--launcher")
      launcher = argv[i + 1];
    else if (key == "--hosts")
      hosts = argv[i + 1];
    else {
      std::cerr << "check_env_views: unknown option " << key << "\n";
      return 2;
    }
  }
  try {
    check(read_views(argv[1]), world, launcher, hosts);
  } catch (const std::exception& e) {
    std::cerr << "check_env_views: " << argv[1] << ": " << e.what() << "\n";
    return 1;
  }
  std::cout << "check_env_views: " << world << " consistent views\n";
  return 0;
}

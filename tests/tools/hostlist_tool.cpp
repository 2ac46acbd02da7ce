// hostlist_tool expand LIST | compress HOST...  : Cohort's hostlist functions, for comparing with
// `scontrol show hostnames` / `scontrol show hostlist` in the slurm tests.
#include <iostream>
#include <string>
#include <vector>

#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "expand" && argc == 3) {
      for (const auto& host : cohort::env::expand_hostlist(argv[2])) std::cout << host << "\n";
      return 0;
    }
    if (mode == "compress" && argc >= 3) {
      std::cout << cohort::env::compress_hostlist(std::vector<std::string>(argv + 2, argv + argc))
                << "\n";
      return 0;
    }
  } catch (const cohort::Error& e) {
    std::cerr << "hostlist_tool: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: hostlist_tool expand LIST | compress HOST...\n";
  return 2;
}

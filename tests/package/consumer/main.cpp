#include <cohort/config.hpp>
#include <cohort/env/hostlist.hpp>
#include <cohort/env/topology.hpp>
#include <iostream>

int main() {
  const auto topology =
      cohort::env::detect(cohort::env::Environment({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  std::cout << "cohort " << COHORT_VERSION << " " << cohort::env::to_string(topology.launcher)
            << " " << topology.rank << "/" << topology.world_size << " "
            << cohort::env::expand_hostlist("n[1-2]").size() << "\n";
  return 0;
}

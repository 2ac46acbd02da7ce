#include <boost/test/unit_test.hpp>

#include "cohort/env/hostlist.hpp"
#include "cohort/error.hpp"

using cohort::env::compress_hostlist;
using cohort::env::expand_hostlist;
using cohort::env::expand_tasks_per_node;
using Hosts = std::vector<std::string>;

BOOST_AUTO_TEST_SUITE(env_hostlist)

BOOST_AUTO_TEST_CASE(expands_slurm_forms) {
  BOOST_TEST(expand_hostlist("n[1-3]") == (Hosts{"n1", "n2", "n3"}),
             boost::test_tools::per_element());
  BOOST_TEST(expand_hostlist("n[008-011]") == (Hosts{"n008", "n009", "n010", "n011"}),
             boost::test_tools::per_element());
  BOOST_TEST(expand_hostlist("a,b[001,003],c") == (Hosts{"a", "b001", "b003", "c"}),
             boost::test_tools::per_element());
  BOOST_TEST(expand_hostlist("single") == Hosts{"single"}, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(compress_round_trips) {
  const Hosts hosts{"gpu-a01", "gpu-a02", "gpu-a03", "cpu7"};
  const std::string compressed = compress_hostlist(hosts);
  BOOST_TEST(expand_hostlist(compressed) == hosts, boost::test_tools::per_element());
  BOOST_TEST(compress_hostlist({"n1", "n2", "n3"}) == "n[1-3]");
  BOOST_TEST(compress_hostlist({}) == "");
}

BOOST_AUTO_TEST_CASE(rejects_malformed_lists) {
  for (const char* bad : {"n[1-2", "n]1[", "", ",n1", "n1,", "n [1-2]", "n[[1-2]]"}) {
    BOOST_CHECK_THROW(expand_hostlist(bad, "TEST_VAR"), cohort::EnvironmentError);
  }
}

BOOST_AUTO_TEST_CASE(tasks_per_node_grammar) {
  BOOST_TEST(expand_tasks_per_node("2(x3),1", "V") == (std::vector<int>{2, 2, 2, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(expand_tasks_per_node("4", "V") == std::vector<int>{4},
             boost::test_tools::per_element());
  BOOST_TEST(expand_tasks_per_node("1,3(x2)", "V") == (std::vector<int>{1, 3, 3}),
             boost::test_tools::per_element());
  for (const char* bad : {"", "2(x", "2(x3", "(x3)", "2,,1", "a", "0", "2(x0)", "2,", "-1"}) {
    BOOST_CHECK_THROW(expand_tasks_per_node(bad, "SLURM_TASKS_PER_NODE"), cohort::EnvironmentError);
  }
}

BOOST_AUTO_TEST_SUITE_END()

#include <boost/test/unit_test.hpp>

#include "cohort/ddp/bucket_plan.hpp"

using cohort::ddp::ParamInfo;
using cohort::ddp::plan_buckets;
using Indices = std::vector<std::size_t>;

BOOST_AUTO_TEST_SUITE(ddp_bucket_plan)

BOOST_AUTO_TEST_CASE(reverse_order_with_a_smaller_first_bucket) {
  // Five float params of 100 elements (400 bytes): first cap 400 B, then 800 B.
  std::vector<ParamInfo> params(5, ParamInfo{100, c10::ScalarType::Float, true});
  const auto plan = plan_buckets(params, 800, 400);
  BOOST_TEST_REQUIRE(plan.size() == 3u);
  BOOST_TEST(plan[0].params == (Indices{4}), boost::test_tools::per_element());
  BOOST_TEST(plan[1].params == (Indices{3, 2}), boost::test_tools::per_element());
  BOOST_TEST(plan[2].params == (Indices{1, 0}), boost::test_tools::per_element());
  BOOST_TEST(plan[1].offsets == (std::vector<std::int64_t>{0, 100}),
             boost::test_tools::per_element());
  BOOST_TEST(plan[2].numel == 200);
}

BOOST_AUTO_TEST_CASE(frozen_parameters_are_skipped_and_dtypes_never_mix) {
  std::vector<ParamInfo> params = {{10, c10::ScalarType::Float, true},
                                   {10, c10::ScalarType::Double, true},
                                   {10, c10::ScalarType::Float, false},
                                   {10, c10::ScalarType::Float, true}};
  const auto plan = plan_buckets(params, 1 << 20, 1 << 20);
  BOOST_TEST_REQUIRE(plan.size() == 2u);
  for (const auto& bucket : plan) {
    for (const auto p : bucket.params) {
      BOOST_TEST(p != 2u);
      BOOST_TEST(params[p].dtype == bucket.dtype);
    }
  }
  BOOST_TEST(plan[0].params == (Indices{3, 0}), boost::test_tools::per_element());
  BOOST_TEST(plan[1].params == (Indices{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_parameter_larger_than_the_cap_gets_its_own_bucket) {
  std::vector<ParamInfo> params = {{1000, c10::ScalarType::Float, true},
                                   {1, c10::ScalarType::Float, true}};
  const auto plan = plan_buckets(params, 16, 16);
  BOOST_TEST_REQUIRE(plan.size() == 2u);
  BOOST_TEST(plan[1].numel == 1000);
}

// A parameter marked alone (a tied copy under ZeRO) gets a bucket holding only itself, at its
// place in the reverse order; the others fill buckets around it as before.
BOOST_AUTO_TEST_CASE(a_parameter_marked_alone_gets_a_bucket_of_its_own) {
  std::vector<ParamInfo> params(4, ParamInfo{10, c10::ScalarType::Float, true});
  params[0].alone = true;
  params[2].alone = true;
  const auto plan = plan_buckets(params, 1 << 20, 1 << 20);
  BOOST_TEST_REQUIRE(plan.size() == 3u);
  BOOST_TEST(plan[0].params == (Indices{2}), boost::test_tools::per_element());
  BOOST_TEST(plan[1].params == (Indices{0}), boost::test_tools::per_element());
  BOOST_TEST(plan[2].params == (Indices{3, 1}), boost::test_tools::per_element());
  BOOST_TEST(plan[0].numel == 10);
}

BOOST_AUTO_TEST_CASE(one_huge_bucket) {
  std::vector<ParamInfo> params(7, ParamInfo{33, c10::ScalarType::Float, true});
  const auto plan = plan_buckets(params, 1u << 30, 1u << 30);
  BOOST_TEST_REQUIRE(plan.size() == 1u);
  BOOST_TEST(plan[0].numel == 7 * 33);
}

BOOST_AUTO_TEST_SUITE_END()

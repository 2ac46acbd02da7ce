#define BOOST_TEST_MODULE cohort unit tests
#include <boost/test/unit_test.hpp>

// The key table and the typed sections agree: every key fills a field of its own section, no two
// keys fill one field, and every section struct has exactly as many fields as its section has
// keys, so no field lacks a key. (A key whose field does not exist does not compile: COHORT_KEY.)
#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <utility>

#include "cohort/train/config.hpp"

namespace t = cohort::train;

namespace {

// Converts to any field type: T{AnyField{}, ...} compiles with at most as many as T has fields.
struct AnyField {
  template <typename T>
  operator T() const;  // never defined: only used in unevaluated contexts
};

template <typename T, typename... Args>
auto braces_constructible(int) -> decltype(T{std::declval<Args>()...}, std::true_type{});
template <typename T, typename... Args>
std::false_type braces_constructible(...);

// The number of fields of an aggregate whose fields are not themselves aggregates.
template <typename T, typename... Args>
constexpr std::size_t field_count() {
  if constexpr (decltype(braces_constructible<T, Args..., AnyField>(0))::value) {
    return field_count<T, Args..., AnyField>();
  } else {
    return sizeof...(Args);
  }
}

struct Section {
  const void* base;
  std::size_t size;
  std::size_t fields;
};

template <typename S>
Section section(const S& s) {
  return {&s, sizeof(S), field_count<S>()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(train_config_fields)

BOOST_AUTO_TEST_CASE(the_field_counter_counts) {
  struct Three {
    int a;
    std::string b;
    std::vector<std::int64_t> c;
  };
  BOOST_TEST(field_count<Three>() == 3u);
  BOOST_TEST(field_count<t::DebugConfig>() == 8u);
}

BOOST_AUTO_TEST_CASE(every_key_has_a_field_and_every_field_a_key) {
  const t::TrainConfig c{};
  const std::map<std::string, Section> sections = {
      {"model", section(c.model)},       {"data", section(c.data)},
      {"optim", section(c.optim)},       {"train", section(c.train)},
      {"parallel", section(c.parallel)}, {"checkpoint", section(c.checkpoint)},
      {"monitor", section(c.monitor)},   {"slurm", section(c.slurm)},
      {"debug", section(c.debug)}};
  BOOST_TEST(field_count<t::TrainConfig>() == t::config_sections().size());
  BOOST_TEST(sections.size() == t::config_sections().size());
  std::map<std::string, std::size_t> keys;
  std::set<const void*> fields;
  for (const auto& spec : t::config_table()) {
    const std::string name = std::string(spec.section) + "." + spec.key;
    const auto it = sections.find(spec.section);
    BOOST_TEST_REQUIRE((it != sections.end()), name);
    const auto* field = static_cast<const char*>(spec.ref.field(c));
    const auto* base = static_cast<const char*>(it->second.base);
    BOOST_TEST((field >= base && field < base + it->second.size), name << ": not in its section");
    BOOST_TEST(fields.insert(field).second, name << ": shares a field with another key");
    ++keys[spec.section];
  }
  // model.options is the one field without a key of its own: the selected model's own section,
  // typed from the keys that model declared (model_options.hpp).
  ++keys["model"];
  for (const auto& [name, s] : sections) {
    BOOST_TEST(keys[name] == s.fields,
               "[" << name << "]: " << keys[name] << " keys, " << s.fields << " fields");
  }
}

BOOST_AUTO_TEST_CASE(each_key_sets_its_own_field) {
  // Non-default values for some keys of every type; the typed field shows each.
  const auto config = t::Config::load(
      "",
      {"model.width=17", "optim.eps=0.5", "data.flip=true", "train.run_dir=/x/y",
       "parallel.partition=3,4", "parallel.pipeline_stages=2", "monitor.http_port=8080",
       "slurm.time_margin=11", "debug.slow_ms=5", "checkpoint.keep_every=7", "data.driver=mpio"});
  BOOST_TEST(config.model.width == 17);
  BOOST_TEST(config.optim.eps == 0.5);
  BOOST_TEST(config.data.flip);
  BOOST_TEST(config.train.run_dir == "/x/y");
  BOOST_TEST(config.parallel.partition == (std::vector<std::int64_t>{3, 4}),
             boost::test_tools::per_element());
  BOOST_TEST(config.monitor.http_port == 8080);
  BOOST_TEST(config.slurm.time_margin == 11);
  BOOST_TEST(config.debug.slow_ms == 5);
  BOOST_TEST(config.checkpoint.keep_every == 7);
  BOOST_TEST((config.data.driver == t::IoDriver::kMpio));
  BOOST_TEST(config.checkpoint_dir() == "/x/y/checkpoints");
}

BOOST_AUTO_TEST_SUITE_END()

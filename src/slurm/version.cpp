#include "cohort/slurm/version.hpp"

#include <slurm/slurm_version.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <sstream>
#include <utility>

#include "slurm/slurm_check.hpp"

namespace cohort::slurm {
namespace {

// Major releases in order; their index is what the window counts. From 24.05 on Slurm releases
// every May and November, so later ones are counted by rule.
constexpr std::array<std::pair<int, int>, 11> kMajorReleases = {{{17, 2},
                                                                 {17, 11},
                                                                 {18, 8},
                                                                 {19, 5},
                                                                 {20, 2},
                                                                 {20, 11},
                                                                 {21, 8},
                                                                 {22, 5},
                                                                 {23, 2},
                                                                 {23, 11},
                                                                 {24, 5}}};
constexpr int kFirstSixMonthly = 10;  // the index of 24.05
constexpr int kWiderWindowFrom = 11;  // 24.11: controllers accept three releases back

std::optional<int> ordinal(const SlurmRelease& r) {
  if (r.year >= 24 && !(r.year == 24 && r.month == 5)) {
    if (r.month != 5 && r.month != 11) return std::nullopt;
    return kFirstSixMonthly + (r.year - 24) * 2 + (r.month == 11 ? 1 : 0);
  }
  const auto it =
      std::find(kMajorReleases.begin(), kMajorReleases.end(), std::make_pair(r.year, r.month));
  if (it == kMajorReleases.end()) return std::nullopt;
  return static_cast<int>(it - kMajorReleases.begin());
}

std::string major_text(int index) {
  const int after = index - kFirstSixMonthly;  // counted by rule from 24.05 on
  const auto [year, month] = after < 0
                                 ? kMajorReleases[static_cast<std::size_t>(std::max(index, 0))]
                                 : std::make_pair(24 + after / 2, after % 2 == 0 ? 5 : 11);
  char text[16];
  std::snprintf(text, sizeof text, "%02d.%02d", year, month);
  return text;
}

struct CtlConfFree {
  void operator()(slurm_conf_t* conf) const noexcept { slurm_free_ctl_conf(conf); }
};

}  // namespace

std::optional<SlurmRelease> parse_release(const std::string& text) {
  std::string s = text;
  if (s.rfind("slurm ", 0) == 0) s = s.substr(6);
  SlurmRelease r;
  int consumed = 0;
  const bool three =
      std::sscanf(s.c_str(), "%d.%d.%d%n", &r.year, &r.month, &r.micro, &consumed) == 3;
  if (!three) {
    r = SlurmRelease{};
    consumed = 0;
    if (std::sscanf(s.c_str(), "%d.%d%n", &r.year, &r.month, &consumed) != 2) return std::nullopt;
  }
  // After the numbers: nothing, or a packaging suffix ("-1"); "24.11.x" is no release.
  const char rest = s.c_str()[consumed];
  if (rest != '\0' && rest != '-') return std::nullopt;
  if (r.year < 0 || r.year > 99 || r.month < 1 || r.month > 12 || r.micro < 0) return std::nullopt;
  return r;
}

std::string to_string(const SlurmRelease& r) {
  char text[32];
  std::snprintf(text, sizeof text, "%02d.%02d.%d", r.year, r.month, r.micro);
  return text;
}

WindowCheck check_rpc_window(const std::string& library, const std::string& controller) {
  const auto lib = parse_release(library);
  const auto ctl = parse_release(controller);
  // -1: a text that is no release, or a major release this build does not know.
  const int lib_index = lib ? ordinal(*lib).value_or(-1) : -1;
  const int ctl_index = ctl ? ordinal(*ctl).value_or(-1) : -1;
  std::ostringstream text;
  if (lib_index < 0 || ctl_index < 0) {
    text << "libslurm " << library << " and slurmctld " << controller
         << ": release not known to this Cohort, RPC window not checked";
    return {true, text.str()};
  }
  const int window = ctl_index >= kWiderWindowFrom ? 3 : 2;
  const int behind = ctl_index - lib_index;
  if (behind >= 0 && behind <= window) return {true, ""};
  text << "libslurm " << library << " (linked) cannot talk to slurmctld " << controller
       << ": Slurm " << major_text(ctl_index) << " accepts clients from "
       << major_text(std::max(ctl_index - window, 0)) << " to " << major_text(ctl_index)
       << "; rebuild Cohort against this cluster's libslurm (docs/building.md)";
  return {false, text.str()};
}

std::string library_release() {
  return to_string({static_cast<int>(SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER)),
                    static_cast<int>(SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER)),
                    static_cast<int>(SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER))});
}

std::string library_api_version() {
  const long v = slurm_api_version();
  return std::to_string(SLURM_VERSION_MAJOR(v)) + "." + std::to_string(SLURM_VERSION_MINOR(v)) +
         "." + std::to_string(SLURM_VERSION_MICRO(v));
}

std::string controller_release() {
  detail::init_library();
  slurm_conf_t* raw = nullptr;
  const int rc = slurm_load_ctl_conf(0, &raw);
  const std::unique_ptr<slurm_conf_t, CtlConfFree> conf(raw);
  const int code = rc == 0 ? 0 : errno;
  COHORT_CHECK(code != SLURM_PROTOCOL_VERSION_ERROR, EnvironmentError, "slurmctld refused the RPC ",
               "protocol of libslurm ", library_release(),
               " (linked): the controller is more than ",
               "Slurm's window of 2-3 major releases newer or is older; rebuild Cohort against ",
               "this cluster's libslurm (docs/building.md)");
  if (rc != 0) detail::throw_slurm_error("slurm_load_ctl_conf", rc);
  COHORT_CHECK(conf && conf->version != nullptr, SlurmError,
               "slurm_load_ctl_conf returned no version");
  return conf->version;
}

namespace detail {

void require_rpc_window() {
  const WindowCheck check = check_rpc_window(library_release(), controller_release());
  COHORT_CHECK(check.compatible, EnvironmentError, check.message);  // exit 2: fix the setup
  if (!check.message.empty()) std::fprintf(stderr, "cohort: warning: %s\n", check.message.c_str());
}

}  // namespace detail
}  // namespace cohort::slurm

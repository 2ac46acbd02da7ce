#include "cohort/ckpt/manifest.hpp"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <type_traits>

#include "cohort/error.hpp"
#include "cohort/io/checksum.hpp"
#include "common/checked_math.hpp"
#include "common/json_limits.hpp"

namespace cohort::ckpt {
namespace {

using Json = nlohmann::json;

template <typename T>
T integer(const Json& value, const char* key, const std::string& where) {
  COHORT_CHECK(value.is_number_integer(), IoError, where, ": field '", key,
               "' has the wrong type (", value.type_name(), ", not an integer)");
  std::optional<T> fits;
  if (value.is_number_unsigned()) {
    fits = checked::narrow<T>(value.get<std::uint64_t>());
  } else {
    fits = checked::narrow<T>(value.get<std::int64_t>());
  }
  COHORT_CHECK(fits.has_value(), IoError, where, ": field '", key, "' = ", value.dump(),
               " is out of range");
  return *fits;
}

// Reads field `key` of `object` as T; the error names the origin and the field's path. Integers
// must be JSON integers that fit T exactly: nlohmann would otherwise truncate 1.5 to 1 and narrow
// 2^32 to 0 without a word.
template <typename T>
T field(const Json& object, const char* key, const std::string& where) {
  COHORT_CHECK(object.is_object() && object.contains(key), IoError, where, ": missing field '", key,
               "'");
  const Json& value = object.at(key);
  if constexpr (std::is_integral_v<T>) {
    return integer<T>(value, key, where);
  } else {
    try {
      return value.get<T>();
    } catch (const Json::exception&) {
      COHORT_THROW(IoError, where, ": field '", key, "' has the wrong type (", value.type_name(),
                   ")");
    }
  }
}

// A checksum field, "xxh3-64:<16 lower-case hex digits>", checked at parse: a malformed one names
// its field here rather than reading later as a mismatch.
std::string checksum_field(const Json& object, const char* key, const std::string& where) {
  std::string text = field<std::string>(object, key, where);
  COHORT_CHECK(io::is_checksum(text), IoError, where, ": field '", key,
               "' is not xxh3-64:<16 hex digits>");
  return text;
}

std::vector<std::int64_t> shape_field(const Json& object, const std::string& where) {
  const Json shape = field<Json>(object, "shape", where);
  COHORT_CHECK(shape.is_array() && shape.size() <= kMaxDims, IoError, where,
               ": field 'shape' is not a list of at most ", kMaxDims, " dimensions");
  std::vector<std::int64_t> dims;
  for (const auto& d : shape) {
    dims.push_back(integer<std::int64_t>(d, "shape", where));
    COHORT_CHECK(dims.back() >= 0, IoError, where, ": field 'shape' has a negative dimension");
  }
  return dims;
}

// Slices cover [0, numel) in order, each inside the tensor: every sum is checked, so that no
// slice count wrapped around can describe more elements than the tensor's buffer holds.
void check_cover(const TensorEntry& t, std::int64_t numel, std::size_t shards,
                 const std::string& where) {
  std::int64_t next = 0;
  for (const auto& s : t.slices) {
    COHORT_CHECK(s.shard >= 0 && static_cast<std::size_t>(s.shard) < shards, IoError, where,
                 ": a slice names shard ", s.shard, " of ", shards);
    COHORT_CHECK(s.offset == next && s.count > 0 && s.count <= numel - next, IoError, where,
                 ": slices must cover the tensor's ", numel,
                 " elements in order without gaps or overlaps (slice at ", s.offset, " of ",
                 s.count, " after ", next, ")");
    next += s.count;
  }
  COHORT_CHECK(next == numel, IoError, where, ": slices cover ", next, " of ", numel, " elements");
}

TensorEntry parse_tensor(const Json& j, std::size_t shards, const std::string& where) {
  TensorEntry t;
  t.name = field<std::string>(j, "name", where);
  const std::string at = where + ": tensor '" + t.name + "'";
  t.dtype = field<std::string>(j, "dtype", at);
  t.shape = shape_field(j, at);
  const auto numel = checked::product(t.shape, kMaxTensorElements);
  COHORT_CHECK(numel.has_value(), IoError, at, ": shape ", Json(t.shape).dump(), " has more than ",
               kMaxTensorElements, " elements");
  const Json slices = field<Json>(j, "slices", at);
  COHORT_CHECK(slices.is_array(), IoError, at, ": field 'slices' is not a list");
  for (const auto& s : slices) {
    t.slices.push_back({field<int>(s, "shard", at), field<std::int64_t>(s, "offset", at),
                        field<std::int64_t>(s, "count", at), checksum_field(s, "checksum", at),
                        s.is_object() && s.contains("at") ? field<std::int64_t>(s, "at", at) : -1});
    COHORT_CHECK(t.slices.back().at >= -1, IoError, at, ": field 'at' is negative");
  }
  check_cover(t, *numel, shards, at);
  return t;
}

}  // namespace

std::int64_t TensorEntry::numel() const {
  // Manifest::parse() bounded the product; an entry built in code is the caller's to keep valid.
  return checked::product(shape).value_or(-1);
}

std::string step_dir_name(std::int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return name;
}

bool is_checkpoint_directory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(fs::symlink_status(path, error))) return false;
  if (fs::exists(fs::symlink_status(path + "/manifest.json", error))) return true;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("shard-", 0) == 0 && name.find("-of-") != std::string::npos && name.size() > 3 &&
        name.compare(name.size() - 3, 3, ".h5") == 0) {
      return true;
    }
  }
  return false;
}

std::optional<std::int64_t> parse_step_dir_name(const std::string& name) {
  constexpr std::string_view kPrefix = "step-";
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) {
    return std::nullopt;
  }
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size();
  std::int64_t step = 0;
  const auto [end, error] = std::from_chars(first, last, step);  // digits only, no sign or space
  if (error != std::errc() || end != last || step < 0) return std::nullopt;
  // The round trip refuses what step_dir_name() never writes (too few or extra leading zeros).
  if (step_dir_name(step) != name) return std::nullopt;
  return step;
}

bool is_partial_save_name(const std::string& name) {
  const auto tag_ok = [](std::string_view tag) {
    return !tag.empty() && tag.find_first_not_of("0123456789-") == std::string_view::npos;
  };
  constexpr std::string_view kLatest = "latest.tmp-";
  if (name.compare(0, kLatest.size(), kLatest) == 0) {
    return tag_ok(std::string_view(name).substr(kLatest.size()));
  }
  const auto dot = name.find(".tmp-");
  return dot != std::string::npos && parse_step_dir_name(name.substr(0, dot)) &&
         tag_ok(std::string_view(name).substr(dot + 5));
}

bool is_contained_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  std::stringstream parts(path);
  std::string part;
  int depth = 0;
  while (std::getline(parts, part, '/')) {
    if (part == "..") {
      if (--depth < 0) return false;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
  }
  return depth > 0;
}

std::string Manifest::to_json() const {
  Json shards_json = Json::array();
  for (const auto& s : shards) {
    Json shard = {{"file", s.file}, {"rank", s.rank}, {"bytes", s.bytes}};
    if (!s.metadata_checksum.empty()) shard["metadata_checksum"] = s.metadata_checksum;
    shards_json.push_back(std::move(shard));
  }
  Json tensors_json = Json::array();
  for (const auto& t : tensors) {
    Json slices = Json::array();
    for (const auto& s : t.slices) {
      Json slice = {
          {"shard", s.shard}, {"offset", s.offset}, {"count", s.count}, {"checksum", s.checksum}};
      if (s.at >= 0) slice["at"] = s.at;
      slices.push_back(std::move(slice));
    }
    tensors_json.push_back(
        {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"slices", slices}});
  }
  const Json j = {{"format", "cohort-checkpoint"},
                  {"format_version", format_version},
                  {"step", step},
                  {"epoch", epoch},
                  {"samples_seen", samples_seen},
                  {"world_size", world_size},
                  {"nodes", nodes},
                  {"config_hash", config_hash},
                  {"cohort_version", cohort_version},
                  {"created", created},
                  {"shards", shards_json},
                  {"tensors", tensors_json}};
  return j.dump(1) + "\n";
}

Manifest Manifest::parse(const std::string& text, const std::string& origin) {
  COHORT_CHECK(json_limits::within_depth(text), IoError, origin, ": JSON nested deeper than ",
               json_limits::kMaxDepth, " levels");
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    COHORT_THROW(IoError, origin, ": not valid JSON (", e.what(), ")");
  }
  COHORT_CHECK(j.is_object() && j.contains("format") && j["format"].is_string() &&
                   j["format"].get<std::string>() == "cohort-checkpoint",
               IoError, origin, ": not a Cohort checkpoint manifest (field 'format')");
  Manifest m;
  m.format_version = field<int>(j, "format_version", origin);
  COHORT_CHECK(m.format_version == kManifestVersion, IoError, origin, ": format_version ",
               m.format_version, " is not supported (this Cohort reads ", kManifestVersion, ")");
  m.step = field<std::int64_t>(j, "step", origin);
  m.epoch = field<std::int64_t>(j, "epoch", origin);
  m.samples_seen = field<std::int64_t>(j, "samples_seen", origin);
  m.world_size = field<int>(j, "world_size", origin);
  m.nodes = field<int>(j, "nodes", origin);
  m.config_hash = field<std::string>(j, "config_hash", origin);
  m.cohort_version = field<std::string>(j, "cohort_version", origin);
  m.created = field<std::string>(j, "created", origin);
  COHORT_CHECK(
      m.world_size >= 1 && m.nodes >= 1 && m.step >= 0 && m.epoch >= 0 && m.samples_seen >= 0,
      IoError, origin, ": world_size, nodes, step, epoch or samples_seen out of range");
  const Json shards = field<Json>(j, "shards", origin);
  const Json tensors = field<Json>(j, "tensors", origin);
  COHORT_CHECK(shards.is_array() && tensors.is_array(), IoError, origin,
               ": fields 'shards' and 'tensors' must be lists");
  for (const auto& s : shards) {
    ShardEntry e{field<std::string>(s, "file", origin), field<int>(s, "rank", origin),
                 field<std::int64_t>(s, "bytes", origin),
                 s.contains("metadata_checksum") ? checksum_field(s, "metadata_checksum", origin)
                                                 : std::string()};
    COHORT_CHECK(e.rank >= 0 && e.rank < m.world_size && e.bytes >= 0, IoError, origin, ": shard '",
                 e.file, "' has rank ", e.rank, " (world ", m.world_size, ") or bytes ", e.bytes,
                 " out of range");
    COHORT_CHECK(is_contained_path(e.file), IoError, origin, ": shard path '", e.file,
                 "' is absolute or leaves the checkpoint directory");
    m.shards.push_back(std::move(e));
  }
  for (const auto& t : tensors) {
    m.tensors.push_back(parse_tensor(t, m.shards.size(), origin));
  }
  return m;
}

const TensorEntry* Manifest::find(const std::string& name) const {
  for (const auto& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace cohort::ckpt

#include "cohort/ckpt/manifest.hpp"

#include <nlohmann/json.hpp>
#include <sstream>

#include "cohort/error.hpp"

namespace cohort::ckpt {
namespace {

using Json = nlohmann::json;

// Reads field `key` of `object` as T; the error names the origin and the field's path.
template <typename T>
T field(const Json& object, const char* key, const std::string& where) {
  COHORT_CHECK(object.is_object() && object.contains(key), IoError, where, ": missing field '", key,
               "'");
  try {
    return object.at(key).get<T>();
  } catch (const Json::exception&) {
    COHORT_THROW(IoError, where, ": field '", key, "' has the wrong type (",
                 object.at(key).type_name(), ")");
  }
}

void check_cover(const TensorEntry& t, std::size_t shards, const std::string& where) {
  std::int64_t next = 0;
  for (const auto& s : t.slices) {
    COHORT_CHECK(s.shard >= 0 && static_cast<std::size_t>(s.shard) < shards, IoError, where,
                 ": a slice names shard ", s.shard, " of ", shards);
    COHORT_CHECK(s.offset == next && s.count > 0, IoError, where,
                 ": slices must cover the tensor in order without gaps or overlaps (slice at ",
                 s.offset, " after ", next, ")");
    next = s.offset + s.count;
  }
  COHORT_CHECK(next == t.numel(), IoError, where, ": slices cover ", next, " of ", t.numel(),
               " elements");
}

TensorEntry parse_tensor(const Json& j, std::size_t shards, const std::string& where) {
  TensorEntry t;
  t.name = field<std::string>(j, "name", where);
  const std::string at = where + ": tensor '" + t.name + "'";
  t.dtype = field<std::string>(j, "dtype", at);
  t.shape = field<std::vector<std::int64_t>>(j, "shape", at);
  for (const auto d : t.shape) COHORT_CHECK(d >= 0, IoError, at, ": negative dimension");
  const Json slices = field<Json>(j, "slices", at);
  COHORT_CHECK(slices.is_array(), IoError, at, ": field 'slices' is not a list");
  for (const auto& s : slices) {
    t.slices.push_back({field<int>(s, "shard", at), field<std::int64_t>(s, "offset", at),
                        field<std::int64_t>(s, "count", at),
                        field<std::string>(s, "checksum", at)});
  }
  check_cover(t, shards, at);
  return t;
}

}  // namespace

std::int64_t TensorEntry::numel() const {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
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
    shards_json.push_back({{"file", s.file}, {"rank", s.rank}, {"bytes", s.bytes}});
  }
  Json tensors_json = Json::array();
  for (const auto& t : tensors) {
    Json slices = Json::array();
    for (const auto& s : t.slices) {
      slices.push_back(
          {{"shard", s.shard}, {"offset", s.offset}, {"count", s.count}, {"checksum", s.checksum}});
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
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    COHORT_THROW(IoError, origin, ": not valid JSON (", e.what(), ")");
  }
  COHORT_CHECK(j.is_object() && j.value("format", "") == "cohort-checkpoint", IoError, origin,
               ": not a Cohort checkpoint manifest (field 'format')");
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
  COHORT_CHECK(m.world_size >= 1 && m.step >= 0, IoError, origin,
               ": world_size or step out of range");
  for (const auto& s : field<Json>(j, "shards", origin)) {
    ShardEntry e{field<std::string>(s, "file", origin), field<int>(s, "rank", origin),
                 field<std::int64_t>(s, "bytes", origin)};
    COHORT_CHECK(is_contained_path(e.file), IoError, origin, ": shard path '", e.file,
                 "' is absolute or leaves the checkpoint directory");
    m.shards.push_back(std::move(e));
  }
  for (const auto& t : field<Json>(j, "tensors", origin)) {
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

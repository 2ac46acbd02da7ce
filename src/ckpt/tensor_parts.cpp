#include "cohort/ckpt/tensor_parts.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros.h>

#include <cstdlib>
#include <tuple>
#include <vector>

#include "ckpt/files.hpp"
#include "cohort/ckpt/shard_file.hpp"
#include "cohort/error.hpp"

namespace cohort::ckpt {
namespace {

constexpr const char* kLayout = "layout.";
constexpr int kMaxTensorSize = 1 << 16;  // as parallel.tensor's range

std::string part_suffix(int rank, int size) {
  return ".tp" + std::to_string(rank) + "of" + std::to_string(size);
}

// "<digits>of<digits>" at `at` in `text`: (r, t, the position after), or nothing.
std::optional<std::tuple<int, int, std::size_t>> parse_rank_of(const std::string& text,
                                                               std::size_t at) {
  const auto digits = [&](std::size_t from, long& value) {
    std::size_t end = from;
    while (end < text.size() && end - from < 6 && text[end] >= '0' && text[end] <= '9') ++end;
    if (end == from) return std::string::npos;
    value = std::strtol(text.c_str() + from, nullptr, 10);
    return end;
  };
  long r = 0, t = 0;
  const std::size_t after_r = digits(at, r);
  if (after_r == std::string::npos || text.compare(after_r, 2, "of") != 0) return std::nullopt;
  const std::size_t after_t = digits(after_r + 2, t);
  if (after_t == std::string::npos || t < 1 || t > kMaxTensorSize || r >= t) return std::nullopt;
  return std::make_tuple(static_cast<int>(r), static_cast<int>(t), after_t);
}

at::Tensor read_entry(CheckpointReader& reader, const std::string& name, bool verify) {
  const TensorEntry* entry = reader.manifest().find(name);
  COHORT_CHECK(entry != nullptr, IoError, reader.path(), "/manifest.json: no tensor '", name,
               "' (a tensor-parallel part)");
  at::Tensor t = at::empty(entry->shape, at::TensorOptions().dtype(scalar_type_of(entry->dtype)));
  reader.read(*entry, t.data_ptr(), verify);
  return t;
}

// The (kind, param, tail) of a whole tensor's name, for a split param of the checkpoint.
std::optional<std::pair<std::string, std::string>> split_of(const std::string& name,
                                                            const std::map<std::string, int>& split,
                                                            std::string& kind) {
  for (const char* k : {"model.", "optim."}) {
    if (name.rfind(k, 0) != 0) continue;
    const std::string rest = name.substr(std::string(k).size());
    for (const auto& entry : split) {
      const std::string& param = entry.first;
      if (rest.rfind(param, 0) != 0) continue;
      const std::string tail = rest.substr(param.size());
      if (!tail.empty() && (tail[0] != '.' || tail.find(".tp") == 0)) continue;
      kind = k;
      return std::make_pair(param, tail);
    }
  }
  return std::nullopt;
}

// The layouts of a split parameter's parts (small, read first): they must agree on the dimension
// and its length, and their indices must add up to that length, before anything of the whole's
// size is allocated.
struct Layouts {
  std::int64_t dim = -1, length = -1;
  std::vector<at::Tensor> kept;  // per part
};

Layouts read_layouts(CheckpointReader& reader, const std::string& param, int size,
                     const std::string& where, bool verify) {
  Layouts out;
  std::int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    const at::Tensor layout = read_entry(reader, kLayout + param + part_suffix(r, size), verify);
    COHORT_CHECK(layout.scalar_type() == at::kLong && layout.dim() == 1 && layout.numel() >= 2,
                 IoError, where, ": layout of part ", r, " is not [dim, whole, indices...]");
    const auto* l = layout.data_ptr<std::int64_t>();
    COHORT_CHECK(r == 0 || (l[0] == out.dim && l[1] == out.length), IoError, where,
                 ": layout of part ", r, " says dimension ", l[0], " of ", l[1], ", part 0 ",
                 out.dim, " of ", out.length);
    out.dim = l[0];
    out.length = l[1];
    out.kept.push_back(layout.narrow(0, 2, layout.numel() - 2));
    total += out.kept.back().numel();
  }
  COHORT_CHECK(out.dim >= 0 && out.length == total, IoError, where, ": its parts' layouts keep ",
               total, " slices of a dimension of ", out.length);
  return out;
}

}  // namespace

std::map<std::string, int> tensor_split_params(const Manifest& manifest) {
  std::map<std::string, int> split;
  for (const auto& t : manifest.tensors) {
    if (!is_layout_entry(t.name)) continue;
    const std::size_t tp = t.name.rfind(".tp");
    const auto parsed = parse_rank_of(t.name, tp + 3);
    if (!parsed || std::get<2>(*parsed) != t.name.size()) continue;
    split[t.name.substr(std::string(kLayout).size(), tp - std::string(kLayout).size())] =
        std::get<1>(*parsed);
  }
  return split;
}

bool is_layout_entry(const std::string& stored) { return stored.rfind(kLayout, 0) == 0; }

std::optional<std::string> joined_name(const std::string& stored,
                                       const std::map<std::string, int>& split) {
  for (const char* kind : {"model.", "optim."}) {
    if (stored.rfind(kind, 0) != 0) continue;
    for (const auto& [param, size] : split) {
      const std::string head = std::string(kind) + param + ".tp";
      if (stored.rfind(head, 0) != 0) continue;
      const auto parsed = parse_rank_of(stored, head.size());
      if (!parsed || std::get<1>(*parsed) != size) continue;
      return std::string(kind) + param + stored.substr(std::get<2>(*parsed));
    }
  }
  return std::nullopt;
}

std::optional<at::Tensor> read_joined(CheckpointReader& reader, const std::string& name,
                                      bool verify) {
  const auto split = tensor_split_params(reader.manifest());
  std::string kind;
  const auto found = split_of(name, split, kind);
  if (!found) return std::nullopt;
  const auto& [param, tail] = *found;
  const int size = split.at(param);
  const std::string where = reader.path() + "/manifest.json: tensor '" + name + "'";
  if (tail == ".step") {  // AdamW's step count: the same on every part
    return read_entry(reader, kind + param + part_suffix(0, size) + tail, verify);
  }
  const Layouts layouts = read_layouts(reader, param, size, where, verify);
  const std::int64_t dim = layouts.dim, length = layouts.length;
  const std::vector<at::Tensor>& kept = layouts.kept;
  at::Tensor whole;
  at::Tensor covered = at::zeros({length}, at::kLong);
  for (int r = 0; r < size; ++r) {
    const at::Tensor part = read_entry(reader, kind + param + part_suffix(r, size) + tail, verify);
    const at::Tensor& k = kept[static_cast<std::size_t>(r)];
    COHORT_CHECK(dim < part.dim() && part.size(dim) == k.numel() &&
                     (k.numel() == 0 ||
                      (k.min().item<std::int64_t>() >= 0 && k.max().item<std::int64_t>() < length)),
                 IoError, where, ": part ", r, " does not match its layout");
    if (r == 0) {
      auto shape = part.sizes().vec();
      shape[static_cast<std::size_t>(dim)] = length;
      whole = at::zeros(shape, part.options());
    }
    auto expected = whole.sizes().vec();
    expected[static_cast<std::size_t>(dim)] = k.numel();
    COHORT_CHECK(part.sizes().vec() == expected && part.scalar_type() == whole.scalar_type(),
                 IoError, where, ": part ", r, " differs from part 0 in dtype or shape");
    whole.index_copy_(dim, k, part);
    covered.index_add_(0, k, at::ones_like(k));
  }
  COHORT_CHECK(covered.eq(1).all().item<bool>(), IoError, where,
               ": its parts do not cover the whole tensor exactly once");
  return whole;
}

}  // namespace cohort::ckpt

// ShardPlan: who writes which part of which tensor in a sharded checkpoint.
//
// A slice is a flat range [offset, offset + count) of a tensor's row-major elements. Under pure
// data parallelism every rank holds every tensor, so balanced() splits the concatenation of all
// tensors (in the given order) into `world` contiguous parts of (nearly) equal bytes, cut at
// element boundaries: each rank writes a disjoint part and the ranks together write one model
// copy, in parallel. A tensor may be cut across ranks; a rank's part may span several tensors.
// among_holders() does the same within each group of ranks that hold the same tensors.
// overlaps() is the reverse, used by resharding: which stored slices cover a wanted range.
// among_holdings() is the general case: some tensors held in parts by different ranks.
// Pure: no torch, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cohort::ckpt {

struct TensorSpec {
  std::string name;
  std::string dtype;  // "float32", "int64", ... (as stored)
  std::vector<std::int64_t> shape;
  std::int64_t element_bytes = 4;
  std::int64_t numel() const;
};

// What one rank holds of a tensor: the flat range [offset, offset + count).
struct Holding {
  int rank = 0;
  std::int64_t offset = 0;
  std::int64_t count = 0;
};

struct Slice {
  std::size_t tensor = 0;   // index into the plan's tensors
  int rank = 0;             // who writes it
  std::int64_t offset = 0;  // first element, in the tensor's flat row-major order
  std::int64_t count = 0;   // elements
};

class ShardPlan {
 public:
  // Throws ConfigError for world < 1, a negative dimension or element size < 1, duplicate names.
  static ShardPlan balanced(std::vector<TensorSpec> tensors, int world);
  // Under model parallelism a tensor is held by some ranks only (one pipeline stage's or tensor
  // part's data-parallel replicas): `holders[i]` lists the ranks holding tensors[i], and each
  // set of tensors with the same holders is balanced among those ranks alone. Throws ConfigError
  // as balanced() does, and for a tensor without holders or a holder outside the world.
  static ShardPlan among_holders(std::vector<TensorSpec> tensors,
                                 const std::vector<std::vector<int>>& holders, int world);

  // The general case: `holdings[i]` says which ranks hold which ranges of tensors[i]. Tensors
  // that every holder holds whole are balanced among their holders as among_holders() does; a
  // tensor held in parts (ZeRO's optimizer state) is cut where any holding starts or ends, and
  // each piece is written by the first rank that holds it. Throws ConfigError as among_holders()
  // does, for a range outside its tensor, and for elements that no rank holds.
  static ShardPlan among_holdings(std::vector<TensorSpec> tensors,
                                  const std::vector<std::vector<Holding>>& holdings, int world);

  int world() const { return world_; }
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  const std::vector<Slice>& slices() const { return slices_; }  // by tensor, then offset
  std::vector<Slice> slices_of(int rank) const;
  std::int64_t bytes_of(int rank) const;

 private:
  int world_ = 1;
  std::vector<TensorSpec> tensors_;
  std::vector<Slice> slices_;
};

// The part of stored slice `s` inside [offset, offset + count): where it starts in the slice and
// in the wanted range, and how many elements. Empty when they do not meet.
struct Overlap {
  std::size_t slice = 0;  // index into the stored slices given
  std::int64_t from_slice = 0;
  std::int64_t into_range = 0;
  std::int64_t count = 0;
};
std::vector<Overlap> overlaps(const std::vector<Slice>& stored, std::size_t tensor,
                              std::int64_t offset, std::int64_t count);

}  // namespace cohort::ckpt

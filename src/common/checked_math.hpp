// Overflow-checked integer arithmetic, for every place where numbers from outside (a manifest, a
// dataset's attributes, an importer's header, the job environment) meet sizes and offsets.
// Each function returns std::nullopt instead of wrapping, so the caller names the file and field
// in its own error; `product` also refuses negative factors, which no size may have.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace cohort::checked {

inline std::optional<std::int64_t> add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

inline std::optional<std::int64_t> mul(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// The product of non-negative factors (a shape's element count), or nullopt when a factor is
// negative or the product exceeds `limit`.
inline std::optional<std::int64_t> product(const std::vector<std::int64_t>& factors,
                                           std::int64_t limit = INT64_MAX) {
  std::int64_t n = 1;
  for (const auto f : factors) {
    if (f < 0) return std::nullopt;
    const auto next = mul(n, f);
    if (!next || *next > limit) return std::nullopt;
    n = *next;
  }
  return n;
}

// `value` narrowed to `To` when it fits, else nullopt (a shard index of 2^32 must not become 0).
template <typename To, typename From>
std::optional<To> narrow(From value) {
  const To to = static_cast<To>(value);
  if (static_cast<From>(to) != value || ((to < To{}) != (value < From{}))) return std::nullopt;
  return to;
}

}  // namespace cohort::checked

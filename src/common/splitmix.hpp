// SplitMix64 (Steele, Lea, Flood 2014): one 64-bit value mixed into another, the seeded, portable
// randomness behind augmentation, length bucketing and user transforms' per-sample seeds (the
// formulas docs/data.md states, which tests repeat in Python).
#pragma once

#include <cstdint>

namespace cohort {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace cohort

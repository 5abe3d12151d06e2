// The exploration schedule: whether call k of a communicator explores, and which arm, as a pure
// function of (commId, key, k, table version). Every rank computes the same draw, so no message is needed.
#pragma once

#include <cstdint>

namespace dynamiccl::learner {

// splitmix64's finaliser: a cheap bijective mixer whose output bits are all well distributed.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The draw for call k; low 32 bits pick explore/exploit (compared with cumulative thresholds).
constexpr uint64_t scheduleDraw(uint64_t commId, uint32_t key, uint64_t callIndex, uint64_t tableVersion) {
  return mix64(mix64(mix64(commId ^ (uint64_t{key} << 48)) ^ callIndex) ^ tableVersion);
}

}  // namespace dynamiccl::learner

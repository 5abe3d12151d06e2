// The space one key is searched over: (algo, proto) categorical x channels x chunk ordinal,
// restricted to what the backend can run. Points are indices so TPE can model each dimension.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "offline/tune/config.h"
#include "abi/abi.h"

namespace dynamiccl::tune {

struct SpaceDimensions {
  std::vector<std::pair<Algo, Proto>> algoProtos;
  std::vector<int> channels;     // ordinal; 0 = NCCL's count
  std::vector<uint64_t> chunks;  // ordinal; 0 = NCCL's chunk
};
// Every NCCL algorithm x protocol (availability is the backend's call), channels 0,1,2,4,...,32,
// chunks 0, 64K .. 2M.
SpaceDimensions defaultDimensions();

// NCCL's channel rule for the release targeted: from 2.31 a tuner's channel count only lowers
// NCCL's own (abi::channelsRun), so a count above it runs as NCCL's own and is not proposed.
// ncclChannels: NCCL's count for c at the key; nullopt (unknown) keeps c.
bool channelsProposable(const Config& c, abi::PickRule rule, std::optional<int> ncclChannels);

struct SpacePoint {
  int algoProto = 0, channel = 0, chunk = 0;
  auto operator<=>(const SpacePoint&) const = default;
};

class SearchSpace {
 public:
  // Keeps the points `available` accepts (the default config is never part of the space).
  SearchSpace(SpaceDimensions dims, const std::function<bool(const Config&)>& available);

  const SpaceDimensions& dimensions() const { return dims_; }
  int size() const { return static_cast<int>(points_.size()); }
  const SpacePoint& point(int i) const { return points_[i]; }
  Config config(int i) const { return configOf(points_[i]); }
  Config configOf(const SpacePoint& p) const;
  // Index of a configuration in the space, -1 when absent.
  int indexOf(const Config& c) const;
  int indexOf(const SpacePoint& p) const;
  int dimensionSize(int d) const;  // 0: algoProto, 1: channel, 2: chunk

 private:
  SpaceDimensions dims_;
  std::vector<SpacePoint> points_;
  std::vector<int> denseIndex_;  // product index -> point index or -1
};

}  // namespace dynamiccl::tune

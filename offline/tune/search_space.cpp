#include "offline/tune/search_space.h"

#include <algorithm>

namespace dynamiccl::tune {

SpaceDimensions defaultDimensions() {
  SpaceDimensions d;
  for (Algo a : {Algo::Tree, Algo::Ring, Algo::CollNetDirect, Algo::CollNetChain, Algo::Nvls, Algo::NvlsTree, Algo::Pat})
    for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple}) d.algoProtos.emplace_back(a, p);
  d.channels = {0, 1, 2, 4, 8, 16, 32};
  d.chunks = {0, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20};
  return d;
}

bool channelsProposable(const Config& c, abi::PickRule rule, std::optional<int> ncclChannels) {
  return !abi::channelsAreCap(rule) || c.nChannels <= 0 || !ncclChannels || c.nChannels <= *ncclChannels;
}

SearchSpace::SearchSpace(SpaceDimensions dims, const std::function<bool(const Config&)>& available)
    : dims_(std::move(dims)) {
  const int na = dimensionSize(0), nc = dimensionSize(1), nk = dimensionSize(2);
  denseIndex_.assign(static_cast<size_t>(na) * nc * nk, -1);
  for (int a = 0; a < na; ++a)
    for (int c = 0; c < nc; ++c)
      for (int k = 0; k < nk; ++k) {
        const SpacePoint p{a, c, k};
        const Config config = configOf(p);
        // A chunk NCCL would clamp, or overrun its buffer with, is no point of the space.
        if (config.chunkBytes > abi::maxTunerChunkBytes(static_cast<int>(config.algo), static_cast<int>(config.proto)))
          continue;
        if (!available(config)) continue;
        denseIndex_[(static_cast<size_t>(a) * nc + c) * nk + k] = static_cast<int>(points_.size());
        points_.push_back(p);
      }
}

int SearchSpace::dimensionSize(int d) const {
  return d == 0 ? static_cast<int>(dims_.algoProtos.size())
                : d == 1 ? static_cast<int>(dims_.channels.size()) : static_cast<int>(dims_.chunks.size());
}

Config SearchSpace::configOf(const SpacePoint& p) const {
  return Config{dims_.algoProtos[p.algoProto].first, dims_.algoProtos[p.algoProto].second, dims_.channels[p.channel],
                dims_.chunks[p.chunk]};
}

int SearchSpace::indexOf(const SpacePoint& p) const {
  const int nc = dimensionSize(1), nk = dimensionSize(2);
  if (p.algoProto < 0 || p.algoProto >= dimensionSize(0) || p.channel < 0 || p.channel >= nc || p.chunk < 0 ||
      p.chunk >= nk)
    return -1;
  return denseIndex_[(static_cast<size_t>(p.algoProto) * nc + p.channel) * nk + p.chunk];
}

int SearchSpace::indexOf(const Config& c) const {
  const auto ap = std::find(dims_.algoProtos.begin(), dims_.algoProtos.end(), std::make_pair(c.algo, c.proto));
  const auto ch = std::find(dims_.channels.begin(), dims_.channels.end(), c.nChannels);
  const auto ck = std::find(dims_.chunks.begin(), dims_.chunks.end(), c.chunkBytes);
  if (ap == dims_.algoProtos.end() || ch == dims_.channels.end() || ck == dims_.chunks.end()) return -1;
  return indexOf(SpacePoint{static_cast<int>(ap - dims_.algoProtos.begin()), static_cast<int>(ch - dims_.channels.begin()),
                            static_cast<int>(ck - dims_.chunks.begin())});
}

}  // namespace dynamiccl::tune

// NcclGraphs helpers: the algorithm -> search-graph mapping and input validation.
#include "offline/model/graphs.h"

#include <string>

namespace dynamiccl::model {

const NcclGraph& NcclGraphs::graphFor(Algo a) const {
  // init.cc builds graphs[] = {tree, ring, collNetDirect, collNetChain, nvls, nvls, tree}.
  switch (a) {
    case Algo::Ring: return ring;
    case Algo::CollNetDirect: return collNetDirect;
    case Algo::CollNetChain: return collNetChain;
    case Algo::Nvls:
    case Algo::NvlsTree: return nvls;
    case Algo::Tree:
    case Algo::Pat:
    case Algo::Default: break;
  }
  return tree;
}

Status NcclGraphs::validate() const {
  if (nRanks < 1) return makeError("NcclGraphs: nRanks must be >= 1");
  if (nNodes < 1 || nNodes > nRanks) return makeError("NcclGraphs: nNodes must be in [1, nRanks]");
  if (nRanks > 1 && nChannels < 1) return makeError("NcclGraphs: nChannels must be >= 1");
  if (nChannels > 64) return makeError("NcclGraphs: nChannels exceeds NCCL's MAXCHANNELS (64)");
  if (minCompCap > maxCompCap) return makeError("NcclGraphs: minCompCap > maxCompCap");
  for (const NcclGraph* g : {&tree, &ring, &collNetDirect, &collNetChain, &nvls}) {
    if (g->nChannels < 0 || g->bwIntra < 0 || g->bwInter < 0 || g->latencyInter < 0)
      return makeError("NcclGraphs: negative channel count, bandwidth or latency in a graph");
  }
  if (nRanks > 1 && (ring.nChannels < 1 || tree.nChannels < 1))
    return makeError("NcclGraphs: ring and tree graphs need at least one channel");
  return Ok{};
}

}  // namespace dynamiccl::model

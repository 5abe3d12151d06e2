// The per-call part of NCCL's model: ncclTopoGetAlgoTime (tuning.cc:584-601), the cost fill
// (enqueue.cc initCollCostTable/updateCollCostTable) and the default selection with its channel
// count (enqueue.cc topoGetAlgoInfo).
#include <algorithm>

#include "offline/model/model.h"
#include "offline/model/nccl_consts.h"

namespace dynamiccl::model {

namespace {

using namespace nccl;  // NCCL's indices

// Trees miss the model at medium sizes; NCCL scales their bandwidth per power-of-two size from 64 B.
constexpr float kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

}  // namespace

float NcclModel::algoTime(int coll, int a, int p, uint64_t nBytes, int numPipeOps) const {
  float bw = bw_[coll][a][p];
  float lat = lat_[coll][a][p];
  if (bw == 0) return kIgnore;
  const long logSize = nccl::log2i(static_cast<long>(nBytes >> 6));
  if (a == kTree && coll == kAllReduce && logSize >= 0 && logSize < 23) bw *= kTreeCorrection[p][logSize];
  // Ring plateau: multi-node Ring/Simple AllReduce pays more latency once chunks are non-trivial.
  if (a == kRing && p == kSimple && g_.nNodes > 1 && coll == kAllReduce &&
      nBytes / static_cast<uint64_t>(g_.nChannels * g_.nRanks) >= 64) {
    lat *= g_.minCompCap < 80 ? 1.9 : 1.4;
  }
  // Aggregated ops pipeline: Ring pays latency per op, others per batch of work items.
  const int latCount = a == kRing ? numPipeOps : (numPipeOps + nccl::kMaxDevWorkBatchColls - 1) / nccl::kMaxDevWorkBatchColls;
  return lat * latCount + static_cast<float>(nBytes) / (1000 * bw);
}

CostTable NcclModel::costTable(Collective c, uint64_t nBytes, int numPipeOps, const CallTraits& traits) const {
  CostTable table;
  for (auto& row : table) row.fill(kIgnore);
  const int coll = ci(c);
  if (g_.nRanks == 1) {
    table[kRing][kSimple] = 0.0f;
    return table;
  }
  const bool collNetSupport = g_.collNetEnable && traits.collNetOpSupported;
  const bool nvlsSupport = g_.nvlsSupport && (traits.nvlsOpSupported || c == Collective::AllGather);
  const int maxLocal = g_.ppnMaxLocalRanks();
  for (int a = 0; a < kNumAlgos; ++a) {
    if ((a == kCollNetDirect || a == kCollNetChain) && !collNetSupport) continue;
    if ((a == kCollNetDirect || a == kCollNetChain) && maxLocal > nccl::kMaxDirectArity + 1) continue;
    if ((a == kNvls || a == kNvlsTree) &&
        (!nvlsSupport || (coll != kAllReduce && g_.ppnLocalRanks() > nccl::kMaxNvlsArity)))
      continue;
    if (a == kNvls && !collNetSupport && g_.nNodes > 1) continue;
    if (a == kPat && coll == kReduceScatter && traits.scaledReduceScatter) continue;
    for (int p = 0; p < kNumProtos; ++p) {
      table[a][p] = algoTime(coll, a, p, nBytes, numPipeOps);
      // fp8 deep rings lose precision: NCCL pushes them behind every other choice.
      if (traits.fp8 && a == kRing && g_.nRanks > 8) table[a][p] *= 1024.0f;
    }
  }
  return table;
}

DefaultChoice selectFromTable(const CostTable& table) {
  DefaultChoice choice;
  const int slot = abi::ncclChoice(table[0].data(), abi::PickRule::Nccl2_28);  // the model is 2.28.9's
  if (slot == abi::kNoPick) return choice;
  choice.algo = static_cast<Algo>(slot / kNumProtos);
  choice.proto = static_cast<Proto>(slot % kNumProtos);
  choice.time_us = table[slot / kNumProtos][slot % kNumProtos];
  return choice;
}

int NcclModel::defaultChannels(Algo algo, Proto proto, uint64_t nBytes) const {
  const int a = ai(algo), p = pi(proto);
  if (a < 0 || p < 0) return 0;
  int nc = g_.nChannels;
  const int nt = maxThreads_[a][p];
  int64_t threshold = threadThresholds_[a][p];
  // NCCL multiplies these as int; every value here stays far below overflow.
  if (a == kCollNetDirect) {
    // Shed channels down through 16, 8, 4, 2, 1, halving the threshold at 1.5x each step.
    const int64_t heads = g_.collNetHeads;
    int ncSwitch = 16;
    bool short_ = true;
    while (ncSwitch >= 1 && short_) {
      while ((short_ = static_cast<int64_t>(nBytes) < nc * nt * heads * threshold) && nc > ncSwitch) {
        if (nc == ncSwitch + ncSwitch / 2) threshold /= 2;
        nc--;
      }
      ncSwitch /= 2;
    }
  } else if (a == kNvls || a == kNvlsTree) {
    // NVLS uses its own channel set; multi-node NVLS also stays within the ring channels.
    nc = (g_.nNodes > 1 && a == kNvls) ? std::min(g_.nvlsChannels, g_.nChannels) : g_.nvlsChannels;
  } else {
    // Ring/Tree/PAT: drop channels while each thread would get less than its threshold of work.
    while (nBytes < static_cast<uint64_t>(static_cast<int64_t>(nc) * nt * threshold)) {
      if (nc >= 2) nc--;
      else break;
    }
  }
  return nc;
}

DefaultChoice NcclModel::defaultChoice(Collective c, uint64_t nBytes, int numPipeOps, const CallTraits& traits) const {
  DefaultChoice choice = selectFromTable(costTable(c, nBytes, numPipeOps, traits));
  if (choice.algo != Algo::Default) choice.nChannels = defaultChannels(choice.algo, choice.proto, nBytes);
  return choice;
}

}  // namespace dynamiccl::model

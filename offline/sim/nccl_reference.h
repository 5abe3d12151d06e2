// NCCL's view of a topology (offline/model), in the one place sim/ depends on it: the cost
// table NCCL hands the tuner, NCCL's default configuration, and what NCCL runs when NCCL_ALGO /
// NCCL_PROTO restrict it (the forced sweeps in shared/data).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "features/features.h"
#include "offline/model/model.h"
#include "offline/sim/simulator.h"
#include "abi/abi.h"

namespace dynamiccl::sim {

class NcclReference {
 public:
  static Expected<NcclReference> create(const model::Topology& topo);

  model::CostTable costTable(Collective coll, uint64_t nBytes) const;
  // NCCL's own choice with its channel count and our default chunk; algo Default if none usable.
  Config defaultConfig(Collective coll, uint64_t nBytes) const;
  // NCCL's choice when NCCL_ALGO=algo and/or NCCL_PROTO=proto (nullopt = not restricted). Naming a
  // protocol explicitly enables it even where NCCL's auto rules would not (LL128 on PCIe).
  Config restrictedConfig(Collective coll, uint64_t nBytes, std::optional<Algo> algo,
                          std::optional<Proto> proto) const;
  int channels(Algo a, Proto p, uint64_t nBytes) const { return model_->defaultChannels(a, p, nBytes); }
  // Fills nChannels/chunk left at 0 with NCCL's values; under `rule` a tuner's channel count is what
  // that release runs: it replaces NCCL's count before 2.31 and only lowers it from 2.31 (abi::channelsRun).
  Config resolve(const Config& c, uint64_t nBytes, abi::PickRule rule = abi::PickRule::Nccl2_28) const;
  // Whether a tuner targeting `rule` would propose c's channel count: from 2.31 not one above NCCL's
  // own count for c's algo/proto, or for NCCL's own choice when c keeps it (NCCL would run its own
  // count: the same configuration as 0).
  bool channelsProposable(Collective coll, const Config& c, uint64_t nBytes, abi::PickRule rule) const;

 private:
  NcclReference() = default;
  model::NcclGraphs graphs_;
  std::shared_ptr<const model::NcclModel> model_;
  // Models with NCCL_ALGO/NCCL_PROTO restrictions, built on first use (key: algo, proto; -1 = any).
  mutable std::map<std::pair<int, int>, std::shared_ptr<const model::NcclModel>> restricted_;
};

}  // namespace dynamiccl::sim

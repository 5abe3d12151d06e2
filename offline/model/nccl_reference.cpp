#include "offline/model/model.h"

namespace dynamiccl::model {

uint64_t defaultChunkBytes(Proto p) {
  // NCCL's per-step slot with default NCCL_BUFFSIZE: LL 64 KiB of lines (32 KiB data), LL128
  // ~600 KiB (we round to 512 KiB), Simple 512 KiB (4 MiB / NCCL_STEPS).
  switch (p) {
    case Proto::LL: return 32 * 1024;
    case Proto::LL128: return 512 * 1024;
    default: return 512 * 1024;
  }
}

Expected<NcclReference> NcclReference::create(const Topology& topo) {
  auto graphs = approximateGraphs(topo);
  if (!graphs) return makeError("NCCL model for " + topo.name + ": " + graphs.error());
  auto m = NcclModel::build(graphs.value());
  if (!m) return makeError("NCCL model for " + topo.name + ": " + m.error());
  NcclReference r;
  r.graphs_ = graphs.value();
  r.model_ = std::make_shared<const NcclModel>(std::move(m.value()));
  return r;
}

CostTable NcclReference::costTable(Collective coll, uint64_t nBytes) const {
  return model_->costTable(coll, nBytes);
}

NcclReference::Config NcclReference::resolve(const Config& c, uint64_t nBytes, abi::PickRule rule) const {
  Config r = c;
  if (r.algo == Algo::Default || r.proto == Proto::Default) return r;
  r.nChannels = abi::channelsRun(rule, r.nChannels, channels(r.algo, r.proto, nBytes));
  if (r.chunkBytes == 0) r.chunkBytes = defaultChunkBytes(r.proto);
  return r;
}

bool NcclReference::channelsProposable(Collective coll, const Config& c, uint64_t nBytes, abi::PickRule rule) const {
  if (!abi::channelsAreCap(rule) || c.nChannels <= 0) return true;
  if (c.algo == Algo::Default || c.proto == Proto::Default) return c.nChannels <= defaultConfig(coll, nBytes).nChannels;
  return c.nChannels <= channels(c.algo, c.proto, nBytes);
}

NcclReference::Config NcclReference::defaultConfig(Collective coll, uint64_t nBytes) const {
  const DefaultChoice d = model_->defaultChoice(coll, nBytes);
  return resolve(Config{d.algo, d.proto, d.nChannels, 0}, nBytes);
}

NcclReference::Config NcclReference::restrictedConfig(Collective coll, uint64_t nBytes, std::optional<Algo> algo,
                                       std::optional<Proto> proto) const {
  if (!algo && !proto) return defaultConfig(coll, nBytes);
  const std::pair<int, int> key{algo ? int(*algo) : -1, proto ? int(*proto) : -1};
  auto it = restricted_.find(key);
  if (it == restricted_.end()) {
    NcclGraphs g = graphs_;
    for (int f = 0; f < kNumCollectives; ++f) {
      // NCCL_ALGO=x keeps only x; NCCL_PROTO=y keeps only y, enabled explicitly (1, not auto 2).
      if (algo)
        for (int a = 0; a < kNumAlgos; ++a) g.algoEnable[f][a] = a == int(*algo) ? 1 : 0;
      if (proto)
        for (int p = 0; p < kNumProtos; ++p) g.protoEnable[f][p] = p == int(*proto) ? 1 : 0;
    }
    auto m = NcclModel::build(g);
    std::shared_ptr<const NcclModel> built =
        m ? std::make_shared<const NcclModel>(std::move(m.value())) : model_;
    it = restricted_.emplace(key, std::move(built)).first;
  }
  const DefaultChoice d = it->second->defaultChoice(coll, nBytes);
  Config c{d.algo, d.proto, d.nChannels, 0};
  if (c.algo == Algo::Default || c.proto == Proto::Default) return c;
  if (c.chunkBytes == 0) c.chunkBytes = defaultChunkBytes(c.proto);
  return c;
}

}  // namespace dynamiccl::model

#include "offline/sim/nccl_reference.h"

namespace dynamiccl::sim {

Expected<NcclReference> NcclReference::create(const model::Topology& topo) {
  auto graphs = model::approximateGraphs(topo);
  if (!graphs) return makeError("NCCL model for " + topo.name + ": " + graphs.error());
  auto m = model::NcclModel::build(graphs.value());
  if (!m) return makeError("NCCL model for " + topo.name + ": " + m.error());
  NcclReference r;
  r.graphs_ = graphs.value();
  r.model_ = std::make_shared<const model::NcclModel>(std::move(m.value()));
  return r;
}

model::CostTable NcclReference::costTable(Collective coll, uint64_t nBytes) const {
  return model_->costTable(coll, nBytes);
}

Config NcclReference::resolve(const Config& c, uint64_t nBytes, abi::PickRule rule) const {
  Config r = c;
  if (r.algo == Algo::Default || r.proto == Proto::Default) return r;
  r.nChannels = abi::channelsRun(rule, r.nChannels, channels(r.algo, r.proto, nBytes));
  if (r.chunkBytes == 0) r.chunkBytes = Simulator::defaultChunk(r.proto);
  return r;
}

bool NcclReference::channelsProposable(Collective coll, const Config& c, uint64_t nBytes, abi::PickRule rule) const {
  if (!abi::channelsAreCap(rule) || c.nChannels <= 0) return true;
  if (c.algo == Algo::Default || c.proto == Proto::Default) return c.nChannels <= defaultConfig(coll, nBytes).nChannels;
  return c.nChannels <= channels(c.algo, c.proto, nBytes);
}

Config NcclReference::defaultConfig(Collective coll, uint64_t nBytes) const {
  const model::DefaultChoice d = model_->defaultChoice(coll, nBytes);
  return resolve(Config{d.algo, d.proto, d.nChannels, 0}, nBytes);
}

Config NcclReference::restrictedConfig(Collective coll, uint64_t nBytes, std::optional<Algo> algo,
                                       std::optional<Proto> proto) const {
  if (!algo && !proto) return defaultConfig(coll, nBytes);
  const std::pair<int, int> key{algo ? int(*algo) : -1, proto ? int(*proto) : -1};
  auto it = restricted_.find(key);
  if (it == restricted_.end()) {
    model::NcclGraphs g = graphs_;
    for (int f = 0; f < kNumCollectives; ++f) {
      // NCCL_ALGO=x keeps only x; NCCL_PROTO=y keeps only y, enabled explicitly (1, not auto 2).
      if (algo)
        for (int a = 0; a < kNumAlgos; ++a) g.algoEnable[f][a] = a == int(*algo) ? 1 : 0;
      if (proto)
        for (int p = 0; p < kNumProtos; ++p) g.protoEnable[f][p] = p == int(*proto) ? 1 : 0;
    }
    auto m = model::NcclModel::build(g);
    std::shared_ptr<const model::NcclModel> built =
        m ? std::make_shared<const model::NcclModel>(std::move(m.value())) : model_;
    it = restricted_.emplace(key, std::move(built)).first;
  }
  const model::DefaultChoice d = it->second->defaultChoice(coll, nBytes);
  Config c{d.algo, d.proto, d.nChannels, 0};
  if (c.algo == Algo::Default || c.proto == Proto::Default) return c;
  if (c.chunkBytes == 0) c.chunkBytes = Simulator::defaultChunk(c.proto);
  return c;
}

}  // namespace dynamiccl::sim

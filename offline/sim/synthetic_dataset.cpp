#include "offline/sim/synthetic_dataset.h"

#include <string>

#include "offline/measurements/measurements.h"

namespace dynamiccl::sim {

int writeSyntheticDataset(const Simulator& simulator, const model::NcclReference& nccl, uint64_t seed, std::ostream& out) {
  const model::Topology& topo = simulator.topology();
  out << "system,collective,nranks,nnodes,bytes,algo,proto,nchannels,chunk,time_us,busbw_gbps,source_note\n";
  NoiseSource noise(seed);
  const int n = topo.nRanks();
  int rows = 0;
  for (int c = 0; c < kNumCollectives; ++c)
    for (uint64_t b = 8; b <= (uint64_t{1} << 32); b *= 2) {
      const Collective cc = Collective(c);
      auto emit = [&](const Config& cfg, const std::string& a, const std::string& p) {
        const double t = simulator.sample_us(cc, b, cfg, noise);
        if (t <= 0) return;
        out << "simulated " << topo.name << "," << collectiveName(cc) << "," << n << "," << topo.nNodes << "," << b
            << "," << a << "," << p << "," << cfg.nChannels << "," << cfg.chunkBytes << "," << t << ","
            << measurements::busBandwidth_GBps(cc, b, t, n) << ",dynamiccl sim --emit-csv seed " << seed << "\n";
        ++rows;
      };
      const Config def = nccl.defaultConfig(cc, b);
      if (def.algo != Algo::Default) emit(def, "default", "default");
      for (const Config& cand : simulator.candidateConfigs(cc))
        if (cand.nChannels == 0)
          emit(nccl.resolve(cand, b), std::string(algoNcclName(cand.algo)), std::string(protoNcclName(cand.proto)));
    }
  return rows;
}

}  // namespace dynamiccl::sim

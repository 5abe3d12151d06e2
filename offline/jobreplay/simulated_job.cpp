// A job on the simulated cluster: the same replay, with the simulator standing in for the
// measurements. Every figure it leads to is simulated.
#include <algorithm>
#include <cmath>

#include "offline/jobreplay/jobreplay.h"

namespace dynamiccl::jobreplay {

Expected<MeasuredJob> simulatedJob(const model::Topology& topo, const sim::SimParams& params,
                                   const model::NcclReference& nccl, const std::vector<Collective>& collectives,
                                   const std::vector<uint64_t>& sizes, int repeats, uint64_t seed) {
  if (collectives.empty() || sizes.empty()) return makeError("a simulated job needs collectives and sizes");
  MeasuredJob job;
  job.source = "simulated " + topo.name + " x " + std::to_string(topo.nNodes);
  job.system = topo.name;
  job.nRanks = topo.nRanks();
  job.nNodes = topo.nNodes;
  job.topology = topo;
  job.repeatSigma = params.noiseSigma;
  const sim::Simulator simulator(topo, params);
  sim::NoiseSource noise(seed);
  const int n = std::max(1, repeats);
  for (Collective coll : collectives)
    for (uint64_t bytes : sizes) {
      JobKey k;
      k.coll = coll;
      k.bytes = bytes;
      k.ncclDefault = nccl.defaultConfig(coll, bytes);
      k.costTable = nccl.costTable(coll, bytes);
      if (k.ncclDefault.algo == Algo::Default) continue;
      auto timed = [&](Algo a, Proto p) -> std::optional<MeasuredConfig> {
        const sim::Config c = nccl.resolve(sim::Config{a, p, 0, 0}, bytes);
        if (!simulator.feasible(coll, c) || !(simulator.time_us(coll, bytes, c) > 0)) return std::nullopt;
        MeasuredConfig m;
        m.config = sim::Config{a, p, 0, 0};
        m.ncclChannels = c.nChannels;
        for (int i = 0; i < n; ++i) m.samples_us.push_back(simulator.sample_us(coll, bytes, c, noise));
        std::vector<double> sorted = m.samples_us;
        std::nth_element(sorted.begin(), sorted.begin() + n / 2, sorted.end());
        m.mean_us = sorted[n / 2];
        return m;
      };
      const auto def = timed(k.ncclDefault.algo, k.ncclDefault.proto);
      if (!def) continue;
      k.measured.push_back(*def);
      for (int a = 0; a < kNumAlgos; ++a)
        for (int p = 0; p < kNumProtos; ++p) {
          const Algo algo = static_cast<Algo>(a);
          const Proto proto = static_cast<Proto>(p);
          float& cost = k.costTable[a][p];
          if (algo == k.ncclDefault.algo && proto == k.ncclDefault.proto) continue;
          if (!(cost >= 0)) continue;  // NCCL would not run it
          if (auto m = timed(algo, proto)) m->forced = true, k.measured.push_back(*m);
          else cost = -1.0f;           // the hardware cannot: NCCL's table says IGNORE too
        }
      job.keys.push_back(std::move(k));
    }
  if (job.keys.empty()) return makeError("the simulator times none of the job's keys");
  return job;
}

}  // namespace dynamiccl::jobreplay

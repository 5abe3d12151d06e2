// Building training rows from rollouts and from the store.
#include "offline/train/dataset.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "policy/policy.h"
#include "learned/learned.h"
#include "offline/sim/sim.h"
#include "store/store.h"

namespace dynamiccl::train {
namespace {

void encodeRow(Sample& s, const TopologyFingerprint& fp, Collective coll, uint64_t bytes, const policy::Decision& d) {
  encodeContext(fp, coll, bytes, {}, std::span<float, kContextFeatures>(s.inputs, kContextFeatures));
  encodeConfig(d.algo, d.proto, d.nChannels, std::span<float, kConfigFeatures>(s.inputs + kContextFeatures, kConfigFeatures));
}

Collective sampleCollective(std::mt19937_64& rng) {
  // AllReduce dominates training jobs; the others still need coverage.
  std::discrete_distribution<int> d({1, 1, 2, 2, 4});
  return static_cast<Collective>(d(rng));
}

}  // namespace

std::vector<Sample> simulatorRollouts(const std::vector<SimSystem>& systems, const RolloutOptions& o) {
  std::vector<Sample> out;
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int> bucket(4, 34);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (const SimSystem& sys : systems) {
    for (int k = 0; k < o.keysPerSystem; ++k) {
      const Collective coll = sampleCollective(rng);
      const int b = bucket(rng);
      const uint64_t bytes = static_cast<uint64_t>(std::ldexp(1.0 + unit(rng), b - 1));
      // Congestion episode: level now, and for how many of the last window calls it has lasted.
      const bool congested = unit(rng) < o.congestedFraction;
      const double level = congested ? 0.3 + 1.7 * unit(rng) : 0.0;
      const int lasted = congested ? 1 + static_cast<int>(unit(rng) * kTimingWindowLength) : 0;
      const policy::Decision dflt = sys.ncclDefault(coll, bytes);
      const double predicted = sys.predicted_us(coll, bytes, dflt);
      float window[kTimingWindowLength];
      for (int i = 0; i < kTimingWindowLength; ++i) {
        const double c = i >= kTimingWindowLength - lasted ? level : 0.0;
        const auto t = sys.trueLatency_us(coll, bytes, dflt, c);
        window[i] = t && predicted > 0 ? static_cast<float>(std::log(*t * measurementNoise(rng) / predicted)) : 0.0f;
      }
      for (const policy::Decision& d : learned::policyConfigurations(coll, sys.fingerprint())) {
        const auto t = sys.trueLatency_us(coll, bytes, d, level);
        if (!t) continue;  // NCCL would mark it IGNORE here
        Sample s;
        encodeRow(s, sys.fingerprint(), coll, bytes, d);
        std::copy(window, window + kTimingWindowLength, s.window);
        s.logLatency_us = static_cast<float>(std::log(*t * measurementNoise(rng)));
        out.push_back(s);
      }
    }
  }
  return out;
}

std::vector<float> importanceWeights(const std::vector<std::string>& keys, const std::vector<std::string>& configs,
                                     float clip) {
  std::map<std::string, std::map<std::string, int>> counts;
  std::map<std::string, int> totals;
  for (size_t i = 0; i < keys.size(); ++i) {
    ++counts[keys[i]][configs[i]];
    ++totals[keys[i]];
  }
  // Uniform target over the configurations seen per key: w = (n / distinct) / count(config).
  std::vector<float> w(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const double distinct = static_cast<double>(counts[keys[i]].size());
    const double raw = (totals[keys[i]] / distinct) / counts[keys[i]][configs[i]];
    w[i] = static_cast<float>(std::clamp(raw, 1.0 / clip, static_cast<double>(clip)));
  }
  return w;
}

Expected<StoreRows> storeSamples(const std::string& dbPath) {
  store::StoreOptions opts;
  opts.path = dbPath;
  opts.read_only = true;  // training reads the store; it never creates or migrates one
  auto db = store::Store::open(opts);
  if (!db) return makeError("store " + dbPath + ": " + db.error());
  StoreRows out;
  std::vector<std::string> keys, configs;
  std::map<std::string, TopologyFingerprint> fps;
  auto st = (*db)->forEachMeasurement(false, [&](const store::MeasurementRow& r) {
    ++out.read;
    if (r.is_sym_coll) {  // kept apart: its latency says nothing about any algorithm/protocol
      ++out.skipped;
      ++out.symmetric;
      return;
    }
    auto coll = parseCollective(r.collective);
    auto algo = parseAlgo(r.algo);
    auto proto = parseProto(r.proto);
    if (!coll || !algo || !proto || *algo == Algo::Default || *proto == Proto::Default || !(r.time_us > 0) ||
        r.n_ranks <= 0) {
      ++out.skipped;
      return;
    }
    // The machine the row was measured on: a preset machine by name, else the platform its system
    // string names; rows of unknown hardware would teach the network wrong facts.
    TopologyFingerprint fp;
    if (auto preset = findPreset(r.system)) {
      fp = fingerprintOf(*preset);
    } else if (auto topo = measurements::topologyForSystem(r.system, r.n_ranks, std::max(1, r.n_nodes))) {
      fp = fingerprintOf(*topo);
    } else {
      ++out.skipped;
      ++out.unknownHardware;
      return;
    }
    fp.nRanks = r.n_ranks;
    fp.nNodes = std::max(1, r.n_nodes);
    fp.ranksPerNode = fp.nRanks / fp.nNodes;
    Sample s;
    const policy::Decision d{*algo, *proto, std::max(0, r.n_channels), 0};
    encodeRow(s, fp, *coll, r.bytes, d);
    std::fill(s.window, s.window + kTimingWindowLength, 0.0f);  // logs carry no predicted latency
    s.logLatency_us = static_cast<float>(std::log(r.time_us));
    out.samples.push_back(s);
    keys.push_back(r.system + "/" + std::to_string(r.n_ranks) + "/" + r.collective + "/" +
                   std::to_string(SizeBucket::of(r.bytes)) + (r.user_tag ? "/tag" + std::to_string(r.user_tag) : ""));
    configs.push_back(r.algo + "/" + r.proto + "/" + std::to_string(r.n_channels));
  });
  if (!st) return makeError("store " + dbPath + ": " + st.error());
  const std::vector<float> w = importanceWeights(keys, configs);
  for (size_t i = 0; i < w.size(); ++i) out.samples[i].weight = w[i];
  return out;
}

}  // namespace dynamiccl::train

#include "lab/eval/online_eval.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::eval {

namespace {

bool sameArm(const sim::Config& a, const sim::Config& b) { return a.algo == b.algo && a.proto == b.proto; }

sim::Config toConfig(const policy::Decision& d, const KeyWorld& w) {
  if (d.keepsAlgoProto()) return w.ncclDefault;
  for (const sim::Config& a : w.arms)
    if (a.algo == d.algo && a.proto == d.proto) return a;  // the arm as the world runs it
  return d;
}

}  // namespace

KeyResult evalKey(const KeyWorld& w, const OnlineLoop& o, std::ostream& trace) {
  const uint64_t driftAt = o.calls / 2;
  const double driftFactor = 2.0;
  // The static profile: the best arm before the drift (what an offline tuner would have written).
  sim::Config staticBest = w.arms.front();
  for (const auto& c : w.arms)
    if (w.mean_us(c) < w.mean_us(staticBest)) staticBest = c;
  auto drift = [&](const sim::Config& c, uint64_t k) { return k >= driftAt && sameArm(c, staticBest) ? driftFactor : 1.0; };
  auto truth = [&](const sim::Config& c, uint64_t k) { return w.mean_us(c) * drift(c, k); };
  auto bestAt = [&](uint64_t k) {
    double b = INFINITY;
    for (const auto& c : w.arms) b = std::min(b, truth(c, k));
    return b;
  };
  learner::OnlineConfig config;
  config.epochCalls = o.epoch;
  learner::OnlineLearner learner(config, [&](int, int) {
    policy::Candidates c;
    c.count = 1;
    c.decisions[0] = {staticBest.algo, staticBest.proto, 0, 0};
    return c;
  });
  const int coll = static_cast<int>(w.coll), bucket = SizeBucket::of(w.bytes);
  learner.setNcclDefault(coll, bucket, w.ncclDefault.algo, w.ncclDefault.proto);
  if (!o.noModelPrior) learner.setModelledCost(coll, bucket, &w.costTable[0][0]);
  std::unique_ptr<learner::OnlineTable> table;
  double total = 0, exploreExtra = 0, lastOnline = 0, lastStatic = 0, lastDefault = 0, lastBest = 0;
  KeyResult r;
  for (uint64_t k = 0; k < o.calls; ++k) {
    if (k % o.epoch == 0) table = learner.build(k / o.epoch);
    const policy::Candidates* picked = table->pick(coll, w.bytes, 0xc0ffee, k);
    const learner::OnlineEntry& e = table->entry(learner::onlineKey(coll, w.bytes));
    // Nothing learned yet for the key: the static profile answers, as in the plugin.
    const sim::Config exploit = e.exploit.count ? toConfig(e.exploit.decisions[0], w) : staticBest;
    // The plugin's fall-through: a candidate NCCL cannot run (IGNORE) yields to the next one.
    sim::Config ran = exploit;
    std::optional<double> sample;
    for (int i = 0; picked && i < picked->count && !sample; ++i) {
      ran = toConfig(picked->decisions[i], w);
      if (w.costTable[int(ran.algo)][int(ran.proto)] >= 0) sample = w.sample_us(ran);
    }
    if (!sample) ran = exploit, sample = w.sample_us(exploit);
    if (!sample) continue;
    const double lat = *sample * drift(ran, k);
    learner.observe(coll, w.bytes, ran.algo, ran.proto, lat);
    total += lat;
    if (!sameArm(ran, exploit)) exploreExtra += std::max(0.0, truth(ran, k) - truth(exploit, k));
    if (k >= driftAt && r.recoveryCalls < 0 && truth(exploit, k) <= 1.05 * bestAt(k))
      r.recoveryCalls = static_cast<int64_t>(k - driftAt);
    if (k + 1000 >= o.calls) {
      lastOnline += truth(ran, k);
      lastStatic += truth(staticBest, k);
      lastDefault += truth(w.ncclDefault, k);
      lastBest += bestAt(k);
    }
    if (k % 50 == 0)
      trace << w.source << ',' << w.label << ',' << k << ',' << truth(ran, k) / bestAt(k) << ','
            << truth(staticBest, k) / bestAt(k) << ',' << truth(w.ncclDefault, k) / bestAt(k) << '\n';
  }
  r.exploreShare = total > 0 ? exploreExtra / total : 0;
  r.finalRatio = lastOnline / lastBest;
  r.staticFinalRatio = lastStatic / lastBest;
  r.defaultFinalRatio = lastDefault / lastBest;
  return r;
}

// The simulator's keys: ring/tree x LL/LL128/Simple as the hardware allows, calibrated times.
std::vector<KeyWorld> simulatedKeys(const sim::Simulator& s, const model::NcclReference& ref) {
  const std::pair<Collective, uint64_t> keys[] = {{Collective::AllReduce, 4096},     {Collective::AllReduce, 65536},
                                                  {Collective::AllReduce, 1 << 20},  {Collective::AllReduce, 16 << 20},
                                                  {Collective::AllReduce, 256 << 20}, {Collective::AllGather, 1 << 20}};
  std::vector<KeyWorld> out;
  for (auto [coll, bytes] : keys) {
    KeyWorld w;
    w.source = "sim";
    w.label = std::string(collectiveName(coll)) + " " + std::to_string(bytes);
    w.coll = coll;
    w.bytes = bytes;
    w.ncclDefault = ref.defaultConfig(coll, bytes);
    w.costTable = ref.costTable(coll, bytes);
    for (Algo a : {Algo::Ring, Algo::Tree})
      for (Proto p : {Proto::LL, Proto::LL128, Proto::Simple})
        if (s.feasible(coll, {a, p, 0, 0}) && s.time_us(coll, bytes, {a, p, 0, 0}) > 0 && w.costTable[int(a)][int(p)] >= 0)
          w.arms.push_back({a, p, 0, 0});
    if (w.ncclDefault.algo != Algo::Default && std::none_of(w.arms.begin(), w.arms.end(), [&](const sim::Config& c) {
          return sameArm(c, w.ncclDefault);
        }))
      w.arms.push_back(w.ncclDefault);
    if (w.arms.empty()) continue;
    w.mean_us = [&s, coll, bytes](const sim::Config& c) { return s.time_us(coll, bytes, c); };
    auto env = std::make_shared<sim::SimulatedEnvironment>(s, bytes ^ 0x5eed);
    w.sample_us = [env, coll, bytes](const sim::Config& c) { return env->latency_us(coll, bytes, c); };
    out.push_back(std::move(w));
  }
  return out;
}

// Measured keys: points with at least three measured (algo, proto), at up to five sizes per shape
// spread over the measured range; arms nobody measured are IGNORE in the table handed over.
std::vector<KeyWorld> measuredKeys(const measurements::ReplayData& data) {
  std::map<const measurements::Shape*, std::vector<const measurements::ReplayPoint*>> byShape;
  for (const measurements::ReplayPoint& p : data.points)
    if (p.forced_us.size() + (p.default_us > 0 && !p.forced_us.count(sim::Config{p.ncclDefault.algo, p.ncclDefault.proto, 0, 0})) >= 3)
      byShape[p.shape].push_back(&p);
  std::vector<KeyWorld> out;
  for (auto& [shape, points] : byShape) {
    std::sort(points.begin(), points.end(), [](auto* a, auto* b) { return a->bytes < b->bytes; });
    std::vector<const measurements::ReplayPoint*> picked;
    for (double f : {0.1, 0.35, 0.55, 0.75, 0.98}) {
      const measurements::ReplayPoint* p = points[static_cast<size_t>(f * (points.size() - 1))];
      if (picked.empty() || picked.back() != p) picked.push_back(p);
    }
    for (const measurements::ReplayPoint* p : picked) {
      KeyWorld w;
      w.source = "data";
      w.label = std::string(collectiveName(p->coll)) + " " + std::to_string(p->bytes) + " " +
                std::to_string(shape->nRanks) + "r";
      w.coll = p->coll;
      w.bytes = p->bytes;
      w.ncclDefault = p->ncclDefault;
      w.costTable = p->costTable();
      // Arms at NCCL's own channel count: a forced count is a configuration these worlds do not offer.
      std::map<std::pair<Algo, Proto>, double> measured;
      for (const auto& [c, t] : p->forced_us)
        if (c.nChannels == 0 && c.chunkBytes == 0) measured[{c.algo, c.proto}] = t;
      if (p->default_us > 0) measured[{p->ncclDefault.algo, p->ncclDefault.proto}] = p->default_us;
      for (int a = 0; a < kNumAlgos; ++a)
        for (int q = 0; q < kNumProtos; ++q)
          if (!measured.count({Algo(a), Proto(q)})) w.costTable[a][q] = -1.0f;
      // Arms: measured and allowed by NCCL's table (the tuner cannot pick an IGNORE entry, e.g. LL128 on PCIe).
      for (const auto& [ap, t] : measured)
        if (w.costTable[int(ap.first)][int(ap.second)] >= 0) w.arms.push_back({ap.first, ap.second, 0, 0});
      if (w.arms.size() < 2) continue;  // nothing to choose among
      w.mean_us = [measured](const sim::Config& c) {
        auto it = measured.find({c.algo, c.proto});
        return it == measured.end() ? -1.0 : it->second;
      };
      auto env = std::make_shared<sim::MeasuredEnvironment>(data, p->group, shape->nRanks, shape->nNodes, p->bytes ^ 0xda7a);
      const Collective coll = p->coll;
      const uint64_t bytes = p->bytes;
      w.sample_us = [env, coll, bytes](const sim::Config& c) { return env->latency_us(coll, bytes, c); };
      out.push_back(std::move(w));
    }
  }
  return out;
}

}  // namespace dynamiccl::eval

// Scoring configurations with the network and turning the winners into rules.
#include "policy/policy_rules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <tuple>

namespace dynamiccl::policy {

std::vector<Decision> policyConfigurations(Collective coll, const TopologyFingerprint& fp) {
  std::vector<std::pair<Algo, Proto>> ap;
  const Proto all[] = {Proto::LL, Proto::LL128, Proto::Simple};
  for (Proto p : all) ap.push_back({Algo::Ring, p});
  const bool hopperPlus = fp.computeCap >= 90;
  const int ppn = fp.nNodes > 0 ? fp.nRanks / fp.nNodes : fp.ranksPerNode;
  if (coll == Collective::AllReduce) {
    for (Proto p : all) ap.push_back({Algo::Tree, p});
    if (hopperPlus && ppn > 1) ap.push_back({Algo::Nvls, Proto::Simple});
    if (hopperPlus && fp.nNodes > 1) ap.push_back({Algo::NvlsTree, Proto::Simple});
  } else if (coll == Collective::AllGather || coll == Collective::ReduceScatter) {
    if (ppn == 1) ap.push_back({Algo::Pat, Proto::Simple});
    if (hopperPlus && fp.nNodes == 1 && ppn > 1) ap.push_back({Algo::Nvls, Proto::Simple});
  }
  std::vector<Decision> out;
  for (auto [a, p] : ap)
    for (int ch : kPolicyChannelChoices) {
      if ((a == Algo::Nvls || a == Algo::NvlsTree) && ch != 0) continue;  // NVLS uses its own channel set
      out.push_back(Decision{a, p, ch, 0});
    }
  return out;
}

uint64_t policyProbeBytes(int bucket) {
  if (bucket <= 1) return 1;
  return static_cast<uint64_t>(std::ldexp(std::sqrt(2.0), bucket - 1));
}

std::vector<Rule> policyRules(const PolicyNetwork& net, const TopologyFingerprint& fp, const PolicyRuleOptions& o) {
  std::vector<Rule> rules;
  const int in = net.inputs();
  std::vector<float> hidden(net.gruHidden()), rows, scores;
  float window[kTimingWindowLength] = {};
  std::vector<float> zeroState(net.gruHidden());
  net.encodeWindow(window, zeroState.data());
  for (int c = 0; c < kNumCollectives; ++c) {
    const Collective coll = static_cast<Collective>(c);
    const std::vector<Decision> configs = policyConfigurations(coll, fp);
    if (configs.empty()) continue;
    for (int b = kPolicyMinBucket; b <= kPolicyMaxBucket; ++b) {
      const uint64_t probe = policyProbeBytes(b);
      rows.assign(configs.size() * in, 0.0f);
      for (size_t i = 0; i < configs.size(); ++i) {
        float* row = rows.data() + i * in;
        encodeContext(fp, coll, probe, o.workload, std::span<float, kContextFeatures>(row, kContextFeatures));
        encodeConfig(configs[i].algo, configs[i].proto, configs[i].nChannels,
                     std::span<float, kConfigFeatures>(row + kContextFeatures, kConfigFeatures));
      }
      const float* state = zeroState.data();
      if (o.windows && o.windows->at(coll, probe).count() > 0) {
        o.windows->at(coll, probe).snapshot(window);
        net.encodeWindow(window, hidden.data());
        state = hidden.data();
      }
      scores.resize(configs.size());
      net.predictLogLatency_us(rows.data(), static_cast<int>(configs.size()), state, scores.data());
      std::vector<size_t> order(configs.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return scores[x] < scores[y]; });
      // The best configuration per distinct (algo, proto), best first, as fall-through candidates.
      int emitted = 0;
      std::vector<std::pair<Algo, Proto>> seen;
      for (size_t i : order) {
        if (emitted == o.candidatesPerKey || !std::isfinite(scores[i])) break;
        const Decision& d = configs[i];
        if (std::find(seen.begin(), seen.end(), std::pair{d.algo, d.proto}) != seen.end()) continue;
        seen.push_back({d.algo, d.proto});
        Rule r;
        r.collective = coll;
        r.minBytes = SizeBucket::lowest(b);
        r.maxBytes = b == kPolicyMaxBucket ? UINT64_MAX : SizeBucket::lowest(b + 1) - 1;
        r.decision = d;
        r.origin = "policy";
        rules.push_back(r);
        ++emitted;
      }
    }
  }
  return rules;
}

namespace {

using CacheKey = std::tuple<const PolicyNetwork*, int, int, int, int>;
struct CacheEntry {
  std::shared_ptr<const PolicyNetwork> keepAlive;  // the key's pointer stays valid while cached
  std::shared_ptr<const std::vector<Rule>> rules;
};

std::shared_ptr<const std::vector<Rule>> cachedPolicyRules(const std::shared_ptr<const PolicyNetwork>& net,
                                                           const CommShape& shape) {
  static std::mutex mutex;
  static std::map<CacheKey, CacheEntry> cache;
  const CacheKey key{net.get(), shape.nRanks, shape.nNodes, shape.minRanksPerNode, shape.maxRanksPerNode};
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second.rules;
  const TopologyFingerprint fp = buildFingerprint(shape, localHostSources());
  PolicyRuleOptions options;
  options.workload = workloadFromEnvironment();
  auto rules = std::make_shared<const std::vector<Rule>>(policyRules(*net, fp, options));
  if (cache.size() >= 256) cache.clear();  // bounded: shapes beyond that are rare
  cache[key] = CacheEntry{net, rules};
  return rules;
}

}  // namespace

DecisionTable compileWithPolicy(const Profile& profile, const CommShape& shape) {
  if (!profile.network) return DecisionTable::compile(profile, shape);
  const auto generated = cachedPolicyRules(profile.network, shape);
  Profile merged;
  merged.rules.reserve(generated->size() + profile.rules.size());
  merged.rules = *generated;
  merged.rules.insert(merged.rules.end(), profile.rules.begin(), profile.rules.end());
  return DecisionTable::compile(merged, shape);
}

}  // namespace dynamiccl::policy

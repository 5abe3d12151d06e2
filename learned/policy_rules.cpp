// Scoring configurations with the network and turning the winners into rules.
#include "learned/policy_rules.h"
#include "learned/profile_network.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>

namespace dynamiccl::learned {

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

namespace {

constexpr int kSlots = kNumAlgos * kNumProtos;

// The guard at one key: which of NCCL's possible own choices (its (algo, proto) with NCCL's channels,
// the reference configurations) a configuration may replace. It must be predicted faster by the
// margin and, with a covariance, by the key's own error: keyErrorSigmas standard deviations of the
// predicted difference. NCCL choices the network did not score (CollNet, ...) are never replaced.
struct KeyGuard {
  std::optional<float> logKeep;             // log(1 - margin); none: no margin
  const PredictionCovariance* covariance;   // none: no per-key confidence
  float sigmas = 0;
  std::span<const float> scores;
  std::span<const float> embeddings;        // scores.size() x covariance->width(), with a covariance
  std::array<int, kSlots> reference;        // the configuration NCCL's own choice is, per slot; -1: not scored
  std::vector<float> projected;             // lazily, per configuration
  std::vector<bool> hasProjection;

  bool on() const { return logKeep || covariance; }  // admits() is called only then
  const float* projection(size_t i) {
    const size_t w = static_cast<size_t>(covariance->width());
    if (!hasProjection[i]) {
      covariance->project(embeddings.subspan(i * w, w), projected.data() + i * w);
      hasProjection[i] = true;
    }
    return projected.data() + i * w;
  }
  GuardMask admits(size_t i) {
    GuardMask mask = 0;
    for (int s = 0; s < kSlots; ++s) {
      if (reference[s] < 0) continue;
      const float gain = scores[reference[s]] - scores[i];  // predicted log gain; false below for NaN
      if (logKeep && !(gain > -*logKeep)) continue;
      if (covariance && !(gain > sigmas * covariance->differenceSd_log(projection(i), projection(reference[s]))))
        continue;
      mask |= GuardMask{1} << s;
    }
    return mask;
  }
};

// Up to candidatesPerKey rules for one key: the best configuration per distinct (algo, proto), best
// first, as fall-through candidates; with a guard, each admits only the NCCL choices it beats.
void emitKeyRules(Collective coll, int bucket, std::span<const Decision> configs, KeyGuard& guard,
                  int candidatesPerKey, std::vector<Rule>& rules) {
  const std::span<const float> scores = guard.scores;
  guard.reference.fill(-1);
  for (size_t i = 0; i < configs.size(); ++i)
    if (configs[i].nChannels == 0) guard.reference[ncclChoiceSlot(configs[i].algo, configs[i].proto)] = static_cast<int>(i);
  if (guard.covariance) {
    guard.projected.assign(configs.size() * guard.covariance->width(), 0.0f);
    guard.hasProjection.assign(configs.size(), false);
  }
  std::vector<size_t> order(configs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return scores[x] < scores[y]; });
  int emitted = 0;
  std::array<bool, kSlots> seen{};
  for (size_t i : order) {
    if (emitted == candidatesPerKey || !std::isfinite(scores[i])) break;
    const Decision& d = configs[i];
    const int slot = ncclChoiceSlot(d.algo, d.proto);
    if (seen[slot]) continue;
    seen[slot] = true;
    const GuardMask admits = guard.on() ? guard.admits(i) : kAdmitsAny;
    // Without a covariance later candidates score worse and admit no more; with one a later candidate
    // may be predicted with less spread, so the search goes on.
    if (admits == 0) {
      if (guard.covariance) continue;
      break;
    }
    Rule r;
    r.collective = coll;
    r.minBytes = SizeBucket::lowest(bucket);
    r.maxBytes = bucket == kPolicyMaxBucket ? UINT64_MAX : SizeBucket::lowest(bucket + 1) - 1;
    r.decision = d;
    r.admits = admits;
    r.origin = "policy";
    r.evidence.emplace().provenance = Provenance::Learned;
    rules.push_back(r);
    ++emitted;
  }
}

}  // namespace

std::vector<Rule> policyRules(const PolicyNetwork& net, const TopologyFingerprint& fp, const PolicyRuleOptions& o) {
  // Every (collective, size bucket) key x its configurations is scored in one batch: the network's
  // first layer per key and per configuration, the rest of it over all pairs at once.
  struct Key {
    Collective coll;
    int bucket;
    size_t firstPair;
  };
  const int h = net.gruHidden(), keyWidth = net.keyInputs();
  std::vector<Decision> configs;  // every collective's configurations, one after the other
  std::array<size_t, kNumCollectives + 1> configStart{};
  for (int c = 0; c < kNumCollectives; ++c) {
    configStart[c] = configs.size();
    const std::vector<Decision> mine = policyConfigurations(static_cast<Collective>(c), fp);
    configs.insert(configs.end(), mine.begin(), mine.end());
  }
  configStart[kNumCollectives] = configs.size();
  std::vector<float> configRows(configs.size() * kConfigFeatures);
  for (size_t i = 0; i < configs.size(); ++i)
    encodeConfig(configs[i].algo, configs[i].proto, configs[i].nChannels,
                 std::span<float, kConfigFeatures>(configRows.data() + i * kConfigFeatures, kConfigFeatures));

  float window[kTimingWindowLength] = {};
  std::vector<float> zeroState(h);
  net.encodeWindow(window, zeroState.data());
  std::vector<Key> keys;
  std::vector<float> keyRows;
  std::vector<PairIndex> pairs;
  for (int c = 0; c < kNumCollectives; ++c) {
    const Collective coll = static_cast<Collective>(c);
    if (configStart[c] == configStart[c + 1]) continue;
    for (int b = kPolicyMinBucket; b <= kPolicyMaxBucket; ++b) {
      const uint64_t probe = policyProbeBytes(b);
      const int k = static_cast<int>(keys.size());
      keys.push_back(Key{coll, b, pairs.size()});
      keyRows.resize(keyRows.size() + keyWidth);
      float* row = keyRows.data() + static_cast<size_t>(k) * keyWidth;
      encodeContext(fp, coll, probe, o.workload, std::span<float, kContextFeatures>(row, kContextFeatures));
      std::copy(zeroState.begin(), zeroState.end(), row + kContextFeatures);
      if (o.windows && o.windows->at(coll, probe).count() > 0) {
        o.windows->at(coll, probe).snapshot(window);
        net.encodeWindow(window, row + kContextFeatures);
      }
      for (size_t i = configStart[c]; i < configStart[c + 1]; ++i) pairs.push_back(PairIndex{k, static_cast<int>(i)});
    }
  }
  std::vector<float> scores(pairs.size());
  const PredictionCovariance* covariance = net.covariance();
  std::vector<float> embeddings;
  if (covariance) {
    embeddings.resize(pairs.size() * static_cast<size_t>(covariance->width()));
    net.predictAndEmbedPairs(keyRows.data(), static_cast<int>(keys.size()), configRows.data(),
                             static_cast<int>(configs.size()), pairs, scores.data(), embeddings.data());
  } else {
    net.predictPairsLogLatency_us(keyRows.data(), static_cast<int>(keys.size()), configRows.data(),
                                  static_cast<int>(configs.size()), pairs, scores.data());
  }

  std::vector<Rule> rules;
  KeyGuard guard;
  if (const std::optional<float> margin = net.weights().guardMargin)
    guard.logKeep = static_cast<float>(std::log1p(-static_cast<double>(*margin)));
  guard.covariance = covariance;
  guard.sigmas = net.weights().keyErrorSigmas;
  for (const Key& k : keys) {
    const int c = static_cast<int>(k.coll);
    const size_t n = configStart[c + 1] - configStart[c];
    guard.scores = std::span<const float>(scores.data() + k.firstPair, n);
    if (covariance) {
      const size_t w = static_cast<size_t>(covariance->width());
      guard.embeddings = std::span<const float>(embeddings.data() + k.firstPair * w, n * w);
    }
    emitKeyRules(k.coll, k.bucket, std::span<const Decision>(configs.data() + configStart[c], n), guard,
                 o.candidatesPerKey, rules);
  }
  return rules;
}

namespace {

using CacheKey = std::tuple<const PolicyNetwork*, TopologyFingerprint, WorkloadContext>;
struct CacheEntry {
  std::shared_ptr<const PolicyNetwork> keepAlive;  // the key's pointer stays valid while cached
  std::shared_ptr<const std::vector<Rule>> rules;
};

// Keyed on every input of policyRules, so a hit returns exactly what generating them again would.
std::shared_ptr<const std::vector<Rule>> cachedPolicyRules(const std::shared_ptr<const PolicyNetwork>& net,
                                                           const TopologyFingerprint& fp,
                                                           const WorkloadContext& workload) {
  static std::mutex mutex;
  static std::map<CacheKey, CacheEntry> cache;
  CacheKey key{net.get(), fp, workload};
  std::lock_guard lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second.rules;
  PolicyRuleOptions options;
  options.workload = workload;
  auto rules = std::make_shared<const std::vector<Rule>>(policyRules(*net, fp, options));
  if (cache.size() >= 256) cache.clear();  // bounded: shapes beyond that are rare
  cache.emplace(std::move(key), CacheEntry{net, rules});
  return rules;
}

}  // namespace

PolicyTable compileWithPolicy(const Profile& profile, const std::shared_ptr<const PolicyNetwork>& network,
                              const CommShape& shape, const PolicyInputs& inputs) {
  static const HostSources kNothingKnown;
  const HostSources& host = inputs.host ? *inputs.host : kNothingKnown;
  std::shared_ptr<const std::vector<Rule>> generated;
  std::string learnedRulesOff, probeDisagrees;
  if (network) {
    const RuleFingerprint fp = fingerprintForRules(shape, profile.hardware, host);
    probeDisagrees = fp.probeDisagrees;
    if (fp.fingerprint) generated = cachedPolicyRules(network, *fp.fingerprint, inputs.workload);
    else learnedRulesOff = fp.unavailable;  // no fingerprint every rank shares: the profile's own rules only
  }
  const StandingInputs standing =
      StandingInputs::of(shape, profile.hardware, host, profile.userRules, inputs.trust, inputs.ncclVersionCode);
  PolicyTable out = compileProfile(profile, shape, standing, generated.get());
  out.learnedRulesOff = std::move(learnedRulesOff);
  out.probeDisagrees = std::move(probeDisagrees);
  return out;
}

PolicyTable compileWithPolicy(const Profile& profile, const CommShape& shape, const PolicyInputs& inputs) {
  auto network = readNetwork(profile);
  return compileWithPolicy(profile, network ? *network : nullptr, shape, inputs);
}

}  // namespace dynamiccl::learned

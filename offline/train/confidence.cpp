// Predicted against observed gains, the held-out error and the calibration table.
#include "offline/train/confidence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "offline/platforms/platforms.h"
#include "offline/train/policy_eval.h"
#include "learned/learned.h"

namespace dynamiccl::train {
namespace {

// Predicted log latency of every configuration at one key, given the key's window, and (with a
// covariance) each configuration's projection for the key's confidence.
struct KeyScores {
  std::vector<float> scores;
  std::vector<float> projected;  // configs x covariance width
  int width = 0;

  // The predicted log gain's standard deviation of configuration a against b; 0 without a covariance.
  double sd(const learned::PolicyNetwork& net, size_t a, size_t b) const {
    if (!width) return 0.0;
    return net.covariance()->differenceSd_log(projected.data() + a * width, projected.data() + b * width);
  }
};

KeyScores scoreKey(const learned::PolicyNetwork& net, const TopologyFingerprint& fp, Collective coll, uint64_t bytes,
                   const std::vector<policy::Decision>& configs, const float* window) {
  std::vector<float> key(net.keyInputs());
  encodeContext(fp, coll, bytes, {}, std::span<float, kContextFeatures>(key.data(), kContextFeatures));
  net.encodeWindow(window, key.data() + kContextFeatures);
  std::vector<float> configRows(configs.size() * kConfigFeatures);
  std::vector<learned::PairIndex> pairs;
  for (size_t i = 0; i < configs.size(); ++i) {
    encodeConfig(configs[i].algo, configs[i].proto, configs[i].nChannels,
                 std::span<float, kConfigFeatures>(configRows.data() + i * kConfigFeatures, kConfigFeatures));
    pairs.push_back(learned::PairIndex{0, static_cast<int>(i)});
  }
  KeyScores out;
  out.scores.resize(configs.size());
  const learned::PredictionCovariance* cov = net.covariance();
  if (!cov) {
    net.predictPairsLogLatency_us(key.data(), 1, configRows.data(), static_cast<int>(configs.size()), pairs,
                                  out.scores.data());
    return out;
  }
  out.width = cov->width();
  std::vector<float> embeddings(configs.size() * out.width);
  net.predictAndEmbedPairs(key.data(), 1, configRows.data(), static_cast<int>(configs.size()), pairs, out.scores.data(),
                           embeddings.data());
  out.projected.resize(embeddings.size());
  cov->project(embeddings, out.projected.data());
  return out;
}

std::vector<size_t> bestFirst(const std::vector<float>& scores) {
  std::vector<size_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  return order;
}

// Which configuration is NCCL's own (algo, proto) with NCCL's channels; none when the network does not score it.
std::optional<size_t> ownIndex(const std::vector<policy::Decision>& configs, const std::vector<float>& scores, Algo a,
                               Proto p) {
  for (size_t i = 0; i < configs.size(); ++i)
    if (configs[i].algo == a && configs[i].proto == p && configs[i].nChannels == 0 && std::isfinite(scores[i])) return i;
  return std::nullopt;
}

}  // namespace

std::vector<GainPair> simulatedGains(const learned::PolicyNetwork& net, const SimSystem& sys, double congestion) {
  std::vector<GainPair> out;
  const TopologyFingerprint& fp = sys.fingerprint();
  for (int c = 0; c < kNumCollectives; ++c) {
    const Collective coll = static_cast<Collective>(c);
    const std::vector<policy::Decision> configs = learned::policyConfigurations(coll, fp);
    for (int b = kEvalMinBucket; b <= kEvalMaxBucket; ++b) {
      const uint64_t bytes = learned::policyProbeBytes(b);
      const policy::Decision own = sys.ncclDefault(coll, bytes);
      const auto ncclTime = sys.trueLatency_us(coll, bytes, own, congestion);
      if (!ncclTime || own.keepsAlgoProto()) continue;
      RatioRing ring;  // what NCCL's default measured under the congestion, as the plugin would see it
      if (congestion > 0)
        for (int i = 0; i < kTimingWindowLength; ++i) ring.push(*ncclTime, sys.predicted_us(coll, bytes, own));
      float window[kTimingWindowLength];
      ring.snapshot(window);
      const KeyScores key = scoreKey(net, fp, coll, bytes, configs, window);
      const std::vector<float>& scores = key.scores;
      const auto ownAt = ownIndex(configs, scores, own.algo, own.proto);
      if (!ownAt) continue;  // NCCL's choice is one the network does not score
      const float reference = scores[*ownAt];
      for (size_t i : bestFirst(scores)) {
        const auto t = sys.trueLatency_us(coll, bytes, configs[i], congestion);
        if (!t) continue;  // NCCL marks it IGNORE: the plugin falls through to the next candidate
        GainPair g;
        g.predicted = std::exp(static_cast<double>(reference) - scores[i]);
        g.observed = *ncclTime / *t;
        g.changes = !(configs[i].algo == own.algo && configs[i].proto == own.proto && configs[i].nChannels == 0);
        g.sdLog = key.sd(net, i, *ownAt);
        out.push_back(g);
        break;
      }
    }
  }
  return out;
}

std::vector<GainPair> measuredGains(const learned::PolicyNetwork& net, const measurements::ReplayData& data) {
  std::vector<GainPair> out;
  const float window[kTimingWindowLength] = {};
  for (const measurements::ReplayPoint& p : data.points) {
    if (!p.shape || !(p.default_us > 0) || p.forced_us.empty()) continue;
    const sim::Config& own = p.ncclDefault;
    if (own.algo == Algo::Default || own.proto == Proto::Default) continue;
    const TopologyFingerprint fp = fingerprintOf(p.shape->topology);
    // Only configurations measured at the point can be judged: NCCL's channel count, measured arms.
    std::vector<policy::Decision> configs;
    for (const policy::Decision& d : learned::policyConfigurations(p.coll, fp))
      if (d.nChannels == 0 && (p.forced_us.count(policy::Decision{d.algo, d.proto, 0, 0}) || (d.algo == own.algo && d.proto == own.proto)))
        configs.push_back(d);
    if (configs.size() < 2) continue;
    // The plugin scores a bucket at its probe size.
    const uint64_t probe = learned::policyProbeBytes(SizeBucket::of(p.bytes));
    const KeyScores key = scoreKey(net, fp, p.coll, probe, configs, window);
    const std::vector<float>& scores = key.scores;
    const auto ownAt = ownIndex(configs, scores, own.algo, own.proto);
    if (!ownAt) continue;
    const float reference = scores[*ownAt];
    const size_t best = bestFirst(scores).front();
    const policy::Decision& choice = configs[best];
    const bool same = choice.algo == own.algo && choice.proto == own.proto;
    const auto it = p.forced_us.find(policy::Decision{choice.algo, choice.proto, 0, 0});
    const double chosen_us = same ? p.default_us : it->second;
    GainPair g;
    g.predicted = std::exp(static_cast<double>(reference) - *std::min_element(scores.begin(), scores.end()));
    g.observed = p.default_us / chosen_us;
    g.changes = !same;
    g.sdLog = key.sd(net, best, *ownAt);
    out.push_back(g);
  }
  return out;
}

double gainError(const std::vector<GainPair>& pairs, double quantile) {
  std::vector<double> errors;
  for (const GainPair& g : pairs)
    if (g.changes && g.predicted > 0 && g.observed > 0) errors.push_back(std::abs(std::log(g.predicted / g.observed)));
  if (errors.empty()) return 0.0;
  std::sort(errors.begin(), errors.end());
  const size_t i = std::min(errors.size() - 1, static_cast<size_t>(quantile * static_cast<double>(errors.size())));
  return errors[i];
}

float marginForError(double logError) {
  // predicted(choice) < (1 - m) x predicted(NCCL's)  <=>  log(predicted gain) > -log(1 - m) = error.
  return static_cast<float>(std::min(0.95, 1.0 - std::exp(-std::max(0.0, logError))));
}

namespace {

// Per range [edges[e], edges[e + 1]) of value(g) (nullopt: the pair is not binned): how many pairs,
// the geometric means of their predicted and observed gains, and the worst observed.
template <size_t N, class Value>
std::vector<CalibrationBin> binBy(const double (&edges)[N], const std::vector<GainPair>& pairs, Value value) {
  std::vector<CalibrationBin> bins;
  for (size_t e = 0; e + 1 < N; ++e) {
    CalibrationBin bin{.lo = edges[e], .hi = edges[e + 1]};
    double lp = 0, lo = 0;
    bin.worstObserved = INFINITY;
    for (const GainPair& g : pairs) {
      const std::optional<double> v = value(g);
      if (!v || !(*v >= bin.lo && *v < bin.hi)) continue;
      ++bin.n;
      lp += std::log(g.predicted);
      lo += std::log(g.observed);
      bin.worstObserved = std::min(bin.worstObserved, g.observed);
    }
    if (bin.n) {
      bin.predicted = std::exp(lp / bin.n);
      bin.observed = std::exp(lo / bin.n);
    }
    bins.push_back(bin);
  }
  return bins;
}

}  // namespace

std::vector<CalibrationBin> calibrationBins(const std::vector<GainPair>& pairs) {
  const double edges[] = {0.0, 1.0, 1.05, 1.2, 1.5, 3.0, INFINITY};
  return binBy(edges, pairs, [](const GainPair& g) { return g.changes ? std::optional(g.predicted) : std::nullopt; });
}

std::vector<CalibrationBin> confidenceBins(const std::vector<GainPair>& pairs) {
  const double edges[] = {-INFINITY, 0.0, 1.0, 1.645, 3.0, INFINITY};
  bool any = false;
  for (const GainPair& g : pairs) any = any || g.sdLog > 0;
  if (!any) return {};
  return binBy(edges, pairs, [](const GainPair& g) -> std::optional<double> {
    if (!g.changes || !(g.sdLog > 0) || !(g.predicted > 0) || !(g.observed > 0)) return std::nullopt;
    return std::log(g.predicted) / g.sdLog;
  });
}

bool guardKeeps(const GainPair& g, std::optional<float> margin, double sigmas) {
  if (!(g.predicted > 0)) return false;
  const double gain = std::log(g.predicted);
  if (margin && !(gain > -std::log1p(-static_cast<double>(*margin)))) return false;
  return !(g.sdLog > 0) || gain > sigmas * g.sdLog;
}

std::string formatCalibration(const std::vector<CalibrationBin>& bins, const std::string& indent, const char* binnedBy) {
  std::string s;
  char line[200];
  std::snprintf(line, sizeof line, "%s%-14s %5s %10s %10s %10s\n", indent.c_str(), binnedBy, "keys",
                "predicted", "observed", "worst obs");
  s += line;
  for (const CalibrationBin& b : bins) {
    char range[32];
    if (std::isinf(b.lo) && b.lo < 0) std::snprintf(range, sizeof range, "< %.2f", b.hi);
    else std::snprintf(range, sizeof range, std::isinf(b.hi) ? "> %.2f" : "%.2f-%.2f", b.lo, b.hi);
    if (b.n) std::snprintf(line, sizeof line, "%s%-14s %5d %10.3f %10.3f %10.3f\n", indent.c_str(), range, b.n, b.predicted,
                           b.observed, b.worstObserved);
    else std::snprintf(line, sizeof line, "%s%-14s %5d %10s %10s %10s\n", indent.c_str(), range, 0, "-", "-", "-");
    s += line;
  }
  return s;
}

}  // namespace dynamiccl::train

namespace dynamiccl::train {

std::vector<std::string> defaultCalibrationPrefixes() {
  std::vector<std::string> names;
  if (auto known = platforms::registry())
    for (const platforms::Platform& p : (*known)->all())
      if (p.train && p.train->calibrate) names.push_back(p.name);
  return names;
}

Expected<Confidence> measureConfidence(const learned::PolicyWeights& weights, const std::vector<SimSystem>& systems,
                                       const std::vector<const measurements::ReplayData*>& measured, double quantile) {
  learned::PolicyWeights unguarded = weights;
  unguarded.guardMargin.reset();
  auto net = learned::PolicyNetwork::create(std::move(unguarded));
  if (!net) return makeError(net.error());
  Confidence c;
  c.quantile = quantile;
  for (const SimSystem& sys : systems)
    for (double congestion : {0.0, 1.0}) {
      const auto g = simulatedGains(**net, sys, congestion);
      c.gains.insert(c.gains.end(), g.begin(), g.end());
    }
  for (const measurements::ReplayData* d : measured) {
    const auto g = measuredGains(**net, *d);
    c.gains.insert(c.gains.end(), g.begin(), g.end());
  }
  if (c.gains.empty()) return makeError("no calibration keys (no calibration machine or measurement)");
  c.logError = gainError(c.gains, quantile);
  c.margin = marginForError(c.logError);
  // The covariance's scale: the same quantile of the error in units of the key's standard deviation.
  std::vector<double> z;
  for (const GainPair& g : c.gains)
    if (g.changes && g.sdLog > 0 && g.predicted > 0 && g.observed > 0)
      z.push_back(std::abs(std::log(g.predicted / g.observed)) / g.sdLog);
  if (!z.empty()) {
    std::sort(z.begin(), z.end());
    const double q = z[std::min(z.size() - 1, static_cast<size_t>(quantile * static_cast<double>(z.size())))];
    if (std::isfinite(q) && q > 0) c.covarianceScale = q / std::max(1e-3, static_cast<double>(weights.keyErrorSigmas));
  }
  return c;
}

void applyConfidence(learned::PolicyWeights& weights, Confidence& confidence) {
  weights.guardMargin = confidence.margin;
  const double scale = confidence.covarianceScale;
  if (!(scale > 0)) {
    weights.lastLayerCovariance.clear();
    for (GainPair& g : confidence.gains) g.sdLog = 0;
    return;
  }
  for (float& v : weights.lastLayerCovariance) v = static_cast<float>(v * scale * scale);
  for (GainPair& g : confidence.gains) g.sdLog *= scale;
}

}  // namespace dynamiccl::train

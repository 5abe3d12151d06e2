#include "offline/tune/evidence.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>

namespace dynamiccl::tune {

std::string_view findingName(Finding v) {
  switch (v) {
    case Finding::Faster: return "faster";
    case Finding::NotFaster: return "not-faster";
    case Finding::Undecided: return "undecided";
    case Finding::NoiseUnknown: return "noise-unknown";
  }
  return "?";
}

namespace {

constexpr double kNoiseFloor = 0.005;  // a few identical repeats must not claim perfect certainty
constexpr int kMaxRepeats = 100000;

struct Noise {
  double sigma = 0, df = 0;  // per-sample sd of log time, and the degrees of freedom behind it
  const char* source = "none";
};

// The same candidate (configuration and arm) at another key; index 0 is always the default.
const ConfigStats* sameArm(const KeyResult& k, const ConfigStats& s) {
  for (size_t j = 1; j < k.evaluated.size(); ++j)
    if (k.evaluated[j].config == s.config && k.evaluated[j].arm == s.arm) return &k.evaluated[j];
  return nullptr;
}

// Per-sample variance of log time from repeats at several sizes: their pooled variance, unless one
// size's glitch dominates it (a 94 us run among 54 us ones): then the median of the per-size variances,
// each made median-unbiased (divided by the median of chi2_k / k), so an outlier at a neighbouring size
// cannot mask the evidence at this one.
struct SpreadPool {
  double ss = 0, df = 0;
  std::vector<double> medianUnbiased;
  bool stated = false;  // some of it is the spread the data state of the runs behind a sample
  void add(const std::vector<double>& samples_us) {
    if (samples_us.size() < 2) return;
    addSpread(logSumSquares(samples_us), static_cast<double>(samples_us.size() - 1));
  }
  void addSpread(double v, double k) {
    ss += v, df += k;
    medianUnbiased.push_back(v / chiSquareQuantile(0.5, k));
  }
  void add(const ConfigStats& s) {
    add(s.samples_us);
    if (s.statedDof > 0) addSpread(s.statedSumSquares, s.statedDof), stated = true;
  }
  double variance() {
    const double pooled = ss / df;
    if (medianUnbiased.size() < 3) return pooled;
    std::nth_element(medianUnbiased.begin(), medianUnbiased.begin() + medianUnbiased.size() / 2, medianUnbiased.end());
    return std::min(pooled, medianUnbiased[medianUnbiased.size() / 2]);
  }
};

// Three repeats or more at this size: their own spread, with their own degrees of freedom (Student's t
// pays for how few they are). Fewer: over keys [i - P, i + P], this arm's repeats, else every arm's
// (noise is relative, and neighbouring sizes of one communicator share its sources).
constexpr int kOwnNoiseRepeats = 3;
Noise noiseOf(const std::vector<KeyResult>& keys, int i, const ConfigStats& s, bool isDefault, int P) {
  if (s.count() >= kOwnNoiseRepeats)
    return {std::max(std::sqrt(logSumSquares(s.samples_us) / (s.count() - 1)), kNoiseFloor),
            static_cast<double>(s.count() - 1), "repeats"};
  const int lo = std::max(0, i - P), hi = std::min(static_cast<int>(keys.size()) - 1, i + P);
  SpreadPool own;
  for (int j = lo; j <= hi; ++j) {
    const ConfigStats* x = j == i ? &s : isDefault ? &keys[j].keep() : sameArm(keys[j], s);
    if (x) own.add(*x);
  }
  if (own.df > 0)
    return {std::max(std::sqrt(own.variance()), kNoiseFloor), own.df,
            own.stated ? "runs the rows state" : s.count() >= 2 ? "repeats" : "repeats at neighbouring sizes"};
  SpreadPool every;
  for (int j = lo; j <= hi; ++j)
    for (const ConfigStats& x : keys[j].evaluated) every.add(x);
  if (every.df > 0) return {std::max(std::sqrt(every.variance()), kNoiseFloor), every.df, "repeats of other configurations"};
  return {};
}

struct Diff {
  bool ok = false;
  double d = 0, se = 0, df = 0;  // log(chosen/default), its standard error, Welch degrees of freedom
  Noise c, dflt;
};

// c: the candidate at key j (nullptr where it was not measured).
Diff diffAt(const std::vector<KeyResult>& keys, int j, const ConfigStats* c, int P) {
  Diff r;
  const ConfigStats& d = keys[j].keep();
  if (!c || c->count() == 0 || d.count() == 0) return r;
  r.c = noiseOf(keys, j, *c, false, P);
  r.dflt = noiseOf(keys, j, d, true, P);
  r.d = meanLog(c->samples_us) - meanLog(d.samples_us);
  if (r.c.df == 0 || r.dflt.df == 0) return r;
  const double vc = r.c.sigma * r.c.sigma / c->count(), vd = r.dflt.sigma * r.dflt.sigma / d.count();
  r.se = std::sqrt(vc + vd);
  r.df = (vc + vd) * (vc + vd) / (vc * vc / r.c.df + vd * vd / r.dflt.df);
  r.ok = true;
  return r;
}

}  // namespace

PointEvidence assessCandidate(const std::vector<KeyResult>& keys, int i, int e, const DecisionRule& rule) {
  const KeyResult& k = keys[i];
  const ConfigStats& cand = k.evaluated[e];
  PointEvidence ev;
  ev.coll = k.key.coll;
  ev.bytes = k.key.bytes;
  ev.config = cand.config;
  ev.arm = cand.arm;
  ev.samples = cand.count();
  ev.defaultSamples = k.keep().count();
  const int P = std::max(0, rule.poolNeighbours);
  const Diff here = diffAt(keys, i, &cand, P);
  ev.ratio = ev.pooledRatio = std::exp(here.d);
  ev.noise = here.c.sigma;
  ev.defaultNoise = here.dflt.sigma;
  ev.noiseSource = here.c.df > 0 && here.dflt.df > 0 ? here.c.source : "none";
  if (!here.ok) {
    ev.finding = Finding::NoiseUnknown;
    ev.ratioLower = 0, ev.ratioUpper = std::numeric_limits<double>::infinity();
    ev.repeatsToDecide = 2;  // a second repeat of each arm gives the first noise estimate
    return ev;
  }
  ev.ratioSe = here.se;
  const policy::Judgement alone = policy::judge(here.d, here.se, here.df, rule);
  ev.aloneUpper = std::exp(alone.upper);
  ev.aloneFaster = alone.faster;
  // Widest window of neighbouring sizes whose log ratios agree (Cochran's Q at 95%) pools its evidence.
  for (int w = P; w >= 0; --w) {
    std::vector<Diff> ds;
    for (int j = std::max(0, i - w); j <= std::min(static_cast<int>(keys.size()) - 1, i + w); ++j) {
      const Diff x = j == i ? here : diffAt(keys, j, sameArm(keys[j], cand), P);
      if (x.ok) ds.push_back(x);
    }
    double sw = 0, swd = 0, df = std::numeric_limits<double>::infinity();
    for (const Diff& x : ds) sw += 1 / (x.se * x.se), swd += x.d / (x.se * x.se), df = std::min(df, x.df);
    const double mean = swd / sw;
    double q = 0;
    for (const Diff& x : ds) q += (x.d - mean) * (x.d - mean) / (x.se * x.se);
    if (ds.size() > 1 && q > chiSquareQuantile(0.95, static_cast<double>(ds.size() - 1))) continue;
    const double se = 1 / std::sqrt(sw);
    const policy::Judgement j = policy::judge(mean, se, df, rule);
    ev.pooledSizes = static_cast<int>(ds.size());
    ev.pooledRatio = std::exp(mean);
    ev.ratioUpper = std::exp(j.upper);
    ev.ratioLower = std::exp(j.lower);
    ev.faster = j.faster;
    ev.winProbability = standardNormalCdf(-mean / std::max(se, 1e-9));
    break;
  }
  const double threshold = 1 - rule.minGain;
  if (ev.faster) ev.finding = Finding::Faster;
  else if (!(ev.pooledRatio < threshold)) ev.finding = Finding::NotFaster;
  else {
    ev.finding = Finding::Undecided;
    // Repeats per arm at this size alone that detect the estimated gain with the rule's power.
    const double effect = std::log(threshold) - std::log(ev.pooledRatio);
    const double z = normalQuantile(rule.confidence) + normalQuantile(rule.power);
    const double n = z * z * (here.c.sigma * here.c.sigma + here.dflt.sigma * here.dflt.sigma) / (effect * effect);
    ev.repeatsToDecide = static_cast<int>(std::min<double>(kMaxRepeats, std::ceil(n)));
  }
  return ev;
}

namespace {
// To 0.01%, as a profile stores it: a table printing these figures prints what the file holds.
double asStored(double gain) { return std::isfinite(gain) ? std::round(gain * 10000) / 10000 : gain; }
GainInterval stored(double gain, double low, double high) { return {asStored(gain), asStored(low), asStored(high)}; }
}  // namespace

GainInterval gainInterval(const PointEvidence& e) {
  return stored(1 / e.pooledRatio - 1, 1 / e.ratioUpper - 1, 1 / e.ratioLower - 1);
}

GainInterval gainInterval(const std::vector<PointEvidence>& sizes) {
  if (sizes.empty()) return {};
  GainInterval g{0, std::numeric_limits<double>::infinity(), -1};
  double logGain = 0;
  for (const PointEvidence& e : sizes) {
    const GainInterval one = gainInterval(e);
    logGain += std::log1p(one.gain);
    g.low = std::min(g.low, one.low);
    g.high = std::max(g.high, one.high);
  }
  return stored(std::expm1(logGain / static_cast<double>(sizes.size())), g.low, g.high);
}

std::vector<PointEvidence> bestCandidates(const std::vector<KeyResult>& keys, const DecisionRule& rule) {
  std::vector<PointEvidence> out;
  for (int i = 0; i < static_cast<int>(keys.size()); ++i) {
    PointEvidence best;
    best.coll = keys[i].key.coll;
    best.bytes = keys[i].key.bytes;
    best.defaultSamples = keys[i].keep().count();
    best.finding = Finding::NotFaster;
    bool any = false;
    for (int e : keys[i].ranking(keys[i].fullIterations)) {
      if (e == 0 || (keys[i].ncclRan && keys[i].evaluated[e].config == *keys[i].ncclRan)) continue;
      PointEvidence ev = assessCandidate(keys, i, e, rule);
      const auto rank = [](const PointEvidence& p) { return p.finding == Finding::Faster ? 0 : 1; };
      if (!any || rank(ev) < rank(best) || (rank(ev) == rank(best) && ev.pooledRatio < best.pooledRatio))
        best = ev, any = true;
    }
    out.push_back(best);
  }
  return out;
}

std::string describe(const PointEvidence& e) {
  char buf[400];
  const std::string what = e.config.keepsAlgoProto() ? std::string("no candidate")
                                                     : decisionLabel(e.config) + (e.arm.empty() ? "" : " (" + e.arm + ")");
  std::snprintf(buf, sizeof buf, "%-13s %6s  %-46s chosen/default %.3f [%.3f, %.3f] n=%d/%d noise %.1f%%/%.1f%% pooled %d  %s",
                std::string(collectiveName(e.coll)).c_str(), sizeText(e.bytes).c_str(), what.c_str(), e.pooledRatio,
                e.ratioLower, e.ratioUpper, e.samples, e.defaultSamples, 100 * e.noise, 100 * e.defaultNoise,
                e.pooledSizes, std::string(findingName(e.finding)).c_str());
  std::string s = buf;
  if (e.finding == Finding::Undecided || e.finding == Finding::NoiseUnknown)
    s += " (" + std::to_string(e.repeatsToDecide) + " repeats of each would decide)";
  if (e.chosen) s += "  <- rule";
  return s;
}

std::string evidenceCsv(const std::vector<PointEvidence>& points) {
  std::string out =
      "collective,bytes,config,arm,samples,default_samples,ratio,ratio_se,noise,default_noise,noise_source,"
      "pooled_sizes,pooled_ratio,ratio_lower,ratio_upper,win_probability,verdict,repeats_to_decide,chosen\n";
  char buf[512];
  for (const PointEvidence& e : points) {
    std::snprintf(buf, sizeof buf, "%s,%llu,%s,\"%s\",%d,%d,%.6g,%.6g,%.6g,%.6g,%s,%d,%.6g,%.6g,%.6g,%.4f,%s,%d,%d\n",
                  std::string(collectiveName(e.coll)).c_str(), static_cast<unsigned long long>(e.bytes),
                  decisionLabel(e.config).c_str(), e.arm.c_str(), e.samples, e.defaultSamples, e.ratio, e.ratioSe, e.noise,
                  e.defaultNoise, e.noiseSource.c_str(), e.pooledSizes, e.pooledRatio, e.ratioLower, e.ratioUpper,
                  e.winProbability, std::string(findingName(e.finding)).c_str(), e.repeatsToDecide, e.chosen ? 1 : 0);
    out += buf;
  }
  return out;
}

}  // namespace dynamiccl::tune

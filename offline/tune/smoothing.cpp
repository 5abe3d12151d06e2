#include "offline/tune/smoothing.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dynamiccl::tune {

bool beatsBeyondNoise(const ConfigStats& c, const ConfigStats& d, const SmoothingOptions& o) {
  if (c.count() == 0 || d.count() == 0) return false;
  KeyResult k;
  k.evaluated = {d, c};
  return assessCandidate({k}, 0, 1, o).finding == Finding::Faster;
}

std::vector<TunedInterval> smoothDecisions(const std::vector<KeyResult>& keys, const SmoothingOptions& o,
                                           std::vector<Config>* chosenPerKey,
                                           std::vector<PointEvidence>* evidencePerKey) {
  const int n = static_cast<int>(keys.size());
  std::vector<TunedInterval> out;
  if (n == 0) return out;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // States per key: the default (always index 0) and every fully measured config the rule lets in.
  struct State { Config config; int stats; double cost; PointEvidence evidence; };
  std::vector<std::vector<State>> states(n);
  for (int i = 0; i < n; ++i) {
    const KeyResult& k = keys[i];
    std::vector<State>& s = states[i];
    s.push_back({keepDefault(), 0, 0, {}});
    for (int e : k.ranking(k.fullIterations)) {
      if (e == 0) continue;
      if (k.ncclRan && k.evaluated[e].config == *k.ncclRan) continue;  // what NCCL runs anyway: no rule
      PointEvidence ev = assessCandidate(keys, i, e, o);
      if (ev.finding == Finding::Faster) s.push_back({k.evaluated[e].config, e, 0, std::move(ev)});
    }
    double lo = kInf;
    for (State& st : s) lo = std::min(lo, k.evaluated[st.stats].median_us());
    for (State& st : s) st.cost = std::log(k.evaluated[st.stats].median_us() / lo);
  }
  // Viterbi over sizes: total regret + switchPenalty per change of configuration.
  std::vector<std::vector<double>> total(n);
  std::vector<std::vector<int>> from(n);
  for (int i = 0; i < n; ++i) {
    total[i].assign(states[i].size(), kInf);
    from[i].assign(states[i].size(), -1);
    for (size_t j = 0; j < states[i].size(); ++j) {
      if (i == 0) {
        total[i][j] = states[i][j].cost;
        continue;
      }
      for (size_t p = 0; p < states[i - 1].size(); ++p) {
        const double sw = states[i - 1][p].config == states[i][j].config ? 0.0 : o.switchPenalty;
        const double t = total[i - 1][p] + sw + states[i][j].cost;
        if (t < total[i][j]) total[i][j] = t, from[i][j] = static_cast<int>(p);
      }
    }
  }
  std::vector<int> pick(n);
  pick[n - 1] = static_cast<int>(std::min_element(total[n - 1].begin(), total[n - 1].end()) - total[n - 1].begin());
  for (int i = n - 1; i > 0; --i) pick[i - 1] = from[i][pick[i]];
  if (chosenPerKey) {
    chosenPerKey->clear();
    for (int i = 0; i < n; ++i) chosenPerKey->push_back(states[i][pick[i]].config);
  }
  if (evidencePerKey) {
    *evidencePerKey = bestCandidates(keys, o);
    for (int i = 0; i < n; ++i)
      if (pick[i] != 0) (*evidencePerKey)[i] = states[i][pick[i]].evidence, (*evidencePerKey)[i].chosen = true;
  }
  // Merge runs of the same configuration into intervals.
  for (int i = 0; i < n;) {
    int j = i;
    const Config c = states[i][pick[i]].config;
    double conf = 0;
    int samples = 0, defaultSamples = 0;
    std::vector<PointEvidence> sizes;
    for (; j < n && states[j][pick[j]].config == c; ++j) {
      const ConfigStats& s = keys[j].evaluated[states[j][pick[j]].stats];
      const ConfigStats& d = keys[j].keep();
      if (!c.keepsAlgoProto()) conf += states[j][pick[j]].evidence.winProbability;
      sizes.push_back(states[j][pick[j]].evidence);
      samples += s.count();
      defaultSamples += d.count();
    }
    TunedInterval t;
    t.coll = keys[i].key.coll;
    t.minBytes = keys[i].key.bytes;
    const uint64_t last = keys[j - 1].key.bytes;
    t.maxBytes = j < n ? keys[j].key.bytes - 1 : (last > UINT64_MAX / 2 ? UINT64_MAX : 2 * last - 1);
    if (last == 0 && j == n) t.maxBytes = 0;
    t.config = c;
    t.sizes = j - i;
    t.confidence = c.keepsAlgoProto() ? 0 : conf / t.sizes;
    const GainInterval g = gainInterval(sizes);  // the decision's own bounds, not a second estimate
    t.gain = g.gain, t.gainLow = g.low, t.gainHigh = g.high;
    t.samples = samples;
    t.defaultSamples = defaultSamples;
    out.push_back(t);
    i = j;
  }
  return out;
}

SmoothedResult smoothAll(const TuneResult& result, const SmoothingOptions& o) {
  SmoothedResult out;
  for (const CollectiveResult& cr : result.collectives) {
    out.chosenPerCollective.emplace_back();
    out.evidencePerCollective.emplace_back();
    const auto iv = smoothDecisions(cr.keys, o, &out.chosenPerCollective.back(), &out.evidencePerCollective.back());
    out.intervals.insert(out.intervals.end(), iv.begin(), iv.end());
  }
  return out;
}

}  // namespace dynamiccl::tune

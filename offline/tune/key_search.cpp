#include "offline/tune/key_search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "offline/tune/hyperband.h"

namespace dynamiccl::tune {

const ConfigStats* KeyResult::find(const Config& c) const {
  for (const ConfigStats& s : evaluated)
    if (s.config == c) return &s;
  return nullptr;
}

std::vector<int> KeyResult::ranking(int minSamples) const {
  std::vector<int> idx;
  for (int i = 0; i < static_cast<int>(evaluated.size()); ++i)
    if (evaluated[i].count() >= minSamples) idx.push_back(i);
  std::vector<double> med(evaluated.size());
  for (int i : idx) med[i] = evaluated[i].median_us();
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return med[a] < med[b]; });
  return idx;
}

namespace {

class KeySearch {
 public:
  KeySearch(MeasurementBackend& backend, const MeasureKey& key, const SearchSpace& space, const SearchOptions& o,
            const ProgressFn& progress)
      : backend_(backend), space_(space), o_(o), progress_(progress), rng_(o.seed) {
    r_.key = key;
    const int cap = backend.maxSamplesPerConfig();
    full_ = cap > 0 ? std::min(cap, o.maxIterations) : o.maxIterations;
    r_.fullIterations = full_;
    tried_.assign(space.size(), false);
  }

  bool outOfBudget() const { return o_.budgetIterations > 0 && r_.spentIterations >= o_.budgetIterations; }

  // Brings a configuration to `target` samples (reusing those it has). Returns its index, -1 on failure.
  int topUp(const Config& c, int target) {
    auto it = index_.find(c);
    if (it == index_.end()) {
      const int sp = space_.indexOf(c);
      if (sp >= 0) tried_[sp] = true;
      if (!c.keepsAlgoProto() && !backend_.available(c, r_.key)) return -1;
      r_.evaluated.push_back(ConfigStats{c, {}});
      it = index_.emplace(c, static_cast<int>(r_.evaluated.size()) - 1).first;
    }
    ConfigStats& s = r_.evaluated[it->second];
    if (const int cap = backend_.maxSamplesPerConfig(); cap > 0) target = std::min(target, cap);
    const int need = target - s.count();
    if (need <= 0 || outOfBudget()) return it->second;
    auto samples = backend_.measure(c, r_.key, need);
    if (!samples || samples->empty()) {
      if (s.count() == 0) dropLast(it);
      return -1;
    }
    s.samples_us.insert(s.samples_us.end(), samples->begin(), samples->end());
    r_.spentIterations += static_cast<int64_t>(samples->size());
    updateIncumbent();
    r_.trace.push_back({r_.spentIterations, r_.evaluated[r_.incumbent].config});
    if (progress_) progress_(r_.spentIterations);
    return it->second;
  }

  Status run(const std::vector<Config>& warmStart) {
    if (topUp(keepDefault(), o_.maxIterations) != 0) return makeError("cannot measure NCCL's default at " +
                                                                      std::to_string(r_.key.bytes) + " B");
    switch (o_.method) {
      case SearchMethod::Grid:
        for (int i = 0; i < space_.size() && !outOfBudget(); ++i) topUp(space_.config(i), o_.maxIterations);
        break;
      case SearchMethod::Random: {
        std::vector<int> order(space_.size());
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng_);
        for (int i : order) {
          if (outOfBudget()) break;
          topUp(space_.config(i), o_.maxIterations);
        }
        break;
      }
      case SearchMethod::TpeHyperband: runTpeHyperband(warmStart); break;
    }
    confirm();
    return Ok{};
  }

  KeyResult take() { return std::move(r_); }

 private:
  void dropLast(std::map<Config, int>::iterator it) {
    index_.erase(it);
    r_.evaluated.pop_back();
  }

  void updateIncumbent() {
    // Only fully measured configurations can be the incumbent: a lucky single sample must not win.
    int best = 0;
    double bestMed = r_.evaluated[0].median_us();
    for (int i = 1; i < static_cast<int>(r_.evaluated.size()); ++i) {
      const ConfigStats& s = r_.evaluated[i];
      if (s.count() < full_) continue;
      const double m = s.median_us();
      if (m < bestMed) best = i, bestMed = m;
    }
    r_.incumbent = best;
  }

  std::vector<std::pair<int, double>> observations() const {
    // Each configuration's latest estimate; medians at low fidelity are noisier but unbiased.
    std::vector<std::pair<int, double>> obs;
    for (const ConfigStats& s : r_.evaluated) {
      const int sp = space_.indexOf(s.config);
      if (sp >= 0 && s.count() > 0) obs.emplace_back(sp, std::log(s.median_us()));
    }
    return obs;
  }

  void runTpeHyperband(const std::vector<Config>& warmStart) {
    TpeSampler tpe(space_, o_.tpe, o_.seed * 7919 + 17);
    std::vector<std::pair<int, double>> prior;
    double weight = 4.0;  // the neighbour's winner counts as several good observations
    for (const Config& c : warmStart) {
      if (outOfBudget()) break;
      const int sp = space_.indexOf(c);
      if (sp < 0) continue;
      topUp(c, o_.maxIterations);
      prior.emplace_back(sp, weight);
      weight = std::max(1.0, weight / 2);
    }
    tpe.setPrior(prior);
    const int patience = prior.empty() ? o_.patienceBrackets : o_.warmPatienceBrackets;
    const std::vector<HyperbandBracket> brackets = hyperbandBrackets(o_.maxIterations, o_.eta);
    double bestSoFar = r_.evaluated[r_.incumbent].median_us();
    int stale = 0;
    for (size_t b = 0; !outOfBudget(); ++b) {
      const HyperbandBracket& bracket = brackets[b % brackets.size()];
      std::vector<int> survivors = tpe.propose(bracket.rungs[0].configs, observations(), tried_);
      if (survivors.empty()) {  // every configuration has been tried
        r_.converged = true;
        break;
      }
      for (size_t i = 0; i < bracket.rungs.size() && !survivors.empty() && !outOfBudget(); ++i) {
        std::vector<std::pair<double, int>> scored;
        for (int sp : survivors) {
          const int e = topUp(space_.config(sp), bracket.rungs[i].iterations);
          if (e >= 0) scored.emplace_back(r_.evaluated[e].median_us(), sp);
        }
        std::sort(scored.begin(), scored.end());
        const size_t keepN = i + 1 < bracket.rungs.size() ? static_cast<size_t>(bracket.rungs[i + 1].configs) : 0;
        survivors.clear();
        for (size_t j = 0; j < scored.size() && j < keepN; ++j) survivors.push_back(scored[j].second);
      }
      ++r_.brackets;
      const double now = r_.evaluated[r_.incumbent].median_us();
      if (now < bestSoFar * (1.0 - o_.convergeTol)) {
        bestSoFar = now;
        stale = 0;
      } else if (++stale >= patience) {
        r_.converged = true;
        break;
      }
    }
  }

  // Re-measures the leaders and the default with more repeats so the guard compares like with like.
  void confirm() {
    const int target = o_.confirmIterations > 0 ? o_.confirmIterations : 2 * o_.maxIterations;
    const std::vector<int> rank = r_.ranking(full_);
    std::vector<Config> leaders;
    for (int i : rank) {
      if (static_cast<int>(leaders.size()) >= o_.confirmTop) break;
      if (i != 0) leaders.push_back(r_.evaluated[i].config);
    }
    o_.budgetIterations = 0;  // confirmation is outside the search budget cap
    topUp(keepDefault(), target);
    for (const Config& c : leaders) topUp(c, target);
    updateIncumbent();
  }

  MeasurementBackend& backend_;
  const SearchSpace& space_;
  SearchOptions o_;
  const ProgressFn& progress_;
  std::mt19937_64 rng_;
  KeyResult r_;
  std::map<Config, int> index_;
  std::vector<bool> tried_;
  int full_ = 1;  // samples that make a full evaluation (the backend may hold fewer, e.g. replay)
};

}  // namespace

Expected<KeyResult> searchKey(MeasurementBackend& backend, const MeasureKey& key, const SearchSpace& space,
                              const SearchOptions& options, const std::vector<Config>& warmStart,
                              const ProgressFn& progress) {
  SearchOptions o = options;
  KeySearch search(backend, key, space, o, progress);
  Status st = search.run(warmStart);
  if (!st) return makeError(st.error());
  return search.take();
}

}  // namespace dynamiccl::tune

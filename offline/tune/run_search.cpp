#include "offline/tune/run_search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>

namespace dynamiccl::tune {
namespace {

constexpr double kNoiseFloor = 0.005;  // as the decision rule's: identical repeats claim no certainty
constexpr int kMaxRunsPerConfig = 12;  // two arms that truly tie never settle: stop paying for them

// One collective's race: per size a KeyResult (arm 0 = NCCL's default), per candidate its runs.
class Race {
 public:
  Race(const MeasurementBackend& backend, Collective coll, std::vector<uint64_t> sizes, const SearchSpace& space,
       const RunSearchOptions& o)
      : backend_(backend), coll_(coll), sizes_(std::move(sizes)), o_(o) {
    for (uint64_t b : sizes_) {
      KeyResult k;
      k.key = MeasureKey{coll, b, backend.nRanks(), backend.nNodes()};
      k.evaluated.push_back(ConfigStats{keepDefault(), {}});
      k.fullIterations = 1;  // one run is a full sample of an arm at every size it covers
      k.spentIterations = 0;
      keys_.push_back(std::move(k));
    }
    for (int i = 0; i < space.size(); ++i) {
      const Config c = space.config(i);
      bool anywhere = false;
      for (const KeyResult& k : keys_) anywhere = anywhere || backend.available(c, k.key);
      if (anywhere) candidates_.push_back(c);
    }
    orderByPrior();
  }

  int candidates() const { return static_cast<int>(candidates_.size()); }
  int candidatesRun() const {
    int n = 0;
    for (const Config& c : candidates_) n += runs_.count(c) > 0;
    return n;
  }
  int runsOf(const Config& c) const {
    const auto it = runs_.find(c);
    return it == runs_.end() ? 0 : it->second;
  }
  std::vector<KeyResult>& keys() { return keys_; }

  Status record(const Config& c, const RunOutput& out) {
    int covered = 0;
    for (KeyResult& k : keys_) {
      const auto it = out.times_us.find(k.key.bytes);
      if (it == out.times_us.end() || it->second.empty()) continue;
      if (!c.keepsAlgoProto() && !backend_.available(c, k.key)) continue;  // NCCL ran its own choice there
      // One sample per run and size: the median of its cycles (cycles share a job, runs do not).
      const double t = median(it->second);
      ConfigStats* s = find(k, c);
      if (!s) {
        k.evaluated.push_back(ConfigStats{c, {}});
        s = &k.evaluated.back();
      }
      s->samples_us.push_back(t);
      ++k.spentIterations;
      ++covered;
      if (c.keepsAlgoProto())
        if (const auto ran = out.ncclRan.find(k.key.bytes); ran != out.ncclRan.end()) k.ncclRan = ran->second;
    }
    ++runs_[c];
    if (covered == 0) return makeError("the run printed no time for any size of the sweep");
    return Ok{};
  }

  // A run that failed counts as the candidate's run: it is not tried again and then again.
  void noteFailed(const Config& c) { ++runs_[c]; }

  // Next candidate never run whose prior does not rule it out, or nullopt.
  std::optional<Config> nextUntried() {
    for (const Config& c : candidates_)
      if (!runs_.count(c) && !priorRulesOut(c) && !ncclRunsItEverywhere(c)) return c;
    return std::nullopt;
  }
  int skippedByPrior() const {
    int n = 0;
    for (const Config& c : candidates_) n += !runs_.count(c) && priorRulesOut(c) && !ncclRunsItEverywhere(c);
    return n;
  }

  // Where the rule stands at each size, and which arms another run would help.
  std::vector<SizeStatus> status(std::map<Config, int>* wanted) const {
    std::vector<SizeStatus> out;
    const bool untried = std::any_of(candidates_.begin(), candidates_.end(),
                                     [&](const Config& c) {
                                       return !runs_.count(c) && !priorRulesOut(c) && !ncclRunsItEverywhere(c);
                                     });
    for (int i = 0; i < static_cast<int>(keys_.size()); ++i) {
      const KeyResult& k = keys_[i];
      SizeStatus st{coll_, k.key.bytes, false, "", 0};
      std::vector<int> alive = aliveAt(i);
      st.survivors = static_cast<int>(alive.size());
      auto want = [&](const Config& c) {
        if (wanted && runsOf(c) < kMaxRunsPerConfig) ++(*wanted)[c];
      };
      if (k.keep().count() < 2) {
        st.why = "NCCL's default needs 2 runs";
        want(keepDefault());
        out.push_back(st);
        continue;
      }
      // The fastest survivor and every survivor's finding against NCCL's default.
      int best = -1;
      bool anyOpen = false, allNotFaster = true;
      for (int e : alive) {
        const PointEvidence ev = assessCandidate(keys_, i, e, o_.rule);
        if (ev.finding != Finding::NotFaster) allNotFaster = false;
        if (ev.finding == Finding::Undecided || ev.finding == Finding::NoiseUnknown) anyOpen = true;
        if (ev.finding == Finding::Faster && (best < 0 || meanLog(k.evaluated[e].samples_us) <
                                                              meanLog(k.evaluated[best].samples_us)))
          best = e;
      }
      if (untried) {
        st.why = "candidates not yet run";
      } else if (allNotFaster) {
        st.decided = true;
        st.why = "default stands";
      } else if (best >= 0 && othersCannotBeat(i, best, alive)) {
        st.decided = true;
        st.why = "faster: " + decisionLabel(k.evaluated[best].config);
      } else {
        st.why = std::to_string(alive.size()) + " survivor(s) undecided";
        for (int e : alive) want(k.evaluated[e].config);
        if (anyOpen) want(keepDefault());
      }
      out.push_back(st);
    }
    return out;
  }

 private:
  static ConfigStats* find(KeyResult& k, const Config& c) {
    for (ConfigStats& s : k.evaluated)
      if (s.config == c) return &s;
    return nullptr;
  }

  // Per-sample noise (log sd) at size i: every arm's repeats at sizes i-P..i+P, as the rule pools them.
  std::pair<double, double> noiseAt(int i) const {
    const int P = std::max(0, o_.rule.poolNeighbours);
    double ss = 0, df = 0;
    for (int j = std::max(0, i - P); j <= std::min(static_cast<int>(keys_.size()) - 1, i + P); ++j)
      for (const ConfigStats& x : keys_[j].evaluated)
        if (x.count() >= 2) ss += logSumSquares(x.samples_us), df += x.count() - 1;
    if (df == 0) return {0, 0};
    return {std::max(std::sqrt(ss / df), kNoiseFloor), df};
  }

  // Lower confidence bound of log(a / b) at size i (-inf when the noise is unknown).
  double lowerLogRatio(int i, const ConfigStats& a, const ConfigStats& b) const {
    const auto [sigma, df] = noiseAt(i);
    if (df == 0) return -std::numeric_limits<double>::infinity();
    const double d = meanLog(a.samples_us) - meanLog(b.samples_us);
    const double se = sigma * std::sqrt(1.0 / a.count() + 1.0 / b.count());
    return d - studentTQuantile(o_.rule.confidence, df) * se;
  }

  // Candidates at size i not beyond noise slower than its incumbent (the fastest arm, default included),
  // less the one NCCL's default itself runs there (forcing it is no rule).
  std::vector<int> aliveAt(int i) const {
    const KeyResult& k = keys_[i];
    int inc = 0;
    for (int e = 1; e < static_cast<int>(k.evaluated.size()); ++e)
      if (k.evaluated[e].count() > 0 && (k.evaluated[inc].count() == 0 ||
                                         meanLog(k.evaluated[e].samples_us) < meanLog(k.evaluated[inc].samples_us)))
        inc = e;
    std::vector<int> alive;
    for (int e = 1; e < static_cast<int>(k.evaluated.size()); ++e) {
      const ConfigStats& s = k.evaluated[e];
      if (s.count() == 0 || (k.ncclRan && s.config == *k.ncclRan)) continue;
      if (e == inc || !(lowerLogRatio(i, s, k.evaluated[inc]) > 0)) alive.push_back(e);
    }
    return alive;
  }

  // No other survivor could beat `best` at size i by the rule's min-gain.
  bool othersCannotBeat(int i, int best, const std::vector<int>& alive) const {
    const double margin = std::log(1 - o_.rule.minGain);
    for (int e : alive)
      if (e != best && !(lowerLogRatio(i, keys_[i].evaluated[e], keys_[i].evaluated[best]) >= margin)) return false;
    return true;
  }

  double priorRegret(const Config& c, const KeyResult& k) const {
    const double best = priorBest_.at(k.key.bytes);
    return std::log(o_.prior(c, k.key) / best);
  }

  // NCCL's default runs it at every size (its TUNING lines say so): forcing it is no rule anywhere.
  bool ncclRunsItEverywhere(const Config& c) const {
    for (const KeyResult& k : keys_)
      if (!k.ncclRan || !(*k.ncclRan == c)) return false;
    return true;
  }

  // Predicted at least priorSkipRatio slower than NCCL's default at every size: it cannot win the
  // rule there unless the prior is off by that factor. (Against NCCL's default, which is measured,
  // not the prior's own best, which may be a configuration the prior alone believes in.)
  bool priorRulesOut(const Config& c) const {
    if (!o_.prior || std::find(o_.preferred.begin(), o_.preferred.end(), c) != o_.preferred.end()) return false;
    const double limit = std::log(o_.priorSkipRatio);
    for (const KeyResult& k : keys_) {
      if (!backend_.available(c, k.key)) continue;
      const double d = o_.prior(keepDefault(), k.key);
      if (!(d > 0 && std::isfinite(d)) || !(std::log(o_.prior(c, k.key) / d) >= limit)) return false;
    }
    return true;
  }

  // Preferred configurations first, then ascending best predicted regret over the sizes, then mean regret.
  void orderByPrior() {
    if (o_.prior)
      for (const KeyResult& k : keys_) {
        double best = o_.prior(keepDefault(), k.key);
        for (const Config& c : candidates_)
          if (backend_.available(c, k.key)) best = std::min(best, o_.prior(c, k.key));
        priorBest_[k.key.bytes] = best > 0 && std::isfinite(best) ? best : 1.0;
      }
    std::map<Config, std::pair<double, double>> score;
    for (const Config& c : candidates_) {
      double lo = std::numeric_limits<double>::infinity(), sum = 0;
      int n = 0;
      if (o_.prior)
        for (const KeyResult& k : keys_)
          if (backend_.available(c, k.key)) {
            const double r = priorRegret(c, k);
            if (!std::isfinite(r)) continue;
            lo = std::min(lo, r), sum += r, ++n;
          }
      score[c] = {lo, n ? sum / n : std::numeric_limits<double>::infinity()};
    }
    auto rank = [&](const Config& c) {
      const auto it = std::find(o_.preferred.begin(), o_.preferred.end(), c);
      return static_cast<int>(it - o_.preferred.begin());
    };
    std::stable_sort(candidates_.begin(), candidates_.end(), [&](const Config& a, const Config& b) {
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return score[a] < score[b];
    });
  }

  const MeasurementBackend& backend_;
  Collective coll_;
  std::vector<uint64_t> sizes_;
  const RunSearchOptions& o_;
  std::vector<KeyResult> keys_;
  std::vector<Config> candidates_;
  std::map<Config, int> runs_;
  std::map<uint64_t, double> priorBest_;
};

std::string formatRatio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", x);
  return buf;
}

bool powersOfTwo(const std::vector<uint64_t>& s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == 0 || (s[i] & (s[i] - 1)) || (i > 0 && s[i] != 2 * s[i - 1])) return false;
  return !s.empty();
}

}  // namespace

Expected<RunSearchResult> searchByRuns(const MeasurementBackend& backend, const RunExecutor& run,
                                       const TuneRequest& req, const RunSearchOptions& o) {
  if (!run) return makeError("search by runs: no run executor");
  std::vector<uint64_t> sizes = req.sizes.empty() ? powerOfTwoSizes(1 << 10, 1 << 30) : req.sizes;
  if (!powersOfTwo(sizes)) return makeError("search by runs: sizes must be consecutive powers of two (one nccl-tests sweep, -f 2)");
  RunSearchResult result;
  result.tune.backend = backend.name() + " (search by runs)";
  result.tune.nRanks = backend.nRanks();
  result.tune.nNodes = backend.nNodes();
  result.tune.evidence = evidenceOf(backend);

  std::vector<std::unique_ptr<SearchSpace>> spaces;
  std::vector<std::unique_ptr<Race>> races;
  for (Collective c : req.collectives) {
    // A run covers every size: a configuration is a candidate when it can run at any of them.
    spaces.push_back(std::make_unique<SearchSpace>(req.dimensions, [](const Config&) { return true; }));
    races.push_back(std::make_unique<Race>(backend, c, sizes, *spaces.back(), o));
    result.candidates += races.back()->candidates();
    result.gridRuns += (races.back()->candidates() + 1) * std::max(1, o.gridRepeats);
  }
  const int budget = o.maxRuns > 0 ? o.maxRuns : result.gridRuns;

  auto doRun = [&](size_t ci, const Config& c, const std::string& why) -> Status {
    RunRequest r{req.collectives[ci], sizes.front(), sizes.back(), c, o.iterations, backend.nRanks(), backend.nNodes()};
    auto text = run(r);
    ++result.runsUsed;
    if (!text) {
      races[ci]->noteFailed(c);
      result.log.push_back("run " + std::to_string(result.runsUsed) + " " + decisionLabel(c) + " failed: " + text.error());
      return makeError(text.error());
    }
    Status st = races[ci]->record(c, parseNcclTestsOutput(*text));
    result.log.push_back("run " + std::to_string(result.runsUsed) + " " + std::string(collectiveName(r.coll)) + " " +
                         decisionLabel(c) + ": " + why + (st ? "" : " (" + st.error() + ")"));
    return st;
  };

  for (size_t ci = 0; ci < races.size(); ++ci) {
    Race& race = *races[ci];
    for (int i = 0; i < std::max(2, o.firstDefaultRuns) && result.runsUsed < budget; ++i)
      if (Status st = doRun(ci, keepDefault(), "NCCL's default (noise, incumbents)"); !st && i == 0)
        return makeError("search by runs: NCCL's default could not be measured: " + st.error());
    int failures = 0;  // in a row: a cluster that fails every run is not paid for to the end of the budget
    auto count = [&](const Status& st) { failures = st ? 0 : failures + 1; };
    while (result.runsUsed < budget && failures < 5) {
      if (auto next = race.nextUntried()) {  // first pass, in the prior's order
        count(doRun(ci, *next, "first run (prior order)"));
        continue;
      }
      // Successive halving: the arm the most undecided sizes want, the least-run first.
      std::map<Config, int> wanted;
      race.status(&wanted);
      if (wanted.empty()) break;
      const auto pick = std::max_element(wanted.begin(), wanted.end(), [&](const auto& a, const auto& b) {
        if (a.second != b.second) return a.second < b.second;
        return race.runsOf(a.first) > race.runsOf(b.first);
      });
      count(doRun(ci, pick->first, "repeat for " + std::to_string(pick->second) + " undecided size(s)"));
    }
    const std::vector<SizeStatus> st = race.status(nullptr);
    result.sizes.insert(result.sizes.end(), st.begin(), st.end());
    if (const int skipped = race.skippedByPrior(); skipped > 0)
      result.log.push_back(std::string(collectiveName(req.collectives[ci])) + ": " + std::to_string(skipped) +
                           " candidate(s) never run: the prior predicts them >= " + formatRatio(o.priorSkipRatio) +
                           "x slower than NCCL's default at every size");
    result.candidatesRun += race.candidatesRun();
    CollectiveResult cr;
    cr.coll = req.collectives[ci];
    for (KeyResult& k : race.keys()) {
      if (k.keep().count() == 0) {
        result.tune.undecidable.push_back(std::string(collectiveName(cr.coll)) + " " + sizeText(k.key.bytes) +
                                          ": NCCL's default was not measured");
        continue;
      }
      for (int e = 1; e < static_cast<int>(k.evaluated.size()); ++e)
        if (k.evaluated[e].median_us() < k.evaluated[k.incumbent].median_us()) k.incumbent = e;
      cr.keys.push_back(std::move(k));
    }
    result.tune.collectives.push_back(std::move(cr));
  }
  result.tune.spentIterations = result.runsUsed;
  result.tune.gridIterations = result.gridRuns;
  return result;
}

}  // namespace dynamiccl::tune

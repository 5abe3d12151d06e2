// bench_tune: how many timed iterations TPE + Hyperband (with and without sharing across sizes),
// random and grid search need to come within 2% of the exhaustive grid's best, on simulator
// presets; and the tuned profile's time ratio against NCCL's default (noiseless simulator).
//   bench_tune [--curves curves.csv] [--quick]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "offline/tune/tune.h"

using namespace dynamiccl;
using namespace dynamiccl::tune;

namespace {

struct Case {
  std::string preset;
  int nodes;
  Collective coll;
};

// First spent-iteration count at which the incumbent is within `tol` of the optimum; -1 if never.
int64_t firstHit(const KeyResult& r, const MeasurementBackend& b, double optimum, double tol) {
  for (const TracePoint& t : r.trace)
    if (*b.expected_us(t.incumbent, r.key) <= (1 + tol) * optimum) return t.spentIterations;
  return -1;
}

double regretAt(const KeyResult& r, const MeasurementBackend& b, double optimum, int64_t spent) {
  Config inc = keepDefault();
  for (const TracePoint& t : r.trace)
    if (t.spentIterations <= spent) inc = t.incumbent;
  return *b.expected_us(inc, r.key) / optimum;
}

struct MethodStats {
  std::vector<double> hitFraction;  // first hit / grid cost (1.0 when never)
  int hits = 0, keys = 0;
  std::vector<double> spentFraction;
};

}  // namespace

int main(int argc, char** argv) {
  std::string curvesPath;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--curves") && i + 1 < argc) curvesPath = argv[++i];
    if (!std::strcmp(argv[i], "--quick")) quick = true;
  }
  std::vector<Case> cases = {{"dgx-h100", 1, Collective::AllReduce}, {"dgx-a100", 1, Collective::AllReduce},
                             {"h800", 2, Collective::AllReduce},     {"l40s-pcie-4", 1, Collective::AllReduce},
                             {"dgx-h100", 1, Collective::AllGather}, {"gb200-nvl72", 1, Collective::AllReduce}};
  if (quick) cases.resize(2);
  const std::vector<uint64_t> sizes = powerOfTwoSizes(4 << 10, quick ? (4 << 20) : (256 << 20));
  const std::vector<std::string> methods = {"tpe+hb (shared sizes)", "tpe+hb (cold)", "random", "grid"};
  std::map<std::string, MethodStats> stats;
  std::vector<double> budgetPoints;
  for (double f = 0.002; f <= 1.0001; f *= 1.25) budgetPoints.push_back(f);
  std::map<std::string, std::vector<double>> curveLogSum;  // method -> per budget point, sum of log regret
  int curveKeys = 0;
  double ratioLogSum = 0, ratioWorst = 0, oracleLogSum = 0;
  int ratioKeys = 0, rules = 0;

  std::printf("%-12s %-13s %9s %8s | measurements to within 2%% of the grid's best (%% of grid cost)\n", "preset",
              "collective", "space", "sizes");
  std::printf("%47s | (median over sizes)\n", "");
  for (const Case& c : cases) {
    auto made = makeSimulatorBackend({c.preset, c.nodes, 11, ""});
    if (!made) {
      std::printf("%s: %s\n", c.preset.c_str(), made.error().c_str());
      continue;
    }
    MeasurementBackend& b = **made;
    TuneRequest req;
    req.collectives = {c.coll};
    req.sizes = sizes;
    req.search.seed = 5;
    auto shared = dynamiccl::tune::tune(b, req);
    if (!shared) continue;
    const std::vector<KeyResult>& sharedKeys = shared->collectives[0].keys;
    std::vector<Config> chosen;
    const auto intervals = smoothDecisions(sharedKeys, SmoothingOptions{}, &chosen);
    for (const TunedInterval& t : intervals) rules += t.config.keepsAlgoProto() ? 0 : 1;
    int spaceSize = 0;
    for (size_t i = 0; i < sharedKeys.size(); ++i) {
      const MeasureKey& key = sharedKeys[i].key;
      const SearchSpace space(defaultDimensions(), [&](const Config& cf) { return b.available(cf, key); });
      spaceSize = space.size();
      double optimum = *b.expected_us(keepDefault(), key);
      for (int p = 0; p < space.size(); ++p) optimum = std::min(optimum, *b.expected_us(space.config(p), key));
      const double gridCost = double(space.size() + 1) * req.search.maxIterations;
      const double def = *b.expected_us(keepDefault(), key);
      const double tuned = *b.expected_us(chosen[i], key);
      ratioLogSum += std::log(tuned / def);
      oracleLogSum += std::log(optimum / def);
      ratioWorst = std::max(ratioWorst, tuned / def);
      ++ratioKeys;
      std::map<std::string, KeyResult> runs;
      runs.emplace(methods[0], sharedKeys[i]);
      for (size_t m = 1; m < methods.size(); ++m) {
        SearchOptions o = req.search;
        o.seed = 100 + i;
        o.method = m == 1 ? SearchMethod::TpeHyperband : m == 2 ? SearchMethod::Random : SearchMethod::Grid;
        o.confirmTop = 0;
        auto r = searchKey(b, key, space, o);
        if (r) runs.emplace(methods[m], std::move(r.value()));
      }
      ++curveKeys;
      for (const auto& [name, r] : runs) {
        MethodStats& s = stats[name];
        const int64_t hit = firstHit(r, b, optimum, 0.02);
        ++s.keys;
        if (hit >= 0) ++s.hits;
        s.hitFraction.push_back(hit >= 0 ? hit / gridCost : 1.0);
        s.spentFraction.push_back(r.spentIterations / gridCost);
        auto& curve = curveLogSum[name];
        curve.resize(budgetPoints.size());
        for (size_t p = 0; p < budgetPoints.size(); ++p)
          curve[p] += std::log(regretAt(r, b, optimum, static_cast<int64_t>(budgetPoints[p] * gridCost)));
      }
    }
    std::printf("%-12s %-13s %9d %8zu |", c.preset.c_str(), std::string(collectiveName(c.coll)).c_str(), spaceSize,
                sharedKeys.size());
    const char* shortName[] = {"tpe+hb/shared", "tpe+hb/cold", "random", "grid"};
    for (size_t mi = 0; mi < methods.size(); ++mi) {
      const std::string& m = methods[mi];
      const auto& v = stats[m].hitFraction;
      std::vector<double> last(v.end() - static_cast<long>(sharedKeys.size()), v.end());
      std::sort(last.begin(), last.end());
      std::printf(" %s %.1f%%", shortName[mi], 100 * last[last.size() / 2]);
    }
    std::printf("\n");
  }
  std::printf("\nover all keys (%d): median / mean share of the grid's cost to reach 2%%, keys reached, search spent\n", curveKeys);
  for (const std::string& m : methods) {
    MethodStats& s = stats[m];
    if (s.keys == 0) continue;
    std::vector<double> v = s.hitFraction;
    std::sort(v.begin(), v.end());
    double mean = 0, spent = 0;
    for (double x : v) mean += x;
    for (double x : s.spentFraction) spent += x;
    std::printf("  %-22s median %6.2f%%  mean %6.2f%%  reached %d/%d  spent (mean) %6.2f%%\n", m.c_str(),
                100 * v[v.size() / 2], 100 * mean / v.size(), s.hits, s.keys, 100 * spent / s.keys);
  }
  if (ratioKeys > 0)
    std::printf("\ntuned profile vs NCCL default (noiseless simulator, %d keys, %d rules): geomean time ratio %.3f, "
                "worst %.3f; oracle (grid best) geomean %.3f\n",
                ratioKeys, rules, std::exp(ratioLogSum / ratioKeys), ratioWorst, std::exp(oracleLogSum / ratioKeys));
  if (!curvesPath.empty()) {
    std::ofstream out(curvesPath);
    out << "method,grid_fraction,geomean_regret\n";
    for (const auto& [m, sums] : curveLogSum)
      for (size_t p = 0; p < budgetPoints.size(); ++p)
        out << m << "," << budgetPoints[p] << "," << std::exp(sums[p] / curveKeys) << "\n";
    std::printf("wrote %s\n", curvesPath.c_str());
  }
  return 0;
}

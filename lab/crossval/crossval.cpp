#include "lab/crossval/crossval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "offline/sim/sim.h"

namespace dynamiccl::tune {
namespace {

struct ShapeData {
  std::string label;
  std::vector<CollectiveResult> collectives;
};

std::string shapeLabel(int nRanks, int nNodes) { return std::to_string(nRanks) + "r/" + std::to_string(nNodes) + "n"; }

// The profile's decision at `bytes`: the interval that covers it, else NCCL's default.
Config decisionAt(const std::vector<TunedInterval>& intervals, uint64_t bytes) {
  for (const TunedInterval& t : intervals)
    if (t.minBytes <= bytes && bytes <= t.maxBytes) return t.config;
  return keepDefault();
}

// Judges `chosen` on the full measurements of key i.
CrossvalPoint judge(const std::vector<KeyResult>& keys, int i, const Config& chosen, const DecisionRule& rule) {
  const KeyResult& k = keys[i];
  CrossvalPoint p;
  p.coll = k.key.coll;
  p.bytes = k.key.bytes;
  p.chosen = chosen;
  p.default_us = k.keep().median_us();
  p.defaultRuns = p.chosenRuns = k.keep().count();
  p.best_us = p.default_us;
  p.bestArm = k.keep().arm;
  for (const ConfigStats& s : k.evaluated)
    if (s.median_us() < p.best_us) p.best_us = s.median_us(), p.bestArm = s.arm;
  int e = chosen.keepsAlgoProto() ? 0 : -1;
  for (int j = 1; j < static_cast<int>(k.evaluated.size()); ++j)  // the arm with most repeats
    if (k.evaluated[j].config == chosen && (e < 0 || k.evaluated[j].count() > k.evaluated[e].count())) e = j;
  if (e < 0) return p;
  p.judged = true;
  p.chosen_us = k.evaluated[e].median_us();
  p.chosenRuns = k.evaluated[e].count();
  p.vsDefault = p.chosen_us / p.default_us;
  p.vsBest = p.chosen_us / p.best_us;
  if (e > 0) {  // this point's standard error of log(chosen/default), its noise estimated as the rule does
    p.ratioSe = assessCandidate(keys, i, e, rule).ratioSe;
    p.slowerBeyondNoise = p.ratioSe > 0 ? std::log(p.vsDefault) > normalQuantile(rule.confidence) * p.ratioSe
                                        : p.vsDefault > 1;
  }
  return p;
}

}  // namespace

Expected<CrossvalResult> crossValidate(const CrossvalOptions& o) {
  auto rows = measurements::loadMeasurements(o.csvPath);
  if (!rows) return makeError("crossval: " + rows.error());
  CrossvalResult out;
  // Shapes with something to choose: at least one forced arm.
  std::set<std::tuple<std::string, int, int>> shapes;
  for (const measurements::Measurement& m : rows->rows)
    if (m.forced() && (o.system.empty() || m.system.find(o.system) != std::string::npos))
      shapes.insert({m.system, m.nRanks, m.nNodes});
  if (shapes.empty()) return makeError("crossval: no forced measurements in " + o.csvPath + ": nothing to choose");
  std::vector<ShapeData> data;
  for (const auto& [system, nRanks, nNodes] : shapes) {
    auto backend = makeReplayBackend({o.csvPath, system, nRanks, nNodes, o.platform, std::nullopt});
    if (!backend) {
      out.notes.push_back(system + " " + shapeLabel(nRanks, nNodes) + ": " + backend.error());
      continue;
    }
    TuneRequest req;
    req.collectives.clear();
    std::set<Collective> colls;
    for (const measurements::Measurement& m : rows->rows)
      if (m.system == system && m.nRanks == nRanks && m.nNodes == nNodes) colls.insert(m.coll);
    req.collectives.assign(colls.begin(), colls.end());
    auto r = tune(**backend, req);
    if (!r) return makeError("crossval: " + r.error());
    for (const std::string& u : r->undecidable) out.notes.push_back(shapeLabel(nRanks, nNodes) + " " + u);
    if (data.empty())
      for (const std::string& n : r->dataNotes) out.notes.push_back(n);
    data.push_back({shapeLabel(nRanks, nNodes), std::move(r->collectives)});
  }
  auto add = [&](CrossvalPoint p, const std::string& mode, const std::string& trainedOn, const std::string& shape) {
    p.mode = mode, p.trainedOn = trainedOn, p.shape = shape;
    out.points.push_back(std::move(p));
  };
  for (const ShapeData& s : data)
    for (const CollectiveResult& cr : s.collectives) {
      const int n = static_cast<int>(cr.keys.size());
      const std::vector<TunedInterval> all = smoothDecisions(cr.keys, o.rule);
      for (int i = 0; i < n; ++i) {
        add(judge(cr.keys, i, decisionAt(all, cr.keys[i].key.bytes), o.rule), "in-sample", s.label, s.label);
        std::vector<KeyResult> rest;
        for (int j = 0; j < n; ++j)
          if (j != i) rest.push_back(cr.keys[j]);
        const std::vector<TunedInterval> loso = smoothDecisions(rest, o.rule);
        add(judge(cr.keys, i, decisionAt(loso, cr.keys[i].key.bytes), o.rule), "leave-one-size-out", s.label, s.label);
      }
      if (!o.leaveOneShapeOut) continue;
      for (const ShapeData& t : data) {  // a profile made on another shape, applied by size
        if (&t == &s) continue;
        for (const CollectiveResult& tr : t.collectives) {
          if (tr.coll != cr.coll) continue;
          const std::vector<TunedInterval> other = smoothDecisions(tr.keys, o.rule);
          for (int i = 0; i < n; ++i)
            add(judge(cr.keys, i, decisionAt(other, cr.keys[i].key.bytes), o.rule), "leave-one-shape-out", t.label,
                s.label);
        }
      }
    }
  for (const char* mode : {"in-sample", "leave-one-size-out", "leave-one-shape-out"}) {
    CrossvalModeSummary m;
    m.mode = mode;
    double lDef = 0, lBest = 0;
    for (const CrossvalPoint& p : out.points) {
      if (p.mode != mode) continue;
      ++m.points;
      if (!p.judged) continue;
      ++m.judged;
      m.rules += !p.chosen.keepsAlgoProto();
      m.slowerBeyondNoise += p.slowerBeyondNoise;
      lDef += std::log(p.vsDefault), lBest += std::log(p.vsBest);
      m.worstVsDefault = std::max(m.worstVsDefault, p.vsDefault);
      m.worstVsBest = std::max(m.worstVsBest, p.vsBest);
    }
    if (m.judged) m.geomeanVsDefault = std::exp(lDef / m.judged), m.geomeanVsBest = std::exp(lBest / m.judged);
    if (m.points) out.summary.push_back(m);
  }
  return out;
}

std::string crossvalCsv(const CrossvalResult& r) {
  std::string out = "mode,trained_on,shape,collective,bytes,chosen,judged,chosen_us,default_us,best_us,best_arm,"
                    "chosen_vs_default,chosen_vs_best,ratio_se,slower_beyond_noise,chosen_runs,default_runs\n";
  char buf[512];
  for (const CrossvalPoint& p : r.points) {
    std::snprintf(buf, sizeof buf, "%s,%s,%s,%s,%llu,%s,%d,%.6g,%.6g,%.6g,\"%s\",%.6g,%.6g,%.6g,%d,%d,%d\n", p.mode.c_str(),
                  p.trainedOn.c_str(), p.shape.c_str(), std::string(collectiveName(p.coll)).c_str(),
                  static_cast<unsigned long long>(p.bytes), decisionLabel(p.chosen).c_str(), p.judged ? 1 : 0,
                  p.chosen_us, p.default_us, p.best_us, p.bestArm.c_str(), p.vsDefault, p.vsBest, p.ratioSe,
                  p.slowerBeyondNoise ? 1 : 0, p.chosenRuns, p.defaultRuns);
    out += buf;
  }
  return out;
}

}  // namespace dynamiccl::tune

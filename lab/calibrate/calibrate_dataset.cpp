// Fitting: per group, bounded Nelder-Mead on the group's MAPE over the SimParams listed in
// kFitted; each row's configuration is resolved once through NCCL's model (NcclReference).
#include "lab/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <tuple>

#include "offline/model/model.h"
#include "offline/sim/sim.h"

namespace dynamiccl::sim {

namespace {

constexpr int kNumFitted = sizeof(kFitted) / sizeof(kFitted[0]);

// Unbounded coordinates -> bounded parameters (logistic), so the simplex can roam freely. Only the
// parameters in `active` are coordinates; the others keep their value.
void decode(const std::vector<double>& x, const std::vector<int>& active, SimParams& p) {
  for (size_t j = 0; j < active.size(); ++j) {
    const FittedParam& f = kFitted[active[j]];
    p.*(f.field) = f.lo + (f.hi - f.lo) / (1.0 + std::exp(-x[j]));
  }
}
std::vector<double> encode(const SimParams& p, const std::vector<int>& active) {
  std::vector<double> x(active.size());
  for (size_t j = 0; j < active.size(); ++j) {
    const FittedParam& f = kFitted[active[j]];
    // Kept off the bounds: at a bound the logistic is flat, and a simplex started there never leaves it.
    const double u = std::clamp((p.*(f.field) - f.lo) / (f.hi - f.lo), 1e-2, 1 - 1e-2);
    x[j] = std::log(u / (1 - u));
  }
  return x;
}

struct PreparedRow {
  measurements::Measurement m;
  Config config;
  int sim = 0;  // index into the group's simulators (one per shape)
};

// A forced sweep point: the configurations measured there (mean time, one representative row)
// and which one was measured fastest.
struct ForcedPoint {
  std::vector<int> rowOf;          // a row index per configuration
  std::vector<double> measured_us; // mean measured time per configuration
  int best = 0;
};

struct PreparedGroup {
  std::string name;
  std::vector<std::unique_ptr<Simulator>> sims;
  std::vector<PreparedRow> rows;
  std::vector<ForcedPoint> forced;  // points with at least two configurations
};

// The fit's objective adds, to the MAPE, this weight times a ranking loss on forced sweeps: a hinge
// on log(predicted best / predicted other) for every configuration measured slower than the best
// by more than the repeat noise. Times alone leave the order of near-equal configurations to chance,
// and the order is what decisions are made on.
constexpr double kRankWeight = 4.0;
constexpr double kNeutralTolerance = 1e-4;  // loss (MAPE fraction) the parsimony pass may give up, in all
constexpr double kRankMargin = 0.02;  // the predicted gap we ask for, in log units

double groupMape(PreparedGroup& g, const SimParams& p) {
  for (auto& s : g.sims) s->params() = p;
  double sum = 0;
  for (const PreparedRow& r : g.rows) {
    const double t = g.sims[r.sim]->time_us(r.m.coll, r.m.bytes, r.config);
    sum += t > 0 ? std::fabs(t - r.m.time_us) / r.m.time_us : 10.0;
  }
  return g.rows.empty() ? 0 : sum / g.rows.size();
}

double groupRankLoss(const PreparedGroup& g, double tieBand) {
  if (g.forced.empty()) return 0;
  double sum = 0;
  for (const ForcedPoint& fp : g.forced) {
    const PreparedRow& b = g.rows[fp.rowOf[fp.best]];
    const double pb = g.sims[b.sim]->time_us(b.m.coll, b.m.bytes, b.config);
    double point = 0;
    int slower = 0;
    for (size_t c = 0; c < fp.rowOf.size(); ++c) {
      if (int(c) == fp.best || fp.measured_us[c] <= (1 + tieBand) * fp.measured_us[fp.best]) continue;
      const PreparedRow& r = g.rows[fp.rowOf[c]];
      const double pc = g.sims[r.sim]->time_us(r.m.coll, r.m.bytes, r.config);
      point += (pb > 0 && pc > 0) ? std::max(0.0, std::log(pb / pc) + kRankMargin) : 1.0;
      ++slower;
    }
    if (slower) sum += point / slower;
  }
  return sum / g.forced.size();
}

void prepareForcedPoints(PreparedGroup& g) {
  std::map<std::tuple<int, int, int, uint64_t>, std::map<std::pair<int, int>, std::pair<double, std::vector<int>>>> points;
  for (size_t i = 0; i < g.rows.size(); ++i) {
    const PreparedRow& r = g.rows[i];
    // Default and forced runs were taken on different days: compare forced runs among themselves.
    if (!r.m.forced()) continue;
    auto& e = points[{int(r.m.coll), r.m.nRanks, r.m.nNodes, r.m.bytes}][{int(r.config.algo), int(r.config.proto)}];
    e.first += r.m.time_us;
    e.second.push_back(static_cast<int>(i));
  }
  for (const auto& [key, configs] : points) {
    if (configs.size() < 2) continue;
    ForcedPoint fp;
    for (const auto& [cfg, e] : configs) {
      fp.rowOf.push_back(e.second.front());
      fp.measured_us.push_back(e.first / e.second.size());
      if (fp.measured_us.back() < fp.measured_us[fp.best]) fp.best = static_cast<int>(fp.measured_us.size() - 1);
    }
    g.forced.push_back(std::move(fp));
  }
}

// Nelder-Mead (standard coefficients) from x0 with initial step `step`.
std::vector<double> nelderMead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                               double step, int iterations, double* best) {
  const int n = static_cast<int>(x0.size());
  std::vector<std::vector<double>> s(n + 1, x0);
  std::vector<double> v(n + 1);
  for (int i = 0; i < n; ++i) s[i + 1][i] += step;
  for (int i = 0; i <= n; ++i) v[i] = f(s[i]);
  for (int it = 0; it < iterations; ++it) {
    std::vector<int> idx(n + 1);
    for (int i = 0; i <= n; ++i) idx[i] = i;
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return v[a] < v[b]; });
    const int lo = idx[0], hi = idx[n], nh = idx[n - 1];
    std::vector<double> c(n, 0.0);
    for (int i = 0; i <= n; ++i)
      if (i != hi)
        for (int d = 0; d < n; ++d) c[d] += s[i][d] / n;
    auto along = [&](double t) {
      std::vector<double> p(n);
      for (int d = 0; d < n; ++d) p[d] = c[d] + t * (s[hi][d] - c[d]);
      return p;
    };
    auto xr = along(-1.0);
    const double fr = f(xr);
    if (fr < v[lo]) {
      auto xe = along(-2.0);
      const double fe = f(xe);
      if (fe < fr) s[hi] = xe, v[hi] = fe;
      else s[hi] = xr, v[hi] = fr;
    } else if (fr < v[nh]) {
      s[hi] = xr, v[hi] = fr;
    } else {
      auto xc = along(fr < v[hi] ? -0.5 : 0.5);
      const double fc = f(xc);
      if (fc < std::min(fr, v[hi])) s[hi] = xc, v[hi] = fc;
      else
        for (int i = 0; i <= n; ++i)
          if (i != lo) {
            for (int d = 0; d < n; ++d) s[i][d] = s[lo][d] + 0.5 * (s[i][d] - s[lo][d]);
            v[i] = f(s[i]);
          }
    }
  }
  const int b = static_cast<int>(std::min_element(v.begin(), v.end()) - v.begin());
  *best = v[b];
  return s[b];
}

// Pattern search (one coordinate at a time, step halving): polishes where Nelder-Mead's simplex
// has collapsed along some directions.
std::vector<double> coordinateSearch(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
                                     double step, int sweeps, double* best) {
  double v = f(x);
  for (int s = 0; s < sweeps && step > 1e-3; ++s) {
    bool moved = false;
    for (size_t d = 0; d < x.size(); ++d)
      for (double dir : {step, -step}) {
        std::vector<double> y = x;
        y[d] += dir;
        const double fy = f(y);
        if (fy < v) x = y, v = fy, moved = true;
      }
    if (!moved) step *= 0.5;
  }
  *best = v;
  return x;
}

// The parameters this group's rows can inform: swept over its bounds from the simulator's
// defaults, a parameter must move at least max(3, 1%) of the rows' predictions by 0.1%. The others
// keep their neutral default, so a fit cannot drift them (they would only matter when the
// parameters are used beyond the data, as the demo does on other presets).
std::vector<int> informedParams(PreparedGroup& g) {
  const SimParams neutral;
  const auto predict = [&](const SimParams& p) {
    for (auto& s : g.sims) s->params() = p;
    std::vector<double> t;
    t.reserve(g.rows.size());
    for (const PreparedRow& r : g.rows) t.push_back(g.sims[r.sim]->time_us(r.m.coll, r.m.bytes, r.config));
    return t;
  };
  const size_t needed = std::max<size_t>(3, g.rows.size() / 100);
  std::vector<int> active;
  for (int i = 0; i < kNumFitted; ++i) {
    SimParams from = neutral;
    if (kFitted[i].enabler) from.*(kFitted[i].enabler) = kFitted[i].enablerValue;
    const std::vector<double> base = predict(from);
    std::vector<size_t> moved(g.rows.size(), 0);
    for (double bound : {kFitted[i].lo, kFitted[i].hi}) {
      SimParams p = from;
      p.*(kFitted[i].field) = bound;
      const std::vector<double> t = predict(p);
      for (size_t r = 0; r < t.size(); ++r)
        if (std::fabs(t[r] - base[r]) > 1e-3 * std::fabs(base[r])) moved[r] = 1;
    }
    if (static_cast<size_t>(std::count(moved.begin(), moved.end(), 1)) >= needed) active.push_back(i);
  }
  return active;
}

SimParams fitGroup(PreparedGroup& g, const CalibrateOptions& o, double tieBand, SimParams start, double* mape) {
  const std::vector<int> active = informedParams(g);
  if (o.progress) {
    std::string names;
    for (int i : active) names += std::string(names.empty() ? "" : ",") + kFitted[i].name;
    std::fprintf(stderr, "\n[calibrate]   fitting %zu of %d parameters the rows inform: %s\n", active.size(), kNumFitted,
                 names.c_str());
  }
  const SimParams neutral;
  for (int i = 0; i < kNumFitted; ++i)
    if (std::find(active.begin(), active.end(), i) == active.end()) start.*(kFitted[i].field) = neutral.*(kFitted[i].field);
  auto loss = [&](const SimParams& p) { return groupMape(g, p) + kRankWeight * groupRankLoss(g, tieBand); };
  double best = loss(start);
  SimParams bestP = start;
  auto f = [&](const std::vector<double>& x) {
    SimParams p = bestP;
    decode(x, active, p);
    return loss(p);
  };
  // Restarts alternate: even ones refine from the best point so far with a smaller simplex; odd
  // ones hop from it by a seeded random step in the unbounded coordinates, so that a fit can leave
  // the basin a warm start put it in (a new effect's parameter starts at its neutral bound).
  std::mt19937_64 rng(0x5eedcafe);
  std::normal_distribution<double> hop(0.0, 1.5);
  for (int r = 0; r < o.restarts && !active.empty(); ++r) {
    double v = 0;
    std::vector<double> x0 = encode(bestP, active);
    if (r % 2 == 1)
      for (double& xi : x0) xi += hop(rng);
    auto x = nelderMead(f, x0, r == 0 || r % 2 == 1 ? 1.0 : 1.0 / r, o.iterations, &v);
    if (v < best) {
      best = v;
      decode(x, active, bestP);
    }
  }
  if (!active.empty()) {
    double v = 0;
    auto x = coordinateSearch(f, encode(bestP, active), 0.5, o.iterations / 20, &v);
    if (v < best) best = v, decode(x, active, bestP);
  }
  // Parsimony: an effect the rows cannot tell from its absence goes back to neutral, as long as
  // all such resets together cost at most kNeutralTolerance of loss. A value the data does not
  // determine would otherwise reach every use of these parameters (training, the demo).
  const double allowed = best + kNeutralTolerance;
  for (int i : active) {
    SimParams p = bestP;
    p.*(kFitted[i].field) = neutral.*(kFitted[i].field);
    if (p.*(kFitted[i].field) == bestP.*(kFitted[i].field)) continue;
    const double v = loss(p);
    if (v <= allowed) best = v, bestP = p;
  }
  *mape = groupMape(g, bestP);
  return bestP;
}

std::string datasetName(const std::string& dir) {
  std::string d = dir;
  while (!d.empty() && d.back() == '/') d.pop_back();
  return std::filesystem::path(d).filename().string();
}

// Forced sweeps: per point, the mean measured time of each resolved configuration.
// Ties: a point's measured best is only known up to the repeat noise. The noise band is the median
// relative spread (max-min)/min between repeats of one resolved configuration at one point in the
// same dataset (forced runs whose NCCL_ALGO / NCCL_PROTO resolve to the same config; 1.1% on the
// L40S sweeps); a configuration measured within that band of the best ties with it and a pick of
// it counts as a strict hit. With no repeats the band is 0 (exact match required).
void scoreNoiseFloor(const std::vector<PreparedGroup>& groups, DatasetCalibration& out) {
  std::map<std::tuple<int, int, int, uint64_t, int, int>, std::vector<double>> points;
  for (const PreparedGroup& g : groups)
    for (const PreparedRow& r : g.rows)
      points[{int(r.m.coll), r.m.nRanks, r.m.nNodes, r.m.bytes, int(r.config.algo), int(r.config.proto)}].push_back(
          r.m.time_us);
  double sum = 0;
  int rows = 0;
  for (const auto& [key, times] : points) {
    if (times.size() < 2) continue;
    // The MAPE-optimal constant is a weighted median, so one of the measured times attains it.
    double best = 1e300;
    for (double c : times) {
      double e = 0;
      for (double m : times) e += std::fabs(c - m) / m;
      best = std::min(best, e);
    }
    sum += best;
    rows += static_cast<int>(times.size());
  }
  out.floorRows = rows;
  out.floorMape = rows ? sum / rows : -1;
}

double repeatTieBand(const std::vector<PreparedGroup>& groups) {
  std::vector<double> spreads;
  for (const PreparedGroup& g : groups) {
    std::map<std::tuple<int, int, int, uint64_t, int, int>, std::pair<double, double>> range;  // min, max
    for (const PreparedRow& r : g.rows) {
      if (!r.m.forced()) continue;
      auto [it, fresh] = range.try_emplace({int(r.m.coll), r.m.nRanks, r.m.nNodes, r.m.bytes, int(r.config.algo),
                                            int(r.config.proto)}, r.m.time_us, r.m.time_us);
      if (!fresh) it->second = {std::min(it->second.first, r.m.time_us), std::max(it->second.second, r.m.time_us)};
    }
    for (const auto& [k, mm] : range)
      if (mm.second > mm.first) spreads.push_back(mm.second / mm.first - 1);
  }
  double tieBand = 0;
  if (!spreads.empty()) {
    std::nth_element(spreads.begin(), spreads.begin() + spreads.size() / 2, spreads.end());
    tieBand = spreads[spreads.size() / 2];
  }
  return tieBand;
}

// Over the forced points prepared for the fit: is the simulator's fastest configuration the
// measured fastest (exactly, within the tie band, within 5%)?
void scoreAgreement(const std::vector<PreparedGroup>& groups, double tieBand, DatasetCalibration& out) {
  out.tieBand = tieBand;
  for (const PreparedGroup& g : groups)
    for (const ForcedPoint& fp : g.forced) {
      double simBest = 1e300;
      int simArg = -1;
      for (size_t c = 0; c < fp.rowOf.size(); ++c) {
        const PreparedRow& r = g.rows[fp.rowOf[c]];
        const double t = g.sims[r.sim]->time_us(r.m.coll, r.m.bytes, r.config);
        if (t > 0 && t < simBest) simBest = t, simArg = static_cast<int>(c);
      }
      ++out.agreementPoints;
      if (simArg < 0) continue;
      const double best = fp.measured_us[fp.best], picked = fp.measured_us[simArg];
      if (simArg == fp.best) ++out.agreementExact;
      if (simArg == fp.best || picked <= (1 + tieBand) * best) ++out.agreementHits;
      if (picked <= 1.05 * best) ++out.agreementWithinNoise;
    }
}

}  // namespace

namespace {

// Prepares one group's rows: one simulator and one NCCL reference per shape, each row's
// configuration resolved through NCCL's model seeing the NIC at `ncclNicBw_GBps` (0: the preset's).
// Rows NCCL's model cannot place are counted in `skipped` when given.
PreparedGroup prepareGroup(const std::string& name, const std::vector<measurements::Measurement>& rows, double ncclNicBw_GBps,
                           std::map<std::string, int>* skipped) {
  PreparedGroup g{name, {}, {}, {}};
  std::map<std::pair<int, int>, std::pair<int, std::unique_ptr<model::NcclReference>>> shapes;
  auto skip = [&](const std::string& why) {
    if (skipped) ++(*skipped)[why];
  };
  for (const measurements::Measurement& m : rows) {
    auto shape = shapes.find({m.nRanks, m.nNodes});
    if (shape == shapes.end()) {
      auto topo = measurements::topologyForSystem(m.system, m.nRanks, m.nNodes, m.ncclVersion);
      if (!topo) {
        skip("no topology: " + topo.error());
        continue;
      }
      if (ncclNicBw_GBps > 0) topo->ncclNicBw_GBps = ncclNicBw_GBps;
      auto ref = model::NcclReference::create(topo.value());
      if (!ref) {
        skip("NCCL model failed: " + ref.error());
        continue;
      }
      g.sims.push_back(std::make_unique<Simulator>(topo.value()));
      shape = shapes.emplace(std::make_pair(m.nRanks, m.nNodes),
                             std::make_pair(static_cast<int>(g.sims.size() - 1),
                                            std::make_unique<model::NcclReference>(std::move(ref.value()))))
                  .first;
    }
    const int si = shape->second.first;
    Config c = shape->second.second->restrictedConfig(m.coll, m.bytes, m.forcedAlgo, m.forcedProto);
    if (m.forcedChannels > 0) c.nChannels = m.forcedChannels;  // a row forced at a channel count is simulated at it
    if (c.algo == Algo::Default || !g.sims[si]->feasible(m.coll, c)) {
      skip("NCCL's model finds no configuration NCCL could have run");
      continue;
    }
    g.rows.push_back(PreparedRow{m, c, si});
  }
  prepareForcedPoints(g);
  return g;
}

double groupLoss(PreparedGroup& g, const SimParams& p, double tieBand) {
  return groupMape(g, p) + kRankWeight * groupRankLoss(g, tieBand);
}

// NCCL's graph search sees a NIC through its PCIe path and the net plugin's reported speed, which
// can sit below the wire rate (a NIC behind the CPU, a plugin reporting less); without NCCL's GRAPH
// log that view is unknown, yet it sets where NCCL switches protocol. These are the views tried, as
// fractions of the wire rate; the search quantises each to one of its speeds.
constexpr double kNicViews[] = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5};

// For a group with rows across nodes: the NIC view whose short fit scores best (0 = wire rate).
double fitNicView(const std::string& name, const std::vector<measurements::Measurement>& rows, const CalibrateOptions& o,
                  double tieBand, const SimParams& start) {
  double wire = 0;
  for (const measurements::Measurement& m : rows)
    if (m.nNodes > 1)
      if (auto t = measurements::topologyForSystem(m.system, m.nRanks, m.nNodes, m.ncclVersion)) wire = t->nicBw_GBps;
  if (wire <= 0) return 0;
  CalibrateOptions quick = o;
  quick.progress = false;
  quick.iterations = std::max(20, o.iterations / 5);
  quick.restarts = std::min(o.restarts, 2);
  double best = 1e300, bestView = 0;
  for (double f : kNicViews) {
    const double view = f == 1.0 ? 0.0 : f * wire;
    PreparedGroup g = prepareGroup(name, rows, view, nullptr);
    double mape = 0;
    const SimParams p = fitGroup(g, quick, tieBand, start, &mape);
    const double loss = groupLoss(g, p, tieBand);
    if (loss < best - 1e-9) best = loss, bestView = view;
  }
  return bestView;
}

}  // namespace

Expected<DatasetCalibration> calibrateDataset(const std::string& datasetDir, const CalibrateOptions& o,
                                              const DatasetCalibration* stored,
                                              std::vector<RowPrediction>* predictions) {
  const std::string csv = (std::filesystem::path(datasetDir) / "normalized.csv").string();
  auto loaded = measurements::loadMeasurements(csv);
  if (!loaded) return makeError(loaded.error());
  DatasetCalibration out;
  out.dataset = datasetName(datasetDir);
  out.skipped = loaded->skipped;

  // Rows by group, in the order groups first appear.
  std::vector<std::pair<std::string, std::vector<measurements::Measurement>>> rowsOf;
  std::map<std::string, size_t> groupIndex;
  for (measurements::Measurement& m : loaded->rows) {
    auto [gi, fresh] = groupIndex.try_emplace(m.group, rowsOf.size());
    if (fresh) rowsOf.push_back({m.group, {}});
    rowsOf[gi->second].second.push_back(std::move(m));
  }
  // The NIC view each group starts from: the warm start's (fit) or the stored one (check).
  const DatasetCalibration* from = o.fit ? o.start : stored;
  std::vector<double> nicView(rowsOf.size(), 0.0);
  std::vector<PreparedGroup> groups;
  for (size_t i = 0; i < rowsOf.size(); ++i) {
    if (from) nicView[i] = nicViewForGroup(*from, rowsOf[i].first);
    groups.push_back(prepareGroup(rowsOf[i].first, rowsOf[i].second, nicView[i], &out.skipped));
  }
  const double tieBand = repeatTieBand(groups);
  double weighted = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    PreparedGroup& g = groups[i];
    if (g.rows.empty()) continue;
    GroupCalibration gc;
    gc.group = g.name;
    gc.rows = static_cast<int>(g.rows.size());
    if (o.fit) {
      if (o.progress)
        std::fprintf(stderr, "\r[calibrate] %s: group %zu/%zu (%d rows)          ", out.dataset.c_str(), i + 1,
                     groups.size(), gc.rows);
      // Start from the group's own stored parameters, or a sibling group's (another variant of the
      // same dataset) where those already fit this group's rows better: a fit can stay stuck in a
      // basin that a sibling has left.
      SimParams start = o.start ? paramsForGroup(*o.start, g.name) : SimParams{};
      if (o.start) {
        double startLoss = groupLoss(g, start, tieBand);
        for (const GroupCalibration& sibling : o.start->groups) {
          const double l = groupLoss(g, sibling.params, tieBand);
          if (l < startLoss) startLoss = l, start = sibling.params;
        }
      }
      if (o.fitNicView) {
        const double view = fitNicView(g.name, rowsOf[i].second, o, tieBand, start);
        if (view != nicView[i]) g = prepareGroup(g.name, rowsOf[i].second, nicView[i] = view, nullptr);
      }
      gc.params = fitGroup(g, o, tieBand, start, &gc.mape);
      gc.rows = static_cast<int>(g.rows.size());
    } else {
      gc.params = stored ? paramsForGroup(*stored, g.name) : SimParams{};
      gc.mape = groupMape(g, gc.params);
    }
    gc.ncclNicBw_GBps = nicView[i];
    for (auto& s : g.sims) s->params() = gc.params;
    weighted += gc.mape * gc.rows;
    out.rows += gc.rows;
    out.groups.push_back(gc);
    if (predictions)
      for (const PreparedRow& r : g.rows)
        predictions->push_back({r.m, r.config, g.sims[r.sim]->time_us(r.m.coll, r.m.bytes, r.config)});
  }
  if (o.fit && o.progress) std::fprintf(stderr, "\n");
  out.mape = out.rows ? weighted / out.rows : 0;
  scoreAgreement(groups, tieBand, out);
  scoreNoiseFloor(groups, out);
  return out;
}

}  // namespace dynamiccl::sim

#include "offline/measurements/measurements.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

namespace dynamiccl::measurements {
namespace {
// A point's time is the median of its repeats, as every judge of measurements here takes it.
double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

double ReplayPoint::best_us() const {
  double b = default_us > 0 ? default_us : 1e300;
  for (const auto& [k, t] : forced_us) b = std::min(b, t);
  return b < 1e300 ? b : -1;
}

std::string_view defaultSettledByName(DefaultSettledBy c) {
  switch (c) {
    case DefaultSettledBy::Model: return "model";
    case DefaultSettledBy::Stated: return "stated";
    case DefaultSettledBy::Confirmed: return "confirmed";
    case DefaultSettledBy::Matched: return "matched";
    case DefaultSettledBy::Unforced: return "unforced";
    case DefaultSettledBy::Refuted: return "refuted";
  }
  return "?";
}

bool forcedTwinIsDefault(DefaultSettledBy c) {
  return c == DefaultSettledBy::Stated || c == DefaultSettledBy::Confirmed || c == DefaultSettledBy::Matched;
}
bool ReplayPoint::isDefaultsTwin(const Config& arm) const {
  return forcedTwinIsDefault(defaultSettledBy) &&
         (arm == Config{ncclDefault.algo, ncclDefault.proto, 0, 0} ||
          (defaultChannels > 0 && arm == Config{ncclDefault.algo, ncclDefault.proto, defaultChannels, 0}));
}

bool ReplayPoint::statesChannels() const {
  for (const auto& [arm, t] : forced_us)
    if (arm.nChannels > 0) return true;
  return false;
}

Config ReplayPoint::judgedAs(const Config& decision) const {
  bool chunks = false;
  for (const auto& [arm, t] : forced_us) chunks = chunks || arm.chunkBytes > 0;
  const uint64_t chunk = chunks ? decision.chunkBytes : 0;
  if (!statesChannels()) return Config{decision.algo, decision.proto, 0, chunk};
  // No count asked runs the host's own (what the default rows report); a count the rows never forced
  // runs as the nearest they did for the pair (as the replayed job runs it: jobreplay::JobKey::run).
  const int want = decision.nChannels > 0 ? decision.nChannels : defaultChannels;
  if (want <= 0 || forced_us.count(Config{decision.algo, decision.proto, want, chunk})) return Config{decision.algo, decision.proto, want, chunk};
  std::vector<int> counts;
  for (const auto& [arm, t] : forced_us)
    if (arm.algo == decision.algo && arm.proto == decision.proto && arm.chunkBytes == chunk && arm.nChannels > 0)
      counts.push_back(arm.nChannels);
  return Config{decision.algo, decision.proto, nearestMeasuredCount(counts, want), chunk};
}

int nearestMeasuredCount(const std::vector<int>& counts, int want) {
  int nearest = 0;
  for (int c : counts)
    if (c > 0 && (nearest == 0 || std::abs(std::log(double(c) / want)) < std::abs(std::log(double(nearest) / want)) ||
                  (std::abs(std::log(double(c) / want)) == std::abs(std::log(double(nearest) / want)) && c < nearest)))
      nearest = c;
  return nearest > 0 ? nearest : want;
}

bool ReplayPoint::isDefaultConfig(const Config& decision) const {
  // ncclDefault itself (with the model's channel count, as a caller that keeps it passes it) is the default too.
  const Config judged = judgedAs(decision);
  return decision == ncclDefault || judged == Config{ncclDefault.algo, ncclDefault.proto, 0, 0} ||
         (defaultChannels > 0 && judged == Config{ncclDefault.algo, ncclDefault.proto, defaultChannels, 0});
}

bool inferredFromRuns(DefaultSettledBy c) { return c == DefaultSettledBy::Matched || c == DefaultSettledBy::Unforced; }

double fittedSigma(const std::vector<double>& samples_us, double pooled) {
  const double dof = samples_us.empty() ? 0 : static_cast<double>(samples_us.size() - 1);
  return std::sqrt((policy::logSumSquares(samples_us) + kNoisePriorRuns * pooled * pooled) / (dof + kNoisePriorRuns));
}

namespace {

struct LogSpread {
  double ss = 0, dof = 0;
  void add(const std::vector<double>& samples_us) {
    if (samples_us.size() < 2) return;
    ss += policy::logSumSquares(samples_us);
    dof += static_cast<double>(samples_us.size() - 1);
  }
  void addPoint(const ReplayPoint& p) {
    add(p.default_samples_us);
    for (const auto& [arm, xs] : p.forced_samples_us) add(xs);
  }
};

bool sameCurve(const ReplayPoint& a, const ReplayPoint& b) {
  return a.group == b.group && a.shape == b.shape && a.coll == b.coll;
}

// Each arm's noise: its repeats' spread, shrunk toward the spread of every repeat at its point and
// the two sizes either side (noise is relative, and a dataset's small sizes may spread far more than
// its large ones), else toward the dataset's. Points are sorted by group, shape, collective, size.
// The spread of log time between repeats over every point (`fallback` where none repeats), and how
// many configurations had two repeats or more.
struct RepeatSpread {
  double sigma = 0;
  int groups = 0;
};
RepeatSpread repeatSpread(const std::vector<ReplayPoint>& points, double fallback) {
  LogSpread all;
  RepeatSpread r;
  for (const ReplayPoint& p : points) {
    all.addPoint(p);
    r.groups += p.default_samples_us.size() >= 2;
    for (const auto& [arm, xs] : p.forced_samples_us) r.groups += xs.size() >= 2;
  }
  r.sigma = all.dof > 0 ? std::sqrt(all.ss / all.dof) : fallback;
  return r;
}

void fitNoise(ReplayData& data) {
  const RepeatSpread all = repeatSpread(data.points, data.repeatSigma);
  data.repeatSigma = all.sigma;
  data.repeatGroups = all.groups;
  constexpr int kNeighbours = 2;
  const int n = static_cast<int>(data.points.size());
  for (int i = 0; i < n; ++i) {
    LogSpread local;
    for (int j = std::max(0, i - kNeighbours); j <= std::min(n - 1, i + kNeighbours); ++j)
      if (sameCurve(data.points[j], data.points[i])) local.addPoint(data.points[j]);
    const double pooled = local.dof > 0 ? std::sqrt(local.ss / local.dof) : data.repeatSigma;
    ReplayPoint& p = data.points[i];
    p.default_sigma = fittedSigma(p.default_samples_us, pooled);
    for (const auto& [arm, xs] : p.forced_samples_us) p.forced_sigma[arm] = fittedSigma(xs, pooled);
  }
}

// Whether two arms' runs are one as far as they can tell: the one decision rule (policy::judge) on
// their fitted noise finds neither faster than the other by its minimum gain.
bool runsCannotTellApart(const std::vector<double>& a, double sa, const std::vector<double>& b, double sb) {
  const double na = static_cast<double>(std::max<size_t>(1, a.size())), nb = static_cast<double>(std::max<size_t>(1, b.size()));
  const double va = sa * sa / na, vb = sb * sb / nb;
  // A fitted spread carries its own runs and kNoisePriorRuns of the pooled spread's weight.
  const double dfa = std::max(1.0, na - 1 + kNoisePriorRuns), dfb = std::max(1.0, nb - 1 + kNoisePriorRuns);
  const double df = (va + vb) * (va + vb) / (va * va / dfa + vb * vb / dfb);
  const policy::Judgement j =
      policy::judge(std::log(medianOf(a) / medianOf(b)), std::sqrt(va + vb), df, policy::DecisionRule{});
  return !j.faster && !j.slower;
}

// Whether two medians are further apart than two runs of one configuration come at the dataset's
// spread between repeats (refutingGapSds); a dataset without repeats cannot say.
bool farBeyondRepeats(double a_us, double b_us, const RepeatSpread& repeats, double gapSds) {
  return repeats.groups > 0 && std::abs(std::log(a_us / b_us)) > gapSds * std::sqrt(2.0) * repeats.sigma;
}

// The cheapest entry of NCCL's table that `allowed` admits (NCCL's rule: the lowest cost runs).
std::optional<std::pair<Algo, Proto>> cheapestAllowed(const model::CostTable& table,
                                                      const std::function<bool(Algo, Proto)>& allowed) {
  std::optional<std::pair<Algo, Proto>> best;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int q = 0; q < kNumProtos; ++q)
      if (table[a][q] >= 0 && allowed(Algo(a), Proto(q)) &&
          (!best || table[a][q] < table[int(best->first)][int(best->second)]))
        best = std::make_pair(Algo(a), Proto(q));
  return best;
}

// What the default rows ran (DefaultSettledBy): the TUNING line they quote, else the model's pick unless
// its own forced runs refute it (forcing Ring on a B200 whose NCCL ran NVLS): the decision rule on the
// point's fitted noise, or a gap far beyond the dataset's repeats. A refuted pick stays a forced arm of
// its own that a tuner can test.
void settleDefault(ReplayPoint& p, const ReplayData& data, double gapSds) {
  if (p.defaultSettledBy == DefaultSettledBy::Stated || p.default_samples_us.empty()) return;
  const Config pick{p.ncclDefault.algo, p.ncclDefault.proto, 0, 0};  // at NCCL's own channel count
  if (!p.forced_samples_us.count(pick)) return;  // no forced run of the pick to check it against
  const auto sameAsDefault = [&](const Config& arm) {
    return runsCannotTellApart(p.forced_samples_us.at(arm), p.forced_sigma.at(arm), p.default_samples_us,
                               p.default_sigma) &&
           !farBeyondRepeats(p.forced_us.at(arm), p.default_us, RepeatSpread{data.repeatSigma, data.repeatGroups}, gapSds);
  };
  if (sameAsDefault(pick)) {
    p.defaultSettledBy = DefaultSettledBy::Confirmed;
    return;
  }
  std::optional<Config> match;
  for (const auto& [arm, t] : p.forced_us)
    if (arm != pick && arm.nChannels == 0 && arm.chunkBytes == 0 && sameAsDefault(arm) &&
        (!match || std::abs(std::log(t / p.default_us)) < std::abs(std::log(p.forced_us.at(*match) / p.default_us))))
      match = arm;
  if (match) {
    p.ncclDefault = Config{match->algo, match->proto, 0, 0};
    p.defaultSettledBy = DefaultSettledBy::Matched;
    return;
  }
  const auto unforced = cheapestAllowed(p.shape->nccl->costTable(p.coll, p.bytes),
                                        [&](Algo a, Proto q) { return !p.forced_us.count(Config{a, q, 0, 0}); });
  if (unforced) {
    p.ncclDefault = Config{unforced->first, unforced->second, 0, 0};
    p.defaultSettledBy = DefaultSettledBy::Unforced;
  } else {
    p.defaultSettledBy = DefaultSettledBy::Refuted;
  }
}

// Rows that forced part of a configuration, with what NCCL's model resolves them to.
struct HalfForced {
  std::optional<Algo> algo;
  std::optional<Proto> proto;
  Config resolved;
  std::vector<double> samples_us;
};

// Where half-forced rows go: to the model's resolution unless that configuration's own fully forced
// runs tell it apart from them (the model is wrong about what NCCL picked there); then to the fully
// forced configuration within what they forced that their runs cannot tell from them (the closest),
// else nowhere (counted as skipped). Returns 1 where the runs, not the model, placed them.
int resolveHalfForced(std::map<Config, std::vector<double>>& forced, const HalfForced& h, const RepeatSpread& repeats,
                      ReplayData& data) {
  const auto same = [&](const std::vector<double>& arm) {
    return !farBeyondRepeats(medianOf(h.samples_us), medianOf(arm), repeats, refutingGapSds(1)) &&
           runsCannotTellApart(h.samples_us, fittedSigma(h.samples_us, repeats.sigma), arm, fittedSigma(arm, repeats.sigma));
  };
  const auto into = [&](const Config& c) {
    auto& xs = forced[c];
    xs.insert(xs.end(), h.samples_us.begin(), h.samples_us.end());
  };
  const auto own = forced.find(h.resolved);
  if (own == forced.end() || same(own->second)) return into(h.resolved), 0;
  std::optional<Config> match;
  double gap = 0;
  for (const auto& [c, xs] : forced) {
    if (c == h.resolved || c.nChannels != h.resolved.nChannels || c.chunkBytes != h.resolved.chunkBytes) continue;
    if ((h.algo && c.algo != *h.algo) || (h.proto && c.proto != *h.proto) || !same(xs)) continue;
    const double g = std::abs(std::log(medianOf(h.samples_us) / medianOf(xs)));
    if (!match || g < gap) match = c, gap = g;
  }
  if (!match) {
    data.skipped["half-forced rows whose times the model's resolution forced in full refutes, matching no other "
                 "configuration forced in full"] += static_cast<int>(h.samples_us.size());
    return 0;
  }
  into(*match);
  return 1;
}

// NCCL's pick under the settings its default rows ran with: NCCL_ALGO / NCCL_PROTO restrict it as in
// the forced sweeps; a feature switched off (NVLS, CollNet) takes its algorithms out of the table.
Config statedPick(const Shape& shape, Collective coll, uint64_t bytes, const StatedNcclSettings& s) {
  if (s.algo || s.proto) return shape.nccl->restrictedConfig(coll, bytes, s.algo, s.proto);
  const Config pick = shape.nccl->defaultConfig(coll, bytes);
  if (pick.algo == Algo::Default || s.allows(pick.algo)) return pick;
  const auto best = cheapestAllowed(shape.nccl->costTable(coll, bytes), [&](Algo a, Proto) { return s.allows(a); });
  return best ? Config{best->first, best->second, 0, 0} : pick;
}

}  // namespace

double refutingGapSds(int comparisons) {
  return std::max(4.0, policy::normalQuantile(1 - 0.005 / std::max(1, comparisons)));
}

model::CostTable ReplayPoint::costTable() const {
  model::CostTable t = shape->nccl->costTable(coll, bytes);
  if (ncclDefault.algo == Algo::Default) return t;
  float lowest = std::numeric_limits<float>::max();
  int atA = -1, atP = -1;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int q = 0; q < kNumProtos; ++q)
      if (t[a][q] >= 0 && t[a][q] < lowest) lowest = t[a][q], atA = a, atP = q;
  if (atA == int(ncclDefault.algo) && atP == int(ncclDefault.proto)) return t;
  t[int(ncclDefault.algo)][int(ncclDefault.proto)] = atA < 0 ? 1.0f : lowest > 0 ? lowest * 0.999f : 0.0f;
  return t;
}

Expected<ReplayData> buildReplayData(const std::vector<Measurement>& rows, const std::string& system,
                                     const std::string& platform) {
  ReplayData data;
  std::map<std::tuple<std::string, int, int>, Shape*> shapes;
  struct Acc {
    std::vector<double> def;
    std::set<std::pair<Algo, Proto>> stated;  // what default rows quote NCCL as running
    std::set<int> channels;                    // the counts default rows report running (0: unsaid)
    std::optional<StatedNcclSettings> settings;  // what every default row states it ran with
    bool settingsDiffer = false;
    std::map<Config, std::vector<double>> forced;
    std::map<std::tuple<int, int, int, uint64_t>, HalfForced> half;  // by (algo or -1, proto or -1, channels, chunk)
  };
  std::map<std::tuple<std::string, int, int, int, uint64_t>, std::pair<const Shape*, Acc>> acc;
  for (const Measurement& m : rows) {
    if (!system.empty() && m.system.find(system) == std::string::npos) continue;
    const auto sk = std::make_tuple(m.system, m.nRanks, m.nNodes);
    auto it = shapes.find(sk);
    if (it == shapes.end()) {
      auto topo = platform.empty() ? topologyForSystem(m.system, m.nRanks, m.nNodes, m.ncclVersion)
                                   : topologyForPlatform(platform, m.nRanks, m.nNodes, m.ncclVersion);
      std::string standIn;
      if (!topo && platform.empty() && topo.error() == unknownSystemReason(m.system)) {
        topo = topologyForPlatform(kStandInPlatform, m.nRanks, m.nNodes, m.ncclVersion);
        standIn = kStandInPlatform;
        const std::string note = "no platform describes '" + m.system + "': NCCL's model of " + standIn +
                                 " stands in to read half-forced rows and order NCCL's table; no fact of it is the "
                                 "machine's (declare one: --platform FILE or --measured-on NAME)";
        if (topo && std::find(data.notes.begin(), data.notes.end(), note) == data.notes.end()) data.notes.push_back(note);
      }
      if (!topo) {
        ++data.skipped[topo.error()];
        continue;
      }
      // What the system text says NCCL ran with switches features off for every row of it.
      const StatedNcclSettings stated = statedNcclSettings(m.system);
      if (stated.nvlsOff) topo->nvlsSupport = false;
      if (stated.collnetOff) topo->collnetSupport = false;
      auto ref = model::NcclReference::create(topo.value());
      if (!ref) {
        ++data.skipped[ref.error()];
        continue;
      }
      auto s = std::make_unique<Shape>(Shape{m.system, m.nRanks, m.nNodes, topo.value(),
                                             std::make_shared<const model::NcclReference>(std::move(ref.value())), standIn});
      it = shapes.emplace(sk, s.get()).first;
      data.shapes.push_back(std::move(s));
    }
    auto& [shape, a] = acc[{m.group, m.nRanks, m.nNodes, int(m.coll), m.bytes}];
    shape = it->second;
    if (!m.forced()) {
      a.def.push_back(m.time_us);
      if (m.ncclRan) a.stated.insert(*m.ncclRan);
      a.channels.insert(m.reportedChannels);
      const StatedNcclSettings s = statedNcclSettings(m.system).with(statedNcclSettings(m.note));
      if (a.settings && !(*a.settings == s)) a.settingsDiffer = true;
      a.settings = s;
      continue;
    }
    const Config c = it->second->nccl->restrictedConfig(m.coll, m.bytes, m.forcedAlgo, m.forcedProto);
    if (c.algo == Algo::Default) {
      ++data.skipped["forced configuration NCCL could not run"];
      continue;
    }
    if (m.forcedAlgo && m.forcedProto) {
      a.forced[Config{c.algo, c.proto, m.forcedChannels, m.forcedChunk}].push_back(m.time_us);
      continue;
    }
    // Half-forced (the protocol, the algorithm or both left to NCCL): the model's resolution stands only
    // where the point's runs do not contradict it (resolveHalfForced, once every row is in).
    HalfForced& h = a.half[{m.forcedAlgo ? int(*m.forcedAlgo) : -1, m.forcedProto ? int(*m.forcedProto) : -1,
                            m.forcedChannels, m.forcedChunk}];
    h.algo = m.forcedAlgo, h.proto = m.forcedProto;
    h.resolved = Config{c.algo, c.proto, m.forcedChannels, m.forcedChunk};
    h.samples_us.push_back(m.time_us);
  }
  std::vector<const std::map<std::tuple<int, int, int, uint64_t>, HalfForced>*> halves;  // per point
  for (const auto& [key, sa] : acc) {
    const auto& [shape, a] = sa;
    halves.push_back(&a.half);
    ReplayPoint p;
    p.group = std::get<0>(key);
    p.shape = shape;
    p.coll = Collective(std::get<3>(key));
    p.bytes = std::get<4>(key);
    // Rows that state different settings say nothing the model does not.
    p.ncclDefault = a.settings && !a.settingsDiffer ? statedPick(*shape, p.coll, p.bytes, *a.settings)
                                                   : shape->nccl->defaultConfig(p.coll, p.bytes);
    if (a.stated.size() == 1) {  // rows that disagree say nothing the model does not
      p.ncclDefault = Config{a.stated.begin()->first, a.stated.begin()->second, 0, 0};
      p.defaultSettledBy = DefaultSettledBy::Stated;
    }
    if (a.channels.size() == 1) p.defaultChannels = *a.channels.begin();  // rows that disagree say nothing
    if (!a.def.empty()) p.default_us = medianOf(a.def);
    for (const auto& [k, f] : a.forced) p.forced_us[k] = medianOf(f);
    p.default_samples_us = a.def;
    p.forced_samples_us = a.forced;
    data.points.push_back(std::move(p));
  }
  // Half-forced rows are judged against the spread the fully forced and default rows' repeats show.
  const RepeatSpread repeats = repeatSpread(data.points, data.repeatSigma);
  int byRuns = 0;
  for (size_t i = 0; i < data.points.size(); ++i) {
    ReplayPoint& p = data.points[i];
    for (const auto& [hk, h] : *halves[i]) byRuns += resolveHalfForced(p.forced_samples_us, h, repeats, data);
    for (const auto& [k, f] : p.forced_samples_us) p.forced_us[k] = medianOf(f);
  }
  if (byRuns)
    data.notes.push_back(std::to_string(byRuns) + " group(s) of half-forced rows (NCCL left to pick the protocol or the "
                         "algorithm) ran other than NCCL's model resolves them, their times far from the model's "
                         "resolution forced in full: read as the fully forced configuration they match");
  fitNoise(data);
  int comparisons = 0;
  for (const ReplayPoint& p : data.points)
    comparisons += p.forced_samples_us.count(Config{p.ncclDefault.algo, p.ncclDefault.proto, 0, 0}) > 0;
  const double gapSds = refutingGapSds(comparisons);
  for (ReplayPoint& p : data.points) settleDefault(p, data, gapSds);
  return data;
}

std::vector<std::string> describeSkipped(const std::map<std::string, int>& skipped) {
  std::vector<std::pair<int, std::string>> byRows;
  for (const auto& [reason, n] : skipped) byRows.emplace_back(-n, reason);
  std::sort(byRows.begin(), byRows.end());
  std::vector<std::string> out;
  for (const auto& [n, reason] : byRows) out.push_back("skipped " + std::to_string(-n) + " rows: " + reason);
  return out;
}

}  // namespace dynamiccl::measurements

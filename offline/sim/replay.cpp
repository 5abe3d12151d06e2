#include "offline/sim/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

namespace dynamiccl::sim {
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

Expected<ReplayData> buildReplayData(const std::vector<Measurement>& rows, const std::string& system,
                                     const std::string& platform) {
  ReplayData data;
  std::map<std::tuple<std::string, int, int>, Shape*> shapes;
  struct Acc { std::vector<double> def; std::map<std::pair<Algo, Proto>, std::vector<double>> forced; };
  std::map<std::tuple<std::string, int, int, int, uint64_t>, std::pair<const Shape*, Acc>> acc;
  for (const Measurement& m : rows) {
    if (!system.empty() && m.system.find(system) == std::string::npos) continue;
    const auto sk = std::make_tuple(m.system, m.nRanks, m.nNodes);
    auto it = shapes.find(sk);
    if (it == shapes.end()) {
      auto topo = platform.empty() ? topologyForSystem(m.system, m.nRanks, m.nNodes, m.ncclVersion)
                                   : topologyForPlatform(platform, m.nRanks, m.nNodes, m.ncclVersion);
      if (!topo) {
        ++data.skipped[topo.error()];
        continue;
      }
      auto ref = NcclReference::create(topo.value());
      if (!ref) {
        ++data.skipped[ref.error()];
        continue;
      }
      auto s = std::make_unique<Shape>(Shape{m.system, m.nRanks, m.nNodes, topo.value(),
                                             std::make_shared<const NcclReference>(std::move(ref.value()))});
      it = shapes.emplace(sk, s.get()).first;
      data.shapes.push_back(std::move(s));
    }
    auto& [shape, a] = acc[{m.group, m.nRanks, m.nNodes, int(m.coll), m.bytes}];
    shape = it->second;
    if (!m.forced()) {
      a.def.push_back(m.time_us);
      continue;
    }
    const Config c = it->second->nccl->restrictedConfig(m.coll, m.bytes, m.forcedAlgo, m.forcedProto);
    if (c.algo == Algo::Default) {
      ++data.skipped["forced configuration NCCL could not run"];
      continue;
    }
    a.forced[{c.algo, c.proto}].push_back(m.time_us);
  }
  for (const auto& [key, sa] : acc) {
    const auto& [shape, a] = sa;
    ReplayPoint p;
    p.group = std::get<0>(key);
    p.shape = shape;
    p.coll = Collective(std::get<3>(key));
    p.bytes = std::get<4>(key);
    p.ncclDefault = shape->nccl->defaultConfig(p.coll, p.bytes);
    if (!a.def.empty()) p.default_us = medianOf(a.def);
    for (const auto& [k, f] : a.forced) p.forced_us[k] = medianOf(f);
    data.points.push_back(std::move(p));
  }
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

ReplaySummary replay(const ReplayData& data, const DecisionFn& decide, bool progress,
                     const std::function<bool(const ReplayPoint&)>& forcedBy) {
  ReplaySummary s;
  double logBest = 0, logDefault = 0;
  size_t done = 0;
  for (const ReplayPoint& p : data.points) {
    if (progress && (++done % 200 == 0 || done == data.points.size()))
      std::fprintf(stderr, "\r[replay] %zu/%zu points", done, data.points.size());
    ++s.points;
    const model::CostTable table = p.shape->nccl->costTable(p.coll, p.bytes);
    const Config c = decide(p, table);
    if (c.nChannels > 0) ++s.channelOverrides;
    const bool isDefault = c.algo == p.ncclDefault.algo && c.proto == p.ncclDefault.proto;
    const auto forcedRow = p.forced_us.find({c.algo, c.proto});
    double chosen = -1;
    // A forced choice is judged by the rows that forced it: the default rows ran what NCCL chose, which
    // the model's guess names but no row says, so they judge only a call the plugin left to NCCL.
    const bool forced = forcedBy && forcedBy(p);
    if (forced && forcedRow != p.forced_us.end()) chosen = forcedRow->second;
    else if (isDefault && p.default_us > 0 && !forced) chosen = p.default_us;
    else if (forcedRow != p.forced_us.end()) chosen = forcedRow->second;
    if (chosen <= 0) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "%s %s %dr/%dn %llu B: %s/%s not measured", p.group.substr(0, 40).c_str(),
                    std::string(collectiveName(p.coll)).c_str(), p.shape->nRanks, p.shape->nNodes,
                    static_cast<unsigned long long>(p.bytes), std::string(algoNcclName(c.algo)).c_str(),
                    std::string(protoNcclName(c.proto)).c_str());
      s.unjudged.push_back(buf);
      continue;
    }
    ++s.judged;
    if (isDefault) ++s.keptDefault;
    s.perPoint.push_back({&p, c, chosen});
    const double vsBest = chosen / p.best_us();
    logBest += std::log(vsBest);
    s.worstVsBest = std::max(s.worstVsBest, vsBest);
    if (p.default_us > 0) {
      const double vsDefault = chosen / p.default_us;
      ++s.vsDefaultPoints;
      logDefault += std::log(vsDefault);
      s.worstVsDefault = std::max(s.worstVsDefault, vsDefault);
    }
  }
  if (progress) std::fprintf(stderr, "\n");
  s.geomeanVsBest = s.judged ? std::exp(logBest / s.judged) : 0;
  s.geomeanVsDefault = s.vsDefaultPoints ? std::exp(logDefault / s.vsDefaultPoints) : 0;
  return s;
}

}  // namespace dynamiccl::sim

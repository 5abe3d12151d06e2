#include "offline/sim/replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dynamiccl::sim {

using measurements::ReplayData;
using measurements::ReplayPoint;

ReplaySummary replay(const ReplayData& data, const DecisionFn& decide, bool progress,
                     const std::function<bool(const ReplayPoint&)>& forcedBy) {
  ReplaySummary s;
  double logBest = 0, logDefault = 0;
  size_t done = 0;
  for (const ReplayPoint& p : data.points) {
    if (progress && (++done % 200 == 0 || done == data.points.size()))
      std::fprintf(stderr, "\r[replay] %zu/%zu points", done, data.points.size());
    ++s.points;
    const model::CostTable table = p.costTable();
    const Config c = decide(p, table);
    // Judged per configuration: at the channel count the decision set where the rows force counts here,
    // else at NCCL's own (rows that state no count cannot tell counts apart).
    const Config arm = p.judgedAs(c);
    const bool isDefault = p.isDefaultConfig(c);
    if (c.nChannels > 0 && !isDefault) ++(arm.nChannels > 0 ? s.channelsJudged : s.channelOverrides);
    const auto forcedRow = p.forced_us.find(arm);
    double chosen = -1;
    // A forced choice is judged by the rows that forced it: the default rows ran what NCCL chose, which
    // the model's guess names but no row says, so they judge only a call the plugin left to NCCL.
    const bool forced = forcedBy && forcedBy(p);
    if (forced && forcedRow != p.forced_us.end()) chosen = forcedRow->second;
    else if (isDefault && p.default_us > 0 && !forced) chosen = p.default_us;
    else if (forcedRow != p.forced_us.end()) chosen = forcedRow->second;
    if (chosen <= 0) {
      char buf[240];
      std::snprintf(buf, sizeof buf, "%s %s %dr/%dn %llu B: %s/%s%s not measured", p.group.substr(0, 40).c_str(),
                    std::string(collectiveName(p.coll)).c_str(), p.shape->nRanks, p.shape->nNodes,
                    static_cast<unsigned long long>(p.bytes), std::string(algoNcclName(c.algo)).c_str(),
                    std::string(protoNcclName(c.proto)).c_str(),
                    !p.statesChannels() ? ""
                    : arm.nChannels > 0 ? (" at " + std::to_string(arm.nChannels) + " channels").c_str()
                                        : " at NCCL's own channel count (the rows force counts here)");
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

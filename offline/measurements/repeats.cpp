// Rows -> points with every repeat kept: the decision rule estimates noise from them.
#include <map>
#include <tuple>

#include "offline/measurements/measurements.h"

namespace dynamiccl::measurements {

std::string MeasuredArm::label() const {
  if (!forced()) return "nccl-default";
  std::string s;
  if (forcedAlgo) s += "NCCL_ALGO=" + std::string(algoNcclName(*forcedAlgo));
  if (forcedProto) s += std::string(s.empty() ? "" : " ") + "NCCL_PROTO=" + std::string(protoNcclName(*forcedProto));
  if (forcedChannels > 0)
    s += std::string(s.empty() ? "" : " ") + "NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=" + std::to_string(forcedChannels);
  if (forcedChunk > 0) s += " chunk=" + std::to_string(forcedChunk);
  return s;
}

std::vector<MeasuredPoint> groupRepeats(const std::vector<Measurement>& rows) {
  std::map<std::tuple<std::string, int, int, int, uint64_t>, MeasuredPoint> points;
  for (const Measurement& m : rows) {
    MeasuredPoint& p = points[{m.group, m.nRanks, m.nNodes, int(m.coll), m.bytes}];
    if (p.arms.empty()) p = MeasuredPoint{m.system, m.group, m.coll, m.nRanks, m.nNodes, m.bytes, {}};
    MeasuredArm* arm = nullptr;
    for (MeasuredArm& a : p.arms)
      if (a.forcedAlgo == m.forcedAlgo && a.forcedProto == m.forcedProto && a.forcedChannels == m.forcedChannels &&
          a.forcedChunk == m.forcedChunk)
        arm = &a;
    if (!arm) arm = &p.arms.emplace_back(MeasuredArm{m.forcedAlgo, m.forcedProto, m.forcedChannels, m.forcedChunk, {}});
    arm->samples_us.push_back(m.time_us);
    if (const double sd = logSdOfSpread(m.statedRuns, m.statedSpread); m.statedRuns >= 2) {
      arm->statedSumSquares += sd * sd * (m.statedRuns - 1);
      arm->statedDof += m.statedRuns - 1;
    }
  }
  std::vector<MeasuredPoint> out;
  out.reserve(points.size());
  for (auto& [k, p] : points) out.push_back(std::move(p));
  return out;
}

}  // namespace dynamiccl::measurements

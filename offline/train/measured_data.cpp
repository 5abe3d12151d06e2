// Real measurements as training rows, and the hardware they were measured on.
#include "offline/train/measured_data.h"

#include <cmath>

#include "offline/train/sim_adapter.h"
#include "policy/policy.h"

namespace dynamiccl::train {
namespace {

Sample measuredRow(const TopologyFingerprint& fp, Collective coll, uint64_t bytes, Algo algo, Proto proto,
                   double time_us, float weight) {
  Sample s;
  encodeContext(fp, coll, bytes, {}, std::span<float, kContextFeatures>(s.inputs, kContextFeatures));
  encodeConfig(algo, proto, 0, std::span<float, kConfigFeatures>(s.inputs + kContextFeatures, kConfigFeatures));
  std::fill(s.window, s.window + kTimingWindowLength, 0.0f);  // measurements carry no recent timings
  s.logLatency_us = static_cast<float>(std::log(time_us));
  s.weight = weight;
  return s;
}

}  // namespace

std::vector<Sample> measuredSamples(const measurements::ReplayData& data, float weight,
                                    const std::function<bool(const measurements::Shape&)>& keep) {
  std::vector<Sample> out;
  for (const measurements::ReplayPoint& p : data.points) {
    if (!p.shape || (keep && !keep(*p.shape))) continue;
    const TopologyFingerprint fp = fingerprintOf(p.shape->topology);
    const bool defaultKnown = p.ncclDefault.algo != Algo::Default && p.ncclDefault.proto != Proto::Default;
    if (p.default_us > 0 && defaultKnown)
      out.push_back(measuredRow(fp, p.coll, p.bytes, p.ncclDefault.algo, p.ncclDefault.proto, p.default_us, weight));
    // A row at a forced channel count or chunk is another configuration than the network scores.
    for (const auto& [config, t] : p.forced_us)
      if (t > 0 && config.algo != Algo::Default && config.proto != Proto::Default && config.nChannels == 0 &&
          config.chunkBytes == 0)
        out.push_back(measuredRow(fp, p.coll, p.bytes, config.algo, config.proto, t, weight));
  }
  return out;
}

Expected<ClusterHardware> measuredHardware(const measurements::ReplayData& data) {
  std::optional<ClusterHardware> hw;
  std::string first;
  for (const auto& shape : data.shapes) {
    ClusterHardware h = model::clusterHardwareOf(shape->topology);
    h.source = "measured on " + shape->topology.name + " (dataset system " + shape->system + ")";
    if (!hw) {
      hw = h;
      first = shape->system;
    } else if (h.computeCap != hw->computeCap || h.nvlinkBwPerGpu_GBps != hw->nvlinkBwPerGpu_GBps ||
               h.nicsPerNode != hw->nicsPerNode || h.nicSpeed_GBps != hw->nicSpeed_GBps) {
      return makeError("the measurements span several machines ('" + first + "', '" + shape->system +
                       "'): declare the cluster the profile is for");
    }
  }
  if (!hw) return makeError("no measured shape with a known platform");
  return *hw;
}

Expected<measurements::ReplayData> loadReplayData(const std::string& csvPath, const std::string& platform) {
  auto loaded = measurements::loadMeasurements(csvPath);
  if (!loaded) return makeError(csvPath + ": " + loaded.error());
  auto data = measurements::buildReplayData(loaded->rows, "", platform);
  if (!data) return makeError(csvPath + ": " + data.error());
  for (const auto& [reason, n] : loaded->skipped) data->skipped[reason] += n;
  return data;
}

bool machineMatches(const std::string& name, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes)
    if (!p.empty() && name.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace dynamiccl::train

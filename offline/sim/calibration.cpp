// Calibrated parameters in their stored form (offline/platforms/calibration/<dataset>.json), and a
// group's parameters from it. The fit that writes them is the lab's (lab/calibrate).
#include "offline/sim/calibration.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "offline/platforms/platforms.h"
#include "offline/sim/fitted_params.h"

namespace dynamiccl::sim {

std::string defaultCalibrationDir() { return platforms::dataRoot().path + "/offline/platforms/calibration"; }

SimParams paramsForGroup(const DatasetCalibration& c, const std::string& group) {
  for (const auto& g : c.groups)
    if (g.group == group) return g.params;
  return SimParams{};
}

double nicViewForGroup(const DatasetCalibration& c, const std::string& group) {
  for (const auto& g : c.groups)
    if (g.group == group) return g.ncclNicBw_GBps;
  return 0.0;
}

std::string paramsToJson(const SimParams& p) {
  nlohmann::ordered_json j;
  for (const FittedParam& f : kFitted) j[f.name] = std::round(p.*(f.field) * 1e6) / 1e6;
  j["chanCost_us"] = p.chanCost_us;
  j["noiseSigma"] = p.noiseSigma;
  j["congestionProb"] = p.congestionProb;
  j["congestionLength"] = p.congestionLength;
  j["congestionSlowdown"] = p.congestionSlowdown;
  return j.dump();
}

namespace {
Expected<SimParams> paramsFromJsonValue(const nlohmann::json& j) {
  if (!j.is_object()) return makeError("simulator params: not an object");
  SimParams p;
  for (const auto& [key, v] : j.items()) {
    if (!v.is_number()) return makeError("simulator params: '" + key + "' is not a number");
    bool known = false;
    for (const FittedParam& f : kFitted)
      if (key == f.name) p.*(f.field) = v.get<double>(), known = true;
    if (key == "chanCost_us") p.chanCost_us = v.get<double>(), known = true;
    if (key == "noiseSigma") p.noiseSigma = v.get<double>(), known = true;
    if (key == "congestionProb") p.congestionProb = v.get<double>(), known = true;
    if (key == "congestionLength") p.congestionLength = v.get<int>(), known = true;
    if (key == "congestionSlowdown") p.congestionSlowdown = v.get<double>(), known = true;
    if (!known) return makeError("simulator params: unknown field '" + key + "'");
  }
  return p;
}
}  // namespace

Expected<SimParams> paramsFromJson(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return makeError("simulator params: invalid JSON");
  return paramsFromJsonValue(j);
}

std::string calibrationToJson(const DatasetCalibration& c) {
  // Hand-formatted: one group per line keeps diffs of re-fits readable.
  std::ostringstream s;
  s << "{\"format\": \"dynamiccl-sim-calibration\", \"version\": 1, \"dataset\": " << nlohmann::json(c.dataset).dump()
    << ",\n \"rows\": " << c.rows << ", \"mape\": " << std::round(c.mape * 1e4) / 1e4 << ",\n \"groups\": [\n";
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const auto& g = c.groups[i];
    s << "  {\"group\": " << nlohmann::json(g.group).dump() << ", \"rows\": " << g.rows
      << ", \"mape\": " << std::round(g.mape * 1e4) / 1e4;
    if (g.ncclNicBw_GBps > 0) s << ", \"ncclNicBw_GBps\": " << g.ncclNicBw_GBps;
    s << ",\n   \"params\": " << paramsToJson(g.params) << "}"
      << (i + 1 < c.groups.size() ? "," : "") << "\n";
  }
  s << " ]}\n";
  return s.str();
}

Expected<DatasetCalibration> calibrationFromJson(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("calibration: invalid JSON");
  if (j.value("format", "") != "dynamiccl-sim-calibration") return makeError("calibration: wrong format tag");
  DatasetCalibration c;
  c.dataset = j.value("dataset", "");
  if (!j.contains("groups") || !j["groups"].is_array()) return makeError("calibration: no groups");
  for (const auto& g : j["groups"]) {
    if (!g.is_object() || !g.contains("group") || !g.contains("params")) return makeError("calibration: bad group");
    GroupCalibration gc;
    gc.group = g["group"].get<std::string>();
    auto p = paramsFromJsonValue(g["params"]);
    if (!p) return makeError("calibration group '" + gc.group + "': " + p.error());
    gc.params = p.value();
    gc.rows = g.value("rows", 0);
    gc.mape = g.value("mape", 0.0);
    gc.ncclNicBw_GBps = g.value("ncclNicBw_GBps", 0.0);
    c.groups.push_back(gc);
  }
  return c;
}

Expected<DatasetCalibration> loadCalibrationFile(const std::string& path) {
  auto text = readRegularFile(path, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
  if (!text) return makeError(text.error());
  auto c = calibrationFromJson(*text);
  if (!c) return makeError(path + ": " + c.error());
  return c;
}

}  // namespace dynamiccl::sim


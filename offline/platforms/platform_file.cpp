// Reading and writing one platform file.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "offline/platforms/platform.h"
#include "offline/platforms/topology_presets.h"

namespace dynamiccl::platforms {

namespace {

using nlohmann::json;

Expected<std::string> stringField(const json& j, const char* key) {
  if (!j.is_string()) return makeError(std::string("\"") + key + "\" must be a string");
  return j.get<std::string>();
}

Expected<std::vector<std::string>> systemPatterns(const json& j) {
  if (!j.is_array()) return makeError("\"systems\" must be an array of strings");
  std::vector<std::string> out;
  for (const json& s : j) {
    if (!s.is_string() || s.get<std::string>().empty()) return makeError("\"systems\" entries must be non-empty strings");
    out.push_back(s.get<std::string>());
  }
  return out;
}

Expected<std::optional<CalibrationSource>> calibrationSource(const json& j) {
  if (j.is_null()) return std::optional<CalibrationSource>{};
  if (!j.is_object()) return makeError("\"calibration\" must be {\"dataset\": ..., \"group\": ...} or null");
  CalibrationSource c;
  for (const auto& [key, v] : j.items()) {
    if (key != "dataset" && key != "group") return makeError("\"calibration\": unknown key \"" + key + "\"");
    if (!v.is_string()) return makeError("\"calibration\": \"" + key + "\" must be a string");
    (key == "dataset" ? c.dataset : c.group) = v.get<std::string>();
  }
  // The dataset names a file in the calibration folder: a bare name, never a path.
  if (c.dataset.empty() || c.dataset.find_first_of("/\\") != std::string::npos || c.dataset.front() == '.')
    return makeError("\"calibration\": \"dataset\" must name a file of the calibration folder (no path)");
  return std::optional<CalibrationSource>(c);
}

// The most nodes a training machine may have: a rollout simulates every configuration at each key.
constexpr int kMaxTrainingNodes = 512;

Expected<TrainingMachines> trainingMachines(const json& j) {
  if (!j.is_object()) return makeError("\"train\" must be {\"nodes\": [...], \"order\": ...}");
  TrainingMachines t;
  for (const auto& [key, v] : j.items()) {
    if (key == "nodes") {
      if (!v.is_array() || v.empty()) return makeError("\"train\": \"nodes\" must be a non-empty array of node counts");
      for (const json& n : v) {
        if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxTrainingNodes)
          return makeError("\"train\": \"nodes\" entries must be integers 1.." + std::to_string(kMaxTrainingNodes));
        t.nodes.push_back(n.get<int>());
      }
    } else if (key == "order") {
      if (!v.is_number_integer()) return makeError("\"train\": \"order\" must be an integer");
      t.order = v.get<int>();
    } else if (key == "calibrate") {
      if (!v.is_boolean()) return makeError("\"train\": \"calibrate\" must be true or false");
      t.calibrate = v.get<bool>();
    } else {
      return makeError("\"train\": unknown key \"" + key + "\"");
    }
  }
  if (t.nodes.empty()) return makeError("\"train\": \"nodes\" is required");
  return t;
}

}  // namespace

Expected<Platform> platformFromJson(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("not a JSON object");
  if (!j.contains("format") || j["format"] != std::string(kPlatformFormat))
    return makeError("\"format\" must be \"" + std::string(kPlatformFormat) + "\"");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != kPlatformVersion)
    return makeError("\"version\" must be " + std::to_string(kPlatformVersion));
  Platform p;
  bool haveTopology = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "format" || key == "version") continue;
    if (key == "name" || key == "description" || key == "source") {
      auto s = stringField(v, key.c_str());
      if (!s) return makeError(s.error());
      (key == "name" ? p.name : key == "description" ? p.description : p.source) = *s;
    } else if (key == "systems") {
      auto s = systemPatterns(v);
      if (!s) return makeError(s.error());
      p.systems = std::move(*s);
    } else if (key == "calibration") {
      auto c = calibrationSource(v);
      if (!c) return makeError(c.error());
      p.calibration = std::move(*c);
    } else if (key == "train") {
      auto t = trainingMachines(v);
      if (!t) return makeError(t.error());
      p.train = std::move(*t);
    } else if (key == "topology") {
      if (!v.is_object()) return makeError("\"topology\" must be an object");
      // The platform names the topology; the node count is each run's (--nodes).
      if (v.contains("name") || v.contains("nNodes")) return makeError("\"topology\" takes neither \"name\" nor \"nNodes\"");
      auto t = sim::topologyFromJson(v.dump());
      if (!t) return makeError("\"topology\": " + t.error());
      p.topology = std::move(*t);
      haveTopology = true;
    } else {
      return makeError("unknown key \"" + key + "\"");
    }
  }
  if (p.name.empty()) return makeError("\"name\" is required");
  for (char c : p.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return makeError("\"name\" may hold only letters, digits, '-', '_' and '.'");
  if (!haveTopology) return makeError("\"topology\" is required");
  p.topology.name = p.name;
  return p;
}

std::string platformToJson(const Platform& p) {
  nlohmann::ordered_json j;
  j["format"] = kPlatformFormat;
  j["version"] = kPlatformVersion;
  j["name"] = p.name;
  j["description"] = p.description;
  j["source"] = p.source;
  j["systems"] = p.systems;
  if (p.calibration) j["calibration"] = {{"dataset", p.calibration->dataset}, {"group", p.calibration->group}};
  else j["calibration"] = nullptr;
  if (p.train) {
    j["train"] = {{"nodes", p.train->nodes}};
    if (p.train->order) j["train"]["order"] = *p.train->order;
    if (p.train->calibrate) j["train"]["calibrate"] = true;
  }
  auto topo = nlohmann::ordered_json::parse(sim::topologyToJson(p.topology));
  topo.erase("name");
  topo.erase("nNodes");
  j["topology"] = topo;
  return j.dump(2) + "\n";
}

Expected<Platform> loadPlatformFile(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return makeError("platform file " + path + ": not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec || size > kMaxPlatformFileBytes)
    return makeError("platform file " + path + ": larger than " + std::to_string(kMaxPlatformFileBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  std::string text(static_cast<size_t>(size), '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(size))) return makeError("platform file " + path + ": cannot read");
  auto p = platformFromJson(text);
  if (!p) return makeError("platform file " + path + ": " + p.error());
  p->file = path;
  return p;
}

}  // namespace dynamiccl::platforms

#include "offline/tune/tune_report.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "offline/tune/profile_export.h"

namespace dynamiccl::tune {

using nlohmann::json;

TuneReport makeReport(const TuneResult& result, const std::vector<TunedInterval>& intervals,
                      const std::vector<std::vector<Config>>& chosenPerCollective, const std::string& name,
                      JobKnobAdvice knobs) {
  TuneReport r;
  r.backend = result.backend;
  r.nRanks = result.nRanks;
  r.nNodes = result.nNodes;
  r.spentIterations = result.spentIterations;
  r.gridIterations = result.gridIterations;
  r.profile = toProfile(intervals, name, result.nRanks, result.nNodes, result.evidence);
  r.jobKnobs = std::move(knobs);
  for (size_t ci = 0; ci < result.collectives.size(); ++ci) {
    const CollectiveResult& cr = result.collectives[ci];
    for (size_t i = 0; i < cr.keys.size(); ++i) {
      const KeyResult& k = cr.keys[i];
      KeySummary s;
      s.coll = cr.coll;
      s.bytes = k.key.bytes;
      s.bestLabel = decisionLabel(k.best().config);
      s.best_us = k.best().median_us();
      s.default_us = k.keep().median_us();
      s.chosen = ci < chosenPerCollective.size() && i < chosenPerCollective[ci].size() ? chosenPerCollective[ci][i] : Config{};
      s.chosenLabel = decisionLabel(s.chosen);
      const ConfigStats* c = k.find(s.chosen);
      s.chosen_us = c ? c->median_us() : s.default_us;
      s.spentIterations = k.spentIterations;
      r.keys.push_back(s);
    }
  }
  return r;
}

std::string reportToJson(const TuneReport& r) {
  json j;
  j["format"] = "dynamiccl-tune-report";
  j["version"] = 1;
  j["backend"] = r.backend;
  j["nRanks"] = r.nRanks;
  j["nNodes"] = r.nNodes;
  j["spentIterations"] = r.spentIterations;
  j["gridIterations"] = r.gridIterations;
  j["profile"] = json::parse(policy::profileToJson(r.profile));
  j["jobKnobs"] = {{"NCCL_NTHREADS", r.jobKnobs.knobs.nThreads}, {"NCCL_BUFFSIZE", r.jobKnobs.knobs.buffSizeBytes},
                   {"reasons", r.jobKnobs.reasons}};
  json keys = json::array();
  for (const KeySummary& k : r.keys)
    keys.push_back({{"collective", collectiveName(k.coll)}, {"bytes", k.bytes}, {"best", k.bestLabel},
                    {"chosen", k.chosenLabel}, {"chosen_algo", algoName(k.chosen.algo)},
                    {"chosen_proto", protoName(k.chosen.proto)}, {"default_us", k.default_us},
                    {"best_us", k.best_us}, {"chosen_us", k.chosen_us}, {"spent", k.spentIterations}});
  j["keys"] = keys;
  return j.dump(1) + "\n";
}

Expected<TuneReport> parseReportJson(std::string_view text) {
  TuneReport r;
  try {
    const json j = json::parse(text);
    if (j.value("format", "") == "dynamiccl-profile") {
      auto p = policy::parseProfileJson(text);
      if (!p) return makeError(p.error());
      r.profile = std::move(p.value());
      return r;
    }
    if (j.value("format", "") != "dynamiccl-tune-report") return makeError("not a dynamiccl tune report or profile");
    auto p = policy::parseProfileJson(j.at("profile").dump());
    if (!p) return makeError("profile: " + p.error());
    r.profile = std::move(p.value());
    r.backend = j.value("backend", "");
    r.nRanks = j.value("nRanks", 0);
    r.nNodes = j.value("nNodes", 0);
    r.spentIterations = j.value("spentIterations", int64_t{0});
    r.gridIterations = j.value("gridIterations", int64_t{0});
    const json& k = j.at("jobKnobs");
    r.jobKnobs.knobs.nThreads = k.value("NCCL_NTHREADS", 0);
    r.jobKnobs.knobs.buffSizeBytes = k.value("NCCL_BUFFSIZE", uint64_t{0});
    r.jobKnobs.reasons = k.value("reasons", std::vector<std::string>{});
  } catch (const std::exception& e) {
    return makeError(std::string("tune report: ") + e.what());
  }
  return r;
}

Expected<TuneReport> loadReportFile(const std::string& path) {
  auto text = readRegularFile(path, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
  if (!text) return makeError(text.error());
  auto r = parseReportJson(*text);
  if (!r) return makeError(path + ": " + r.error());
  return r;
}

}  // namespace dynamiccl::tune

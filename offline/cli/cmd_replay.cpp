// dynamiccl replay: drive the real plugin library (through the harness) over every measured point
// of a normalized.csv and judge its decisions against measured times; or write the profiles that
// reproduce NCCL's default and the simulator's best per size bucket (--make-profiles DIR).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "offline/jobreplay/jobreplay.h"
#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/files/files.h"
#include "offline/cli/plugin_locator.h"
#include "offline/cli/value_checks.h"
#include "policy/policy.h"
#include "offline/sim/sim.h"

namespace dynamiccl::cli {
namespace {

struct ReplayCmdOptions {
  std::string data, system, profile, plugin, makeProfiles, calibration, json;
  std::string trust = "verified";  // the plugin's default (DYNAMICCL_TRUST unset)
  std::string ncclVersion;  // "": the release the data names (every row alike), else 2.28.9
  int maxUnjudged = 8;
  bool asMeasured = true;
  bool points = false;  // one line per judged point
};

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 24)) out += std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '-';
  return out;
}

int makeProfiles(const ReplayCmdOptions& o, const std::vector<measurements::Measurement>& rows, const std::string& dataset) {
  namespace fs = std::filesystem;
  const std::string calFile =
      o.calibration.empty() ? sim::defaultCalibrationDir() + "/" + dataset + ".json" : o.calibration;
  auto cal = sim::loadCalibrationFile(calFile);
  if (!cal) std::cerr << "replay: " << cal.error() << " (simulator defaults used)\n";
  fs::create_directories(o.makeProfiles);
  std::map<std::string, std::string> systems;  // system -> first group seen
  for (const auto& m : rows)
    if (o.system.empty() || m.system.find(o.system) != std::string::npos) systems.try_emplace(m.system, m.group);
  for (const auto& [system, group] : systems) {
    auto data = measurements::buildReplayData(rows, system);
    if (!data) return std::cerr << "replay: " << data.error() << "\n", 1;
    // Variants of one system share a profile: the simulator uses the first group's parameters.
    const sim::SimParams params = cal ? sim::paramsForGroup(cal.value(), group) : sim::SimParams{};
    const std::string base = (fs::path(o.makeProfiles) / (dataset + "--" + slug(system))).string();
    const std::pair<std::string, sim::BucketChooser> kinds[] = {
        {"nccl-default", sim::ncclDefaultChooser()},
        {"sim-best", sim::simBestChooser([params](const measurements::Shape&) { return params; })}};
    for (const auto& [kind, chooser] : kinds) {
      const std::string json = sim::profileJson(dataset + " " + kind, sim::bucketRules(data.value(), chooser));
      auto parsed = policy::parseProfileJson(json);  // what we write must be what the plugin reads
      if (!parsed) return std::cerr << "replay: generated profile is invalid: " << parsed.error() << "\n", 1;
      if (auto s = files::writeFile(base + "." + kind + ".json", json); !s)
        return std::cerr << "replay: " << s.error() << "\n", 1;
      std::printf("%s.%s.json  (%zu rules; system '%s')\n", base.c_str(), kind.c_str(), parsed->rules.size(),
                  system.c_str());
    }
  }
  return 0;
}

// Every judged point as the independent judge records it (shared/tools/judge.py --json), for a
// point-by-point comparison.
Status writePoints(const std::string& path, const jobreplay::ProfileJudgement& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const sim::ReplaySummary::Judged& j : r.summary.perPoint) {
    const measurements::ReplayPoint& p = *j.point;
    const bool kept = p.isDefaultConfig(j.choice);
    nlohmann::json e{{"coll", collectiveName(p.coll)}, {"nranks", p.shape->nRanks}, {"nnodes", p.shape->nNodes},
                     {"bytes", p.bytes}, {"system", p.shape->system}, {"group", p.group},
                     {"choice", std::string(algoNcclName(j.choice.algo)) + "/" + std::string(protoNcclName(j.choice.proto))},
                     {"channels", p.judgedAs(j.choice).nChannels}, {"channels_stated", p.statesChannels()},
                     {"kept_default", kept}, {"forced", r.forced.count(&p) > 0}, {"chosen_us", j.chosen_us},
                     {"best_us", p.best_us()}, {"arms", p.forced_us.size() + (p.default_us > 0)}};
    if (p.default_us > 0) e["default_us"] = p.default_us, e["vs_default"] = j.chosen_us / p.default_us;
    e["vs_best"] = j.chosen_us / p.best_us();
    points.push_back(std::move(e));
  }
  return files::writeFile(path, points.dump(1));
}

void printReplay(const ReplayCmdOptions& o, const std::string& dataset, const jobreplay::ProfileJudgement& r) {
  const sim::ReplaySummary& s = r.summary;
  std::printf("replay %s%s with %s (plugin %s, tuner v%d)\n", dataset.c_str(),
              o.system.empty() ? "" : (" [" + o.system + "]").c_str(), o.profile.c_str(), r.pluginPath.c_str(),
              r.tunerVersion);
  std::printf("  trust: %s%s\n", o.trust.c_str(),
              o.trust == "all" ? " (DYNAMICCL_TRUST=all: unverified rules applied, as a user who opted in)"
                               : " (the plugin's default: only rules verified on this hardware change NCCL's choice; "
                                 "--trust all applies unverified ones)");
  if (r.rcclHost) std::printf("  %s\n", measurements::kRcclRulesLine);
  if (r.hardwareEnv.empty())
    std::printf("  hardware: this host's probe%s\n", o.asMeasured ? " (the data holds more than one hardware)" : "");
  else {
    std::printf("  hardware: the data's, as the plugin would probe it there:");
    for (const std::string& kv : r.hardwareEnv) std::printf(" %s", kv.c_str());
    std::printf("\n");
  }
  std::printf("  points %d, judged %d (%d kept NCCL's default), could not judge %zu\n", s.points, s.judged,
              s.keptDefault, s.unjudged.size());
  for (const std::string& line : measurements::describeSkipped(r.data->skipped)) std::printf("  %s\n", line.c_str());
  for (const std::string& line : r.data->notes) std::printf("  %s\n", line.c_str());
  if (s.judged) {
    size_t runs = 0;  // the real runs behind the judged points' medians
    for (const sim::ReplaySummary::Judged& j : s.perPoint) {
      runs += j.point->default_samples_us.size();
      for (const auto& [arm, xs] : j.point->forced_samples_us) runs += xs.size();
    }
    std::printf("  measured: ratios of the medians of %zu real runs at the %d judged points (each run one measurement, "
                "none resampled)\n", runs, s.judged);
    std::printf("  chosen/best:    geomean %.3f  worst %.3f\n", s.geomeanVsBest, s.worstVsBest);
  }
  if (s.vsDefaultPoints)
    std::printf("  chosen/default: geomean %.3f  worst %.3f  (%d points with a default measurement)\n",
                s.geomeanVsDefault, s.worstVsDefault, s.vsDefaultPoints);
  if (s.judged) {  // what ran, per configuration (its channel count where the rows force counts)
    std::map<std::string, int> ran;
    for (const sim::ReplaySummary::Judged& j : s.perPoint) {
      const measurements::ReplayPoint& p = *j.point;
      const std::string label = p.isDefaultConfig(j.choice) ? "nccl-default" : decisionLabel(p.judgedAs(j.choice));
      ++ran[label + (p.statesChannels() || label == "nccl-default" ? "" : " (channels: not stated)")];
    }
    std::vector<std::pair<int, std::string>> byPoints;
    for (const auto& [label, n] : ran) byPoints.emplace_back(-n, label);
    std::sort(byPoints.begin(), byPoints.end());
    std::printf("  configurations run:");
    for (size_t i = 0; i < byPoints.size() && i < 8; ++i)
      std::printf("%s %s x%d", i ? "," : "", byPoints[i].second.c_str(), -byPoints[i].first);
    std::printf("%s\n", byPoints.size() > 8 ? (", ... " + std::to_string(byPoints.size() - 8) + " more").c_str() : "");
  }
  if (o.points)
    for (const sim::ReplaySummary::Judged& j : s.perPoint) {
      const measurements::ReplayPoint& p = *j.point;
      std::printf("  %-13s %2dr/%dn %8s  %-28s chosen %10.2f us  default %10.2f  best %10.2f  chosen/best %.3f\n",
                  std::string(collectiveName(p.coll)).c_str(), p.shape->nRanks, p.shape->nNodes, sizeText(p.bytes).c_str(),
                  (p.isDefaultConfig(j.choice) ? std::string("nccl-default") : decisionLabel(p.judgedAs(j.choice))).c_str(),
                  j.chosen_us, p.default_us, p.best_us(), j.chosen_us / p.best_us());
    }
  if (s.channelsJudged)
    std::printf("  %d decisions set channels, judged at that count's rows\n", s.channelsJudged);
  if (s.channelOverrides)
    std::printf("  %d decisions set channels where the rows force no count (channels: not stated): judged at NCCL's "
                "own count\n", s.channelOverrides);
  for (size_t i = 0; i < s.unjudged.size() && int(i) < o.maxUnjudged; ++i) std::printf("  not judged: %s\n", s.unjudged[i].c_str());
  if (int(s.unjudged.size()) > o.maxUnjudged) std::printf("  ... and %zu more\n", s.unjudged.size() - o.maxUnjudged);
}

int run(const ReplayCmdOptions& o) {
  const std::string dataset = std::filesystem::path(o.data).parent_path().filename().string();
  if (!o.makeProfiles.empty()) {
    auto loaded = measurements::loadMeasurements(o.data);
    if (!loaded) return std::cerr << "replay: " << loaded.error() << "\n", 1;
    return makeProfiles(o, loaded->rows, dataset);
  }
  if (o.profile.empty()) return std::cerr << "replay: --profile or --make-profiles is required\n", 1;
  auto r = jobreplay::judgeProfile(
      {o.data, o.system, o.profile, locatePlugin(o.plugin), o.trust, o.ncclVersion, o.asMeasured});
  if (!r) return std::cerr << "replay: " << r.error() << "\n", 1;
  if (!o.json.empty())
    if (auto w = writePoints(o.json, *r); !w) return std::cerr << "replay: " << w.error() << "\n", 1;
  printReplay(o, dataset, *r);
  return 0;
}

}  // namespace

void addReplayCommand(CLI::App& app) {
  auto o = std::make_shared<ReplayCmdOptions>();
  CLI::App* cmd = app.add_subcommand("replay", "Judge the plugin's decisions on real measurements");
  addPlatformOption(cmd);
  cmd->add_option("--data", o->data, "a normalized.csv (shared/data/<dataset>/normalized.csv)")->required();
  cmd->add_option("--system", o->system, "only rows whose system contains this text");
  cmd->add_option("--profile", o->profile, "profile the plugin loads (DYNAMICCL_PROFILE)");
  cmd->add_option("--plugin", o->plugin, "plugin library (default: the build tree's)");
  cmd->add_option("--make-profiles", o->makeProfiles,
                  "write <dataset>--<system>.nccl-default.json and .sim-best.json into this folder");
  cmd->add_option("--calibration", o->calibration, "simulator calibration JSON (default: offline/platforms/calibration/<dataset>.json)");
  cmd->add_option("--show-unjudged", o->maxUnjudged, "how many unjudged points to list");
  cmd->add_option("--trust", o->trust, "verified (the plugin's default) or all (as DYNAMICCL_TRUST=all: unverified rules apply)")
      ->check(CLI::IsMember({"verified", "all"}));
  cmd->add_flag("!--host-hardware", o->asMeasured,
                "the plugin sees this host's hardware (default: the data's, through DYNAMICCL_TOPO, when it is one)");
  cmd->add_option("--nccl-version", o->ncclVersion,
                  "the NCCL release to load the plugin as (default: the one the data names, else 2.28.9)")
      ->check(ncclVersionCheck());
  cmd->add_option("--json", o->json, "write every judged point (decision, chosen/default/best times) here");
  cmd->add_flag("--points", o->points, "print every judged point: the configuration run (with its channel count), its time");
  cmd->callback([o] {
    if (const int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli

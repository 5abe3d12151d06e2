// Demo output: the CSVs behind the plots (the lab's simulated demo prints its table and writes its
// summary.json: lab/demo).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "offline/demo/demo_steps.h"
#include "offline/files/files.h"
#include "offline/sim/sim.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {
namespace {

double busBw_GBps(Collective c, uint64_t bytes, double time_us, int nRanks) {
  return measurements::busBandwidth_GBps(c, bytes, time_us, nRanks);
}

std::string name(Collective c) { return std::string(collectiveName(c)); }

}  // namespace

Status writeJudgedCsvs(const JudgedProfiles& r, int nRanks, const std::string& outDir, const std::string& mapped) {
  namespace fs = std::filesystem;
  auto pointsFile = files::OutputFile::open((fs::path(outDir) / "replay_points.csv").string());
  if (!pointsFile) return makeError(pointsFile.error());
  auto mapFile = files::OutputFile::open((fs::path(outDir) / "decision_map.csv").string());
  if (!mapFile) return makeError(mapFile.error());
  std::ostream& points = (*pointsFile)->stream();
  std::ostream& map = (*mapFile)->stream();
  points << "profile,collective,bytes,config,chosen_us,default_us,best_us,chosen_busbw_GBps,default_busbw_GBps,"
            "best_busbw_GBps\n";
  map << "collective,bytes,config\n";
  for (const PointResult& p : r.points) {
    points << p.profile << "," << name(p.coll) << "," << p.bytes << "," << p.config << "," << p.chosen_us << ","
           << p.default_us << "," << p.best_us << "," << busBw_GBps(p.coll, p.bytes, p.chosen_us, nRanks) << ","
           << busBw_GBps(p.coll, p.bytes, p.default_us, nRanks) << "," << busBw_GBps(p.coll, p.bytes, p.best_us, nRanks)
           << "\n";
    if (p.profile == mapped) map << name(p.coll) << "," << p.bytes << "," << p.config << "\n";
  }
  if (auto s = (*pointsFile)->close(); !s) return s;
  return (*mapFile)->close();
}

}  // namespace dynamiccl::cli::demo

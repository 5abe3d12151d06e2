// dynamiccl measurement-cost: what profiling one call costs on this cluster. From a profiler-off and a
// profiler-on nccl-tests run of the same sizes it writes the calibration the plugin reads
// (DYNAMICCL_MEASUREMENT_COST); with no runs it prints the published figures a release is priced by.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <map>

#include "offline/cli/commands.h"
#include "offline/files/files.h"
#include "abi/abi.h"
#include "offline/ingest/ingest.h"
#include "policy/policy.h"
#include "learner/learner.h"

namespace dynamiccl::cli {
namespace {

struct MeasurementCostOptions {
  std::string off, on, out, ncclVersion = "2.31";
};

// Per size, the out-of-place time of every section of an nccl-tests log (the first section's where several repeat).
Expected<std::vector<std::pair<uint64_t, double>>> timesOf(const std::string& path) {
  auto text = readRegularFile(path, kMaxInputFileBytes);  // a FIFO or device is refused, not waited on
  if (!text) return makeError(path + ": " + text.error());
  const ingest::ParsedLog log = ingest::parseNcclTestsLog(*text, path);
  std::map<uint64_t, double> bySize;
  for (const auto& section : log.sections)
    for (const auto& row : section.rows)
      if (row.oop_time_us > 0) bySize.emplace(row.bytes, row.oop_time_us);
  if (bySize.empty()) return makeError(path + ": no nccl-tests rows with a time");
  return std::vector<std::pair<uint64_t, double>>(bySize.begin(), bySize.end());
}

void print(const learner::MeasurementCost& m) {
  std::cout << "measurement cost (" << m.source() << "): share of a profiled call's time\n";
  for (const auto& p : m.points()) {
    char line[96];
    std::snprintf(line, sizeof line, "  %12s  %6.2f%%\n", sizeText(p.bytes).c_str(), 100 * p.share);
    std::cout << line;
  }
}

int run(const MeasurementCostOptions& o) {
  if (o.off.empty() != o.on.empty())
    return std::cerr << "measurement-cost: --off and --on go together (two runs of the same sizes)\n", 2;
  if (o.off.empty()) {
    auto code = abi::parseNcclVersion(o.ncclVersion);
    if (!code) return std::cerr << "measurement-cost: --nccl " << o.ncclVersion << ": not a release such as 2.31\n", 2;
    print(learner::MeasurementCost::published(*code));
    return 0;
  }
  auto off = timesOf(o.off);
  if (!off) return std::cerr << "measurement-cost: " << off.error() << "\n", 1;
  auto on = timesOf(o.on);
  if (!on) return std::cerr << "measurement-cost: " << on.error() << "\n", 1;
  auto m = learner::MeasurementCost::fromRuns(*off, *on, "measured: " + o.off + " (profiler off) vs " + o.on + " (on)");
  if (!m) return std::cerr << "measurement-cost: " << m.error() << "\n", 1;
  print(*m);
  if (o.out.empty()) return 0;
  if (auto s = files::writeFile(o.out, m->toJson()); !s) return std::cerr << "measurement-cost: " << s.error() << "\n", 1;
  std::cout << "wrote " << o.out << " (DYNAMICCL_MEASUREMENT_COST=" << o.out << " prices measurement by it)\n";
  return 0;
}

}  // namespace

void addMeasurementCostCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("measurement-cost",
                                 "what profiling a call costs: the published figures, or a calibration from two runs");
  auto o = std::make_shared<MeasurementCostOptions>();
  cmd->add_option("--off", o->off, "an nccl-tests log run without the profiler");
  cmd->add_option("--on", o->on, "the same sizes run with NCCL_PROFILER_PLUGIN naming this library, every call profiled "
                                 "(DYNAMICCL_BUDGET=record=1)");
  cmd->add_option("-o,--out", o->out, "the calibration file to write (JSON)");
  cmd->add_option("--nccl", o->ncclVersion, "without runs: the release whose published figures to print")
      ->capture_default_str();
  cmd->callback([o] {
    if (const int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli

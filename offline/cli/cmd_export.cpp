// dynamiccl export: a tune report (or profile) as our profile JSON, NVIDIA's example CSV, or
// Meta NCCLX-style CSV keyed on bytes per rank; with --preset/--probe-host/fact flags the JSON
// declares the cluster's hardware ("fingerprint"), which multi-node learned rules need.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include "offline/cli/cluster_facts.h"
#include "offline/cli/commands.h"
#include "offline/cli/platform_option.h"
#include "offline/files/files.h"
#include "offline/tune/tune.h"
#include "offline/verdicts/verdicts.h"
#include "offline/cli/store_location.h"

namespace dynamiccl::cli {
namespace {

struct ExportCmdOptions {
  std::string in, format = "json", out;
  std::string fromStore;  // a store: write the rules in-job verification promoted there
  ClusterFactsOptions cluster;  // declares (or replaces) the profile's "fingerprint"
};

// The verdicts in the store, one line each, then the verified profile of the promoted ones.
Expected<tune::TuneReport> reportFromStore(const std::string& dbFlag) {
  store::StoreOptions options = storeOptions(dbFlag == "default" ? "" : dbFlag);
  options.read_only = true;
  auto db = store::Store::open(options);
  if (!db) return makeError(db.error());
  auto verified = verdicts::profileFromStore(**db, "verified-in-job");
  if (!verified) return makeError(verified.error());
  std::cerr << verified->verdicts.size() << " candidate rule(s) verified in jobs (" << (*db)->path() << "):\n";
  std::map<size_t, const verdicts::RefusedVerdict*> refused;
  for (const verdicts::RefusedVerdict& r : verified->refused) refused[r.index] = &r;
  for (size_t i = 0; i < verified->verdicts.size(); ++i) {
    const auto it = refused.find(i);
    std::cerr << "  " << (it != refused.end() ? "refused (" + it->second->reason + "): " : "")
              << verdicts::describeVerdict(verified->verdicts[i]) << "\n";
  }
  if (!verified->refused.empty())
    std::cerr << "  " << verified->refused.size() << " promoted row(s) refused, each left out; the other "
              << verified->profile.rules.size() << " rule(s) are written\n";
  if (verified->withoutFingerprint)
    std::cerr << "  " << verified->withoutFingerprint
              << " promoted rule(s) were measured on hardware the job could not name: they load unverified\n";
  tune::TuneReport report;
  report.profile = std::move(verified->profile);
  return report;
}

int run(const ExportCmdOptions& o) {
  if (o.in.empty() == o.fromStore.empty())
    return std::cerr << "export: give a tune report or --from-store, one of them\n", 1;
  auto report = o.fromStore.empty() ? tune::loadReportFile(o.in) : reportFromStore(o.fromStore);
  if (!report) return std::cerr << "export: " << report.error() << "\n", 1;
  auto cluster = resolveClusterFacts(o.cluster);
  if (!cluster) return std::cerr << "export: " << cluster.error() << "\n", 1;
  if (*cluster && o.format != "json")
    return std::cerr << "export: a fingerprint exists only in the json format, not " << o.format << "\n", 1;
  if (*cluster) report->profile.hardware = **cluster;
  std::string text;
  if (o.format == "json") {
    text = policy::profileToJson(report->profile);
    // What export writes, validate and the plugin read: a profile they would refuse is not written.
    if (auto back = policy::parseProfileJson(text); !back)
      return std::cerr << "export: the profile would not load (" << back.error() << "); nothing written\n", 1;
  } else if (o.format == "nvidia-csv") {
    text = policy::profileToNvidiaCsv(report->profile);
  } else {
    auto csv = tune::profileToNcclxCsv(report->profile);
    if (!csv) return std::cerr << "export: " << csv.error() << "\n", 1;
    text = *csv;
  }
  if (o.out.empty() || o.out == "-") {
    std::cout << text;
  } else {
    if (auto s = files::writeFile(o.out, text); !s) return std::cerr << "export: " << s.error() << "\n", 1;
    const policy::Profile& p = report->profile;
    const bool json = o.format == "json";
    const size_t said = o.format == "nvidia-csv" ? static_cast<size_t>(std::count_if(p.rules.begin(), p.rules.end(),
                                                                                     policy::nvidiaCsvCanSay))
                                                 : p.rules.size();
    if (said < p.rules.size())
      std::cerr << "export: " << p.rules.size() - said << " of " << p.rules.size()
                << " rules left out: the NVIDIA CSV cannot say them (bytes per rank, node or rank ranges, an "
                   "algorithm without its protocol, or NCCL's algorithm and protocol kept)\n";
    std::cerr << "wrote " << o.out << " (" << said << " rules"
              << (json && !p.policySection.empty() ? ", learned policy" : "") << (json && p.hardware ? ", fingerprint" : "") << ", "
              << o.format << ")\n";
  }
  return 0;
}

}  // namespace

void addExportCommand(CLI::App& app) {
  auto o = std::make_shared<ExportCmdOptions>();
  CLI::App* cmd = app.add_subcommand("export", "Write a tuned profile as profile JSON, NVIDIA CSV or NCCLX CSV");
  addPlatformOption(cmd);
  cmd->add_option("input", o->in, "tune report (dynamiccl tune -o) or profile JSON");
  cmd->add_option("--from-store", o->fromStore,
                  "instead of a report: the store (path, or 'default' for DYNAMICCL_DB / the per-host store) whose "
                  "in-job verdicts give the rules (promoted candidates, each with its measured evidence)");
  cmd->add_option("-f,--format", o->format, "json, nvidia-csv or ncclx-csv")
      ->check(CLI::IsMember({"json", "nvidia-csv", "ncclx-csv"}));
  cmd->add_option("-o,--out", o->out, "output file (default stdout)");
  addClusterFactsOptions(cmd, o->cluster);
  cmd->callback([o] {
    if (const int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli

// `dynamiccl profile LOGS... -o profile.json`: from nccl-tests logs to one profile (tune::profileFromLogs),
// printed per shape as an nccl-tests style table against NCCL's default.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <unistd.h>

#include "offline/cli/commands.h"
#include "offline/cli/cluster_facts.h"
#include "offline/files/files.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli {
namespace {

struct ProfileCmdOptions {
  std::vector<std::string> paths;
  std::string out = "profile.json", workDir, system, name = "dynamiccl profile";
  double minGain = 0.01, confidence = 0.95;
  bool quiet = false, skipUnread = false;
  ClusterFactsOptions cluster;
};

std::string gainText(double gain, double low, double high) {
  char text[64];
  std::snprintf(text, sizeof text, "%+.1f%% [%+.1f%%, %+.1f%%]", 100 * gain, 100 * low, 100 * high);
  return text;
}

// A size the decision rule found faster where the smoothing kept NCCL's choice (a switch there does not
// repay itself): the table says so rather than "faster" where no rule applies.
std::string verdictText(const tune::ProfileRow& r) {
  const tune::PointEvidence& e = r.evidence;
  std::string v(tune::findingName(e.finding));
  if (e.finding == tune::Finding::Faster && r.runs == "default") v += ", default kept (smoothing)";
  return v + " (" + std::to_string(e.samples) + " vs " + std::to_string(e.defaultSamples) + ")";
}

// The shape's table, then the rules written for it with the evidence exactly as stored (gain, gain_ci):
// the same interval as the rows', spanning them where a rule covers several sizes.
void printShape(const tune::ShapeTable& t, const policy::Profile& written) {
  std::printf("\n%s (measured: medians of the real runs; the verdict says how many runs of each arm stand behind it)\n",
              t.shape.c_str());
  std::printf("  %-13s %8s | %-10s %10s %8s | %-14s %10s %8s | %-22s %s\n", "collective", "size", "NCCL", "time(us)",
              "busbw", "profile", "time(us)", "busbw", "gain [bound interval]", "verdict (real runs)");
  for (const tune::ProfileRow& r : t.rows) {
    // The decision's estimate and bounds at this size (pooled with neighbours where they agree).
    std::string gain = "-";
    if (r.runs != "default") {
      const tune::GainInterval g = tune::gainInterval(r.evidence);
      gain = gainText(g.gain, g.low, g.high) + (r.evidence.pooledSizes > 1 ? " pooled" : "");
    }
    std::printf("  %-13s %8s | %-10s %10.2f %8.2f | %-14s %10.2f %8.2f | %-22s %s\n",
                std::string(collectiveName(r.coll)).c_str(), sizeText(r.bytes).c_str(), "default",
                r.default_us, r.default_busbw, r.runs.substr(0, 14).c_str(), r.runs_us, r.runs_busbw, gain.c_str(),
                verdictText(r).c_str());
  }
  for (const std::string& n : t.notes) std::printf("  %s\n", n.c_str());
  for (const policy::Rule& rule : written.rules) {
    if (rule.minRanks != t.nRanks || rule.minNodes != t.nNodes || !rule.evidence || !rule.collective) continue;
    const policy::Evidence& e = *rule.evidence;
    std::printf("  rule: %s bytes [%llu, %llu] %s, gain %s (%d vs %d runs)\n",
                std::string(collectiveName(*rule.collective)).c_str(), static_cast<unsigned long long>(rule.minBytes),
                static_cast<unsigned long long>(rule.maxBytes), decisionLabel(rule.decision).c_str(),
                gainText(e.gain, e.gainLow, e.gainHigh).c_str(), e.samples, e.defaultSamples);
  }
}

int run(const ProfileCmdOptions& o) {
  auto declared = resolveClusterFacts(o.cluster);
  if (!declared) return std::cerr << "dynamiccl profile: " << declared.error() << "\n", 1;
  tune::LogsProfilePlan plan;
  plan.paths = o.paths;
  plan.workDir = o.workDir.empty()
                     ? (std::filesystem::temp_directory_path() / ("dynamiccl-profile-" + std::to_string(::getpid()))).string()
                     : o.workDir;
  plan.system = o.system;
  plan.declared = *declared;
  plan.rule.minGain = o.minGain;
  plan.rule.confidence = o.confidence;
  plan.name = o.name;
  plan.skipUnread = o.skipUnread;
  auto r = tune::profileFromLogs(plan);
  if (o.workDir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(plan.workDir, ec);
  }
  if (!r) return std::cerr << "dynamiccl profile: " << r.error() << "\n", 1;
  for (const std::string& f : r->files)
    if (!o.quiet || f.find(": refused") != std::string::npos) std::printf("%s\n", f.c_str());
  for (const std::string& u : r->unread) std::cerr << "dynamiccl profile: not read: " << u << "\n";
  if (!r->unread.empty() && !o.skipUnread)
    return std::cerr << "dynamiccl profile: " << r->unread.size() << " input(s) could not be read; nothing written (make "
                     << "them readable, or --skip-unreadable to profile the rest)\n", 2;
  if (r->refused)
    return std::cerr << "dynamiccl profile: refused " << r->refused << " file(s) whose sources name different forced "
                     << "configurations; nothing written\n", 2;
  for (const tune::ShapeTable& t : r->shapes) printShape(t, r->profile);
  if (auto s = files::writeFile(o.out, policy::profileToJson(r->profile)); !s)
    return std::cerr << "dynamiccl profile: " << s.error() << "\n", 1;
  std::printf("\nwrote %s: %zu rules for %zu shapes (the decision rule: upper %.0f%% bound on chosen/default below "
              "%.3f)\n", o.out.c_str(), r->profile.rules.size(), r->shapes.size(), 100 * o.confidence, 1 - o.minGain);
  std::printf("use it: export NCCL_TUNER_PLUGIN=libnccl-tuner-dynamiccl.so DYNAMICCL_PROFILE=%s\n", o.out.c_str());
  return 0;
}

}  // namespace

void addProfileCommand(CLI::App& app) {
  auto o = std::make_shared<ProfileCmdOptions>();
  CLI::App* cmd = app.add_subcommand("profile", "From nccl-tests logs (or interchange CSVs) to one profile for every "
                                                "communicator shape they measured, with a table per shape");
  cmd->add_option("paths", o->paths, "log files or directories (recursive)")->required();
  cmd->add_option("-o,--out", o->out, "profile JSON to write");
  cmd->add_option("--work-dir", o->workDir, "keep the scratch store and normalized.csv here (default: a temporary dir)");
  cmd->add_option("--system", o->system, "only systems containing this text");
  cmd->add_option("--name", o->name, "profile name");
  cmd->add_option("--min-gain", o->minGain, "rule: the confidence bound on chosen/default must be below 1 - this")
      ->check(CLI::Range(0.0, 0.9));
  cmd->add_option("--confidence", o->confidence, "rule: confidence of the one-sided bound")->check(CLI::Range(0.5, 0.9999));
  cmd->add_flag("-q,--quiet", o->quiet, "no per-file lines (refused and unreadable inputs are still named)");
  cmd->add_flag("--skip-unreadable", o->skipUnread,
                "profile what could be read when a file or directory cannot be (each is still named); without it such "
                "an input fails the command (exit 2) and nothing is written");
  addClusterFactsOptions(cmd, o->cluster);
  cmd->callback([o] {
    if (const int rc = run(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli

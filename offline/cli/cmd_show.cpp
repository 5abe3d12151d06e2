// dynamiccl show: the decision map over sizes per collective, obtained from the real plugin library
// through the harness, i.e. exactly what NCCL would be told for a communicator of this shape.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "offline/harness/harness.h"
#include "offline/cli/commands.h"
#include "offline/cli/plugin_locator.h"
#include "offline/cli/value_checks.h"
#include "offline/cli/rule_evidence.h"
#include "policy/policy.h"

namespace dynamiccl::cli {
namespace {

struct ShowOptions {
  std::string profile, plugin, trust = "verified";
  int nodes = 1, ranks = 8;
  uint64_t minBytes = 1, maxBytes = uint64_t{1} << 32;
  std::vector<std::string> collectives;
  std::string ncclVersion = "2.28.9";  // the NCCL installed here
};

// What the plugin told NCCL for one call, as a short label ("RING/LL128 ch=16" or "NCCL's choice").
std::string label(harness::TunerComm& comm, abi::PickRule rule, int coll, uint64_t nBytes) {
  const harness::CostTable table = harness::allAvailable();
  harness::CostTable edited = table;
  int nChannels = 0;
  comm.getCollInfo(coll, nBytes, 1, 0, edited, &nChannels);
  if (edited == table && nChannels == 0) return "NCCL's choice";
  std::string s;
  if (edited == table) s = "NCCL's algo/proto";
  else {
    const harness::Choice c = harness::selectLikeNccl(edited, rule, &table);
    s = std::string(algoNcclName(Algo(c.algo))) + "/" + std::string(protoNcclName(Proto(c.proto)));
  }
  s += nChannels ? " channels=" + std::to_string(nChannels) : "";
  return s;
}

void run(const ShowOptions& o) {
  auto profile = policy::loadProfileFile(o.profile);
  if (!profile) {
    std::cerr << "invalid profile: " << profile.error() << "\n";
    throw CLI::RuntimeError(1);
  }
  harness::ScopedEnv env("DYNAMICCL_PROFILE", o.profile.c_str());
  harness::ScopedEnv strict("DYNAMICCL_STRICT", "1");
  harness::ScopedEnv trust("DYNAMICCL_TRUST", o.trust.c_str());
  auto lib = harness::TunerLibrary::open(locatePlugin(o.plugin), harness::asRelease(*abi::parseNcclVersion(o.ncclVersion)));
  if (!lib) {
    std::cerr << lib.error() << "\n";
    throw CLI::RuntimeError(1);
  }
  harness::CommSpec spec;
  spec.nNodes = o.nodes;
  spec.nRanks = o.ranks;
  auto comm = lib.value()->init(spec);
  if (!comm) {
    std::cerr << "plugin init failed: " << comm.error() << "\n";
    throw CLI::RuntimeError(1);
  }
  std::cout << "profile " << (profile->name.empty() ? "(unnamed)" : profile->name) << " (" << profile->rules.size()
            << " rules) from " << o.profile << "\ncommunicator: " << o.nodes << " node(s), " << o.ranks
            << " ranks; plugin " << lib.value()->path() << " (tuner v" << lib.value()->version() << ", loaded as NCCL "
            << o.ncclVersion << " does; its selection rules: " << abi::pickRuleName(lib.value()->pickRule()) << ")\n"
            << "sizes are NCCL's nBytes (total buffer for AllGather/ReduceScatter); powers of two from "
            << sizeText(o.minBytes) << " to " << sizeText(o.maxBytes) << "\n";
  // Each rule's evidence, and whether it is verified for this communicator (as the plugin decides).
  const policy::Trust trustLevel = *policy::parseTrust(o.trust);
  // The hardware as the plugin loaded above sees it: this host's probe with DYNAMICCL_TOPO over it.
  const Expected<TopoOverrides> fromEnv = environmentTopoOverrides();
  if (!fromEnv) std::cout << "ignored, as the plugin ignores it: " << fromEnv.error() << "\n";
  const TopoOverrides overrides = fromEnv.ok() ? *fromEnv : TopoOverrides{};
  const policy::StandingInputs standing =
      policy::StandingInputs::of(CommShape{.nRanks = o.ranks, .nNodes = o.nodes}, profile->hardware,
                                 localHostSources(overrides), profile->userRules, trustLevel,
                                 abi::parseNcclVersion(o.ncclVersion).value_or(0));
  std::cout << "\ntrust: " << o.trust
            << (trustLevel == policy::Trust::All ? " (DYNAMICCL_TRUST=all: unverified rules applied)"
                                                 : " (only verified rules change NCCL's choice; --trust all shows "
                                                   "DYNAMICCL_TRUST=all)")
            << "\n";
  if (profile->userRules) std::cout << "NVIDIA CSV: the user's own rules, applied as opted in\n";
  for (const policy::Rule& r : profile->rules)
    std::cout << "  " << ruleEvidenceLine(r, policy::ruleStanding(r.evidence, standing)) << "\n";
  if (!profile->policySection.empty())
    std::cout << "  learned policy: its generated rules are learned, unverified"
              << (trustLevel == policy::Trust::All ? ", applied (opted in)" : ", NCCL's choice stands") << "\n";
  for (int c = 0; c < kNumCollectives; ++c) {
    const std::string name(collectiveName(Collective(c)));
    if (!o.collectives.empty() && std::find(o.collectives.begin(), o.collectives.end(), name) == o.collectives.end())
      continue;
    std::cout << "\n" << name << "\n";
    std::string current;
    uint64_t from = o.minBytes, last = o.minBytes;
    for (uint64_t n = o.minBytes; n <= o.maxBytes && n != 0; n *= 2) {
      const std::string l = label(**comm, lib.value()->pickRule(), c, n);
      if (n != o.minBytes && l != current) {
        std::printf("  %10s .. %-10s  %s\n", sizeText(from).c_str(), sizeText(last).c_str(), current.c_str());
        from = n;
      }
      current = l;
      last = n;
    }
    std::printf("  %10s .. %-10s  %s\n", sizeText(from).c_str(), sizeText(last).c_str(), current.c_str());
  }
}

}  // namespace

void addShowCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("show", "print the decision map over sizes per collective (what NCCL would be told)");
  auto o = std::make_shared<ShowOptions>();
  cmd->add_option("--profile,-p", o->profile, "profile file (our JSON or NVIDIA's CSV)")->required();
  cmd->add_option("--nodes,-N", o->nodes, "nodes in the communicator")->check(CLI::PositiveNumber);
  cmd->add_option("--ranks,-R", o->ranks, "ranks in the communicator")->check(CLI::PositiveNumber);
  cmd->add_option("--min-bytes", o->minBytes, "smallest size shown")->check(byteCountCheck());
  cmd->add_option("--max-bytes", o->maxBytes, "largest size shown")->check(byteCountCheck());
  cmd->add_option("--collective,-c", o->collectives, "only these collectives (allreduce, allgather, ...)")
      ->check(collectiveCheck());
  cmd->add_option("--plugin", o->plugin, "plugin library to drive (default: the one built with this command)");
  cmd->add_option("--trust", o->trust, "verified (the plugin's default) or all (as DYNAMICCL_TRUST=all)")
      ->check(CLI::IsMember({"verified", "all"}));
  cmd->add_option("--nccl-version", o->ncclVersion,
                  "the NCCL release to load the plugin as (its tuner interface and selection rules)")
      ->capture_default_str()
      ->check(ncclVersionCheck());
  cmd->callback([o] { run(*o); });
}

}  // namespace dynamiccl::cli

// dynamiccl validate P: reads a profile exactly as the plugin would and says what is wrong.
#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <iostream>

#include "offline/cli/commands.h"
#include "offline/cli/rule_evidence.h"
#include "policy/policy.h"
#include "learned/learned.h"

namespace dynamiccl::cli {
namespace {

// Whether path is a readable regular file with nothing but whitespace in it (read up to its first
// other byte); both readers would take it for a profile with no rules, which no tool writes.
bool blank(const std::string& path) {
  auto fd = openRegularFile(path, O_RDONLY);
  if (!fd) return false;  // the reader says why
  char buf[4096];
  ssize_t n = 0;
  bool onlySpace = true;
  while (onlySpace && ((n = ::read(*fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
    for (ssize_t i = 0; i < n && onlySpace; ++i) onlySpace = std::isspace(static_cast<unsigned char>(buf[i])) != 0;
  ::close(*fd);
  return onlySpace && n == 0;
}

}  // namespace

void addValidateCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("validate", "check a profile (our JSON or NVIDIA's CSV) the way the plugin reads it");
  auto path = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("auto");
  cmd->add_option("profile", *path, "profile file")->required();
  cmd->add_option("--format", *format, "auto, json or csv")->check(CLI::IsMember({"auto", "json", "csv"}));
  cmd->callback([path, format] {
    const auto f = *format == "json" ? policy::ProfileFormat::Json
                   : *format == "csv" ? policy::ProfileFormat::NvidiaCsv
                                      : policy::ProfileFormat::Auto;
    if (blank(*path)) {
      std::cerr << "invalid: " << *path << " is empty (nothing but whitespace): no profile\n";
      throw CLI::RuntimeError(1);
    }
    auto profile = policy::loadProfileFile(*path, f);
    if (!profile) {
      std::cerr << "invalid: " << profile.error() << "\n";
      throw CLI::RuntimeError(1);
    }
    if (auto network = learned::readNetwork(*profile); !network) {  // the plugin refuses the profile for it
      std::cerr << "invalid: " << network.error() << "\n";
      throw CLI::RuntimeError(1);
    }
    size_t perRank = 0, keep = 0;
    for (const auto& r : profile->rules) {
      perRank += r.sizeKey == policy::SizeKey::BytesPerRank;
      keep += r.decision.keepsAlgoProto();
    }
    std::cout << "ok: " << (profile->name.empty() ? "(unnamed)" : profile->name) << ", " << profile->rules.size()
              << " rules (" << perRank << " keyed by bytes per rank, " << keep << " keep NCCL's algorithm)\n";
    if (profile->hardware) std::cout << "fingerprint: " << policy::clusterHardwareToJson(*profile->hardware) << "\n";
    if (profile->userRules) std::cout << "NVIDIA CSV: the user's own rules (no evidence), applied as opted in\n";
    else std::cout << "evidence (schema version " << profile->version << "):\n";
    for (const auto& r : profile->rules)
      if (!profile->userRules) std::cout << "  " << ruleEvidenceLine(r, std::nullopt) << "\n";
    if (!profile->policySection.empty())
      std::cout << "learned policy: its generated rules are learned, unverified (applied only with DYNAMICCL_TRUST=all)\n";
    if (!profile->policySection.empty() && !profile->hardware)
      std::cout << "note: learned policy without a \"fingerprint\": multi-node communicators get only the rules "
                   "(declare the cluster: dynamiccl export " << *path << " --preset NAME | --probe-host -o OUT)\n";
  });
}

}  // namespace dynamiccl::cli

// dynamiccl merge A.json B.json ... -o OUT: profiles made separately (one per communicator shape or
// dataset) as one file; a conflict (two rules answering the same calls differently) is refused with
// one line naming both, and what is written reads back through the plugin's parser.
#include <CLI/CLI.hpp>

#include <iostream>

#include "offline/cli/commands.h"
#include "offline/files/files.h"
#include "policy/policy.h"

namespace dynamiccl::cli {
namespace {

struct MergeOptions {
  std::vector<std::string> profiles;
  std::string out;
};

int run(const MergeOptions& o) {
  std::vector<policy::Profile> loaded;
  for (const std::string& path : o.profiles) {
    auto p = policy::loadProfileFile(path);
    if (!p) return std::cerr << "merge: " << path << ": " << p.error() << "\n", 1;
    loaded.push_back(std::move(*p));
  }
  auto merged = policy::mergeProfiles(loaded);
  if (!merged) return std::cerr << "merge: " << merged.error() << "\n", 1;
  const std::string json = policy::profileToJson(*merged);
  if (auto back = policy::parseProfileJson(json); !back)
    return std::cerr << "merge: the merged profile does not read back: " << back.error() << "\n", 1;
  if (auto s = files::writeFile(o.out, json); !s) return std::cerr << "merge: " << s.error() << "\n", 1;
  for (size_t i = 0; i < loaded.size(); ++i)
    std::cout << o.profiles[i] << ": " << loaded[i].rules.size() << " rules\n";
  std::cout << "wrote " << o.out << " (" << merged->rules.size() << " rules)\n";
  return 0;
}

}  // namespace

void addMergeCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("merge", "merge profiles made separately (e.g. one per communicator shape) into one");
  auto o = std::make_shared<MergeOptions>();
  cmd->add_option("profiles", o->profiles, "profiles (our JSON), in order: the first rule that matches a call wins")
      ->required()
      ->expected(2, -1);
  cmd->add_option("-o,--out", o->out, "the merged profile")->required();
  cmd->callback([o] {
    if (const int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli

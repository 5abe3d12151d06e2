// A built command run through the shell with its output in a log file, and what a profile declares
// (tests of the dynamiccl and dynamiccl-lab commands).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace dynamiccl::testing {

struct CommandRun {
  int rc = -1;
  std::string log;
};

// `program args > logPath 2>&1`, then the log.
inline CommandRun runLogged(const std::string& program, const std::string& args, const std::filesystem::path& logPath) {
  const std::string cmd = program + " " + args + " > '" + logPath.string() + "' 2>&1";
  CommandRun r;
  r.rc = std::system(cmd.c_str());
  std::ifstream in(logPath);
  r.log = std::string(std::istreambuf_iterator<char>(in), {});
  return r;
}

// The profile's "fingerprint" object (null when it declares none).
inline nlohmann::json fingerprintOf(const std::filesystem::path& profile) {
  std::ifstream in(profile);
  const nlohmann::json doc = nlohmann::json::parse(in);
  return doc.contains("fingerprint") ? doc["fingerprint"] : nlohmann::json();
}

}  // namespace dynamiccl::testing

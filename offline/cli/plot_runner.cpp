#include "offline/cli/plot_runner.h"

#include <cstdlib>
#include <filesystem>

#include "offline/platforms/platforms.h"

namespace dynamiccl::cli {
namespace {

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

Status runPlotScript(const std::string& scriptName, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::string dir = platforms::dataRoot().path + "/scripts";
  if (const char* d = std::getenv("DYNAMICCL_SCRIPTS_DIR"); d && *d) dir = d;
  const fs::path script = fs::path(dir) / scriptName;
  if (!fs::exists(script)) return makeError("plot script not found: " + script.string());
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::string cmd = python + " " + shellQuote(script.string());
  for (const std::string& a : args) cmd += " " + shellQuote(a);
  cmd += " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return makeError("plotting failed (" + cmd + "); is python3-matplotlib installed?");
  return Ok{};
}

}  // namespace dynamiccl::cli

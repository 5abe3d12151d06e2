#include "offline/cli/plot_runner.h"

#include <filesystem>

#include "offline/files/files.h"
#include "offline/platforms/platforms.h"

namespace dynamiccl::cli {

Status runPlotScript(const std::string& scriptName, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::string dir = platforms::dataRoot().path + "/scripts";
  if (const char* d = std::getenv("DYNAMICCL_SCRIPTS_DIR"); d && *d) dir = d;
  const fs::path script = fs::path(dir) / scriptName;
  if (!fs::exists(script)) return makeError("plot script not found: " + script.string());
  const std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  std::string cmd = python + " " + files::shellQuote(script.string());
  for (const std::string& a : args) cmd += " " + files::shellQuote(a);
  cmd += " >/dev/null 2>&1";
  if (auto r = files::runCommand(cmd); !r || r->status != 0)
    return makeError("plotting failed (" + cmd + "); is python3-matplotlib installed?");
  return Ok{};
}

std::string demoPlots(bool noPlots, const std::string& outDir) {
  if (noPlots) return "; plots skipped (--no-plots)";
  if (auto plotted = runPlotScript("plot_demo.py", {outDir}); !plotted) return "; could not plot: " + plotted.error();
  return "; busbw.png, vs_nccl.png, decision_map.png";
}

}  // namespace dynamiccl::cli

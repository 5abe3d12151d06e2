// Runs one of scripts/plot_*.py (matplotlib) for a command that writes plots.
#pragma once

#include <string>
#include <vector>

#include "features/features.h"

namespace dynamiccl::cli {

// Debian's /usr/bin/python3 carries python3-matplotlib; a python3 earlier on PATH (pyenv) may not.
// The script is looked up in DYNAMICCL_SCRIPTS_DIR, then scripts/ under platforms::dataRoot() (installed or source tree).
Status runPlotScript(const std::string& scriptName, const std::vector<std::string>& args);
// The demo's PNGs of outDir (plot_demo.py), as a demo's last step says it: "; busbw.png, ..." or why not.
std::string demoPlots(bool noPlots, const std::string& outDir);

}  // namespace dynamiccl::cli

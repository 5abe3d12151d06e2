// What every command of the tools shares, the product's `dynamiccl` and the lab's `dynamiccl-lab`:
// the platform option, plots through the scripts, and the command-line conventions.
#pragma once

#include "offline/cli/command_line.h"
#include "offline/cli/platform_option.h"
#include "offline/cli/plot_runner.h"
#include "offline/cli/plugin_locator.h"
#include "offline/cli/value_checks.h"

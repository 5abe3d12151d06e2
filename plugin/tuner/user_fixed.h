// Knobs the user fixed stand: with NCCL_MIN/MAX_NCHANNELS set the plugin writes no channel count, and
// on RCCL (which applies RCCL_OVERRIDE_ALGO/PROTO after the tuner) it forces neither an algorithm
// under RCCL_OVERRIDE_ALGO nor a protocol under RCCL_OVERRIDE_PROTO. Init only.
#pragma once

#include "plugin/nccl_version.h"
#include "plugin/settings/settings.h"
#include "plugin/tuner/cost_table_edit.h"

namespace dynamiccl::plugin {

struct UserFixed {
  EditLimits limits;      // the edit's limits, the host's tie rule included
  bool keepAlgo = false;  // RCCL_OVERRIDE_ALGO: the table is left as the host filled it
};

// One INFO line when what the user fixed differs from the last one logged (once per process in a job).
UserFixed userFixed(const Settings& settings, const NcclRules& rules);

}  // namespace dynamiccl::plugin

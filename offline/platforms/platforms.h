// platforms: the clusters the offline tools know, one JSON file per platform. The one header other modules include.
#pragma once

#include "offline/platforms/data_root.h"
#include "offline/platforms/platform.h"
#include "offline/platforms/registry.h"
#include "offline/platforms/topology_presets.h"

// platforms: the clusters the offline tools know. The one header other modules include.
#pragma once

#include "offline/platforms/topology_presets.h"

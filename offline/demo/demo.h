// demo: the steps of `dynamiccl demo`. The one header other modules include.
#pragma once

#include "offline/demo/demo_steps.h"

// eval: how a policy does, judged off line (the online learner's loop per key, a TPE yardstick for
// the learned policy). The one header other modules include; the commands print what it returns.
#pragma once

#include "lab/eval/online_eval.h"
#include "lab/eval/tpe_table.h"

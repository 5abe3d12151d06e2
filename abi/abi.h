// abi: our declarations of NCCL's tuner and profiler plugin interfaces and NCCL's pick rule. The one
// header others include.
#pragma once

#include "abi/nccl_abi.h"
#include "abi/nccl_profiler_abi.h"
#include "abi/chunk_limits.h"
#include "abi/pick_rule.h"
#include "abi/host_rules.h"

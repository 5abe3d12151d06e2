// policy: the rule table. Profiles (our JSON, NVIDIA's CSV, merge, the limits a file is read under),
// rules with their evidence, the decision rule and the DecisionTable the plugin's hot path reads.
// Public header of dynamiccl_policy; the in-job learner is learner/, the learned network learned/.
#pragma once

#include "policy/decision_rule.h"
#include "policy/decision_table.h"
#include "policy/evidence.h"
#include "policy/json_limits.h"
#include "policy/profile.h"
#include "policy/profile_compile.h"

// policy: how decisions are made. Profiles (rule files) and the DecisionTable the plugin's hot
// path reads. Public header of dynamiccl_policy.
#pragma once

#include "policy/decision_rule.h"
#include "policy/decision_table.h"
#include "policy/evidence.h"
#include "policy/profile.h"
#include "policy/policy_rules.h"
#include "policy/online_learner.h"
#include "policy/network_eval.h"
#include "policy/network_weights.h"
#include "policy/online_table.h"
#include "policy/last_layer_posterior.h"
#include "policy/learned_arm_model.h"
#include "policy/measurement_cost.h"
#include "policy/measurement_plan.h"

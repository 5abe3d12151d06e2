// learned: the DynamICCL-style network (weights, evaluation, dense kernel), the rules it generates for
// a fingerprint, and the arm model with its last-layer posterior that ranks what the job measures.
// It reads the profile's "policy" section; the only module that uses Eigen. Public header of
// dynamiccl_learned (built with DYNAMICCL_LEARNED, on by default).
#pragma once

#include "learned/learned_arm_model.h"
#include "learned/network_eval.h"
#include "learned/network_weights.h"
#include "learned/policy_rules.h"
#include "learned/last_layer_posterior.h"
#include "learned/profile_network.h"

// learner: the in-job learner over whole configurations. Per (collective, size bucket) it measures
// arms against NCCL's choice and what runs (statistics, verifier, search, exploration budget), and
// builds the online table every rank adopts at an epoch boundary; what measuring costs and how much
// to measure. Pure and deterministic. Public header of dynamiccl_learner.
#pragma once

#include "learner/arm_model.h"
#include "learner/measurement_cost.h"
#include "learner/measurement_plan.h"
#include "learner/online_config.h"
#include "learner/online_learner.h"
#include "learner/online_table.h"
#include "learner/verdict.h"

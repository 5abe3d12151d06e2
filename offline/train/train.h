// Offline training of the learned policy with LibTorch (dynamiccl train only; never in the plugin).
// This header is Torch-free so callers compile fast. LibTorch runs in a module loaded on the first
// call below (torch_module.cpp); where it cannot be loaded every call returns why.
#pragma once

#include <functional>
#include <vector>

#include "policy/policy.h"
#include "learned/learned.h"
#include "offline/train/confidence.h"
#include "offline/train/dataset.h"
#include "offline/train/measured_data.h"
#include "offline/train/policy_eval.h"
#include "offline/train/proposer_eval.h"
#include "offline/train/proposer_kinds.h"
#include "offline/train/judge_network.h"
#include "offline/train/shipped_data.h"
#include "offline/train/sim_adapter.h"
#include "offline/train/fit_options.h"
#include "offline/train/train_recipe.h"

namespace dynamiccl::train {

// Loads the training module once; the error says why it cannot (no LibTorch in this build, module
// not built or not installed).
Status loadTorchModule();

// Log-latency regression with importance weights; returns the weights ready to export.
Expected<learned::PolicyWeights> trainPolicyNetwork(const std::vector<Sample>& trainRows,
                                                   const std::vector<Sample>& validationRows,
                                                   const std::vector<Sample>& heldOutRows, const TrainOptions& options,
                                                   const std::function<void(const EpochStats&)>& onEpoch);

// LibTorch's forward pass on given weights (for the Eigen agreement test): n rows of
// [context | config], one window shared by all rows.
Expected<std::vector<float>> torchPredictLogLatency_us(const learned::PolicyWeights& weights, const float* rows, int n,
                                                       const float* window);
// Weights as LibTorch initializes a fresh network.
Expected<learned::PolicyWeights> torchInitialWeights(const TrainOptions& options);

}  // namespace dynamiccl::train

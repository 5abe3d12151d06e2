// The table the LibTorch training module (libdynamiccl-train.so) hands the program that loads it:
// one C entry point, so only `train` (and the demo's training step) ever load LibTorch.
#pragma once

#include <cstddef>

#include "offline/train/train.h"
#include "learned/learned.h"

namespace dynamiccl::train {

// Bumped whenever the table or a type passed through it changes.
inline constexpr int kTorchModuleAbi = 1;

struct TorchModuleApi {
  int abi;
  // A module built from other headers than the loader's is refused (its types would not match).
  size_t sampleSize, optionsSize, weightsSize;
  Expected<learned::PolicyWeights> (*train)(const std::vector<Sample>&, const std::vector<Sample>&,
                                           const std::vector<Sample>&, const TrainOptions&,
                                           const std::function<void(const EpochStats&)>&);
  Expected<std::vector<float>> (*predict)(const learned::PolicyWeights&, const float*, int, const float*);
  Expected<learned::PolicyWeights> (*initialWeights)(const TrainOptions&);
};

// trainer.cpp's functions, defined in the module only (train.h's are the loader's, which forward here).
Expected<learned::PolicyWeights> torchTrain(const std::vector<Sample>& trainRows, const std::vector<Sample>& validationRows,
                                           const std::vector<Sample>& heldOutRows, const TrainOptions& options,
                                           const std::function<void(const EpochStats&)>& onEpoch);
Expected<std::vector<float>> torchPredict(const learned::PolicyWeights& weights, const float* rows, int n,
                                          const float* window);
Expected<learned::PolicyWeights> torchInitial(const TrainOptions& options);

inline constexpr const char* kTorchModuleEntry = "dynamiccl_train_module";
inline constexpr const char* kTorchModuleFile = "libdynamiccl-train.so";

}  // namespace dynamiccl::train

// The module's only exported symbol: the table of trainer.cpp's functions.
#include "offline/train/torch_module.h"
#include "learned/learned.h"

namespace dynamiccl::train {
namespace {
const TorchModuleApi kApi{kTorchModuleAbi, sizeof(Sample),  sizeof(TrainOptions), sizeof(learned::PolicyWeights),
                          &torchTrain,     &torchPredict,   &torchInitial};
}  // namespace
}  // namespace dynamiccl::train

extern "C" __attribute__((visibility("default"))) const dynamiccl::train::TorchModuleApi* dynamiccl_train_module() {
  return &dynamiccl::train::kApi;
}

// Built when LibTorch is not found: training is unavailable and says so.
#include "offline/train/train.h"

namespace dynamiccl::train {

namespace {
Error missing() { return makeError("this dynamiccl was built without LibTorch (DYNAMICCL_WITH_TORCH=OFF or not found)"); }
}  // namespace

bool torchAvailable() { return false; }
Expected<policy::PolicyWeights> trainPolicyNetwork(const std::vector<Sample>&, const std::vector<Sample>&,
                                                   const std::vector<Sample>&, const TrainOptions&,
                                                   const std::function<void(const EpochStats&)>&) {
  return missing();
}
Expected<std::vector<float>> torchPredictLogLatency_us(const policy::PolicyWeights&, const float*, int, const float*) {
  return missing();
}
Expected<policy::PolicyWeights> torchInitialWeights(const TrainOptions&) { return missing(); }

}  // namespace dynamiccl::train

// What the network's fit takes (epochs, sizes, seed) and reports after each epoch.
#pragma once

#include <cstdint>
#include <vector>

namespace dynamiccl::train {

struct TrainOptions {
  int epochs = 12;
  int batchSize = 256;
  double learningRate = 3e-3;
  int gruHidden = 8;
  std::vector<int> mlpHidden = {64, 64};
  int threads = 2;
  uint64_t seed = 1;
};

struct EpochStats {
  int epoch = 0;
  double trainLoss = 0, validationLoss = 0, heldOutLoss = 0;  // weighted MSE of standardized log latency
  double seconds = 0;
};

}  // namespace dynamiccl::train

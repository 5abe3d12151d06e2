#include "offline/train/shipped_data.h"

#include "offline/platforms/platforms.h"

namespace dynamiccl::train {

std::string shippedDatasetsDir() { return platforms::dataRoot().path + "/offline/demo/data"; }

std::string embeddedDataset() { return shippedDatasetsDir() + "/l40s-pcie-cs244c/normalized.csv"; }

}  // namespace dynamiccl::train

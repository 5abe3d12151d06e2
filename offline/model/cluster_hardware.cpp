// The hardware facts of a modelled topology, as profiles declare them.
#include "offline/model/model.h"

namespace dynamiccl::model {

ClusterHardware clusterHardwareOf(const Topology& t) {
  return ClusterHardware{t.computeCap, t.nvlink ? t.nvlinkBwPerGpu_GBps : 0.0, t.nicsPerNode, t.nicBw_GBps,
                         "sim preset " + t.name};
}

}  // namespace dynamiccl::model

// The hardware facts of a modelled topology, as profiles declare them and as DYNAMICCL_TOPO sets them.
#include "offline/model/model.h"

namespace dynamiccl::model {

ClusterHardware clusterHardwareOf(const Topology& t) {
  return ClusterHardware{t.computeCap, t.nvlink ? t.nvlinkBwPerGpu_GBps : 0.0, t.nicsPerNode, t.nicBw_GBps,
                         "sim preset " + t.name, ""};
}

TopoOverrides topoOverridesOf(const Topology& t) {
  TopoOverrides o;
  o.computeCap = t.computeCap;
  o.nvlinkBw_GBps = t.nvlink ? t.nvlinkBwPerGpu_GBps : 0.0;  // 0: PCIe only
  if (t.nicsPerNode > 0 && t.nicBw_GBps > 0) o.nics = t.nicsPerNode, o.nicSpeed_GBps = t.nicBw_GBps;
  o.ranksPerNode = t.gpusPerNode;
  return o;
}

}  // namespace dynamiccl::model

// The hardware a communicator runs on, as NCCL's model and our simulator both need it.
// Contract shared by model/ (NCCL's cost model) and sim/ (what really happens); extend, don't rename.
#pragma once

#include <string>

namespace dynamiccl::model {

struct Topology {
  std::string name;              // preset or free text, e.g. "dgx-h100"
  int computeCap = 90;           // 80 A100, 89 L40S, 90 H100/H800/GH200, 100 B200/GB200
  int nNodes = 1;
  int gpusPerNode = 8;           // ranks per node (nRanks = nNodes * gpusPerNode)
  bool nvlink = true;            // GPUs of a node talk over NVLink (false: PCIe only)
  bool nvswitch = true;          // NVLink goes through NVSwitch (all-to-all within the node)
  double nvlinkBwPerGpu_GBps = 450.0;  // unidirectional NVLink bandwidth per GPU, GB/s (1e9 B/s)
  double pcieBw_GBps = 25.0;     // per GPU, unidirectional, effective
  int nicsPerNode = 8;
  double nicBw_GBps = 50.0;      // per NIC, unidirectional (400 Gb/s = 50 GB/s)
  bool nvlsSupport = true;       // NVSwitch multicast (NVLS); Hopper+ NVSwitch systems
  bool collnetSupport = false;   // in-network reduction (SHARP) enabled
  bool amdCpu = false;           // NCCL's multi-node LL caps depend on the CPU vendor
  int nvlDomainGpus = 0;         // GPUs sharing one NVLink domain across nodes (GB200 NVL72: 72); 0 = one node
  bool nicViaCpu = false;        // GPUs reach their NICs through the CPU's C2C link (GH200 / Grace)
  // NCCL release whose topology detection to emulate (major*10000 + minor*100 + patch). Path types
  // changed in 2.27: a Grace NIC path is P2C from 2.27 on, PHB before (which disables multi-node LL128).
  int ncclVersion = 22809;
  // NIC bandwidth as NCCL's topology detection saw it (GB/s), when it differs from the wire rate:
  // the net plugin's reported speed and the PCIe path to the NIC cap it. 0 = nicBw_GBps.
  double ncclNicBw_GBps = 0.0;

  int nRanks() const { return nNodes * gpusPerNode; }
  double ncclNicBw() const { return ncclNicBw_GBps > 0 ? ncclNicBw_GBps : nicBw_GBps; }
  // NVLink:NIC bandwidth ratio per GPU (H800 ~14:1 where NCCL's constants assume ~7:1).
  double nvlinkToNicRatio() const {
    const double nicPerGpu = nicsPerNode > 0 ? nicsPerNode * nicBw_GBps / gpusPerNode : 0.0;
    return nicPerGpu > 0 ? (nvlink ? nvlinkBwPerGpu_GBps : pcieBw_GBps) / nicPerGpu : 0.0;
  }
};

}  // namespace dynamiccl::model

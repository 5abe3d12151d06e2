// NCCL 2.28.9's default tuner constants (tuning.cc ncclTunerConstantsDefaults), as NCCL hands
// them to a v5 tuner's init. Index order: [algo: Tree, Ring, CollNetDirect, CollNetChain, NVLS,
// NVLSTree, PAT][proto: LL, LL128, Simple]; bandwidth rows [compcap Volta..Blackwell][1, 2, 4+ nodes].
#include <cstring>

#include "offline/model/model.h"

namespace dynamiccl::model {

namespace {

constexpr double kBaseLatencies_us[7][3] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4},  // Tree, Ring
    {0, 0, 0},        {0, 0, 0},         // CollNetDirect, CollNetChain
    {0, 0, 0},        {0, 0, 0},         // NVLS, NVLSTree
    {8.0, 8.0, 8.0},                     // PAT
};

// [hw: NVLink, PCI, Net][algo][proto]
constexpr double kHwLatencies_us[3][7][3] = {
    {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}},
};

// Row = compcap for one node; for multi-node NCCL reads row 0 (Intel/other CPU) or 1 (AMD/mixed).
constexpr double kLlMaxBws_GBps[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
constexpr double kPerChMaxRingLL128Bws_GBps[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {2 * 36.7, 34.6, 2 * 36.7}};
constexpr double kPerChMaxTreeLL128Bws_GBps[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxTreeBws_GBps[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// Hopper/Blackwell N1 = 0: NVLS Tree is never used on one node.
constexpr double kPerChMaxNVLSTreeBws_GBps[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 43.8}};

}  // namespace

void fillDefaultTunerConstants(ncclTunerConstants_v5_t* out) {
  if (out == nullptr) return;
  std::memcpy(out->baseLatencies, kBaseLatencies_us, sizeof(kBaseLatencies_us));
  std::memcpy(out->hwLatencies, kHwLatencies_us, sizeof(kHwLatencies_us));
  std::memcpy(out->llMaxBws, kLlMaxBws_GBps, sizeof(kLlMaxBws_GBps));
  std::memcpy(out->perChMaxRingLL128Bws, kPerChMaxRingLL128Bws_GBps, sizeof(kPerChMaxRingLL128Bws_GBps));
  std::memcpy(out->perChMaxTreeLL128Bws, kPerChMaxTreeLL128Bws_GBps, sizeof(kPerChMaxTreeLL128Bws_GBps));
  std::memcpy(out->perChMaxTreeBws, kPerChMaxTreeBws_GBps, sizeof(kPerChMaxTreeBws_GBps));
  std::memcpy(out->perChMaxNVLSTreeBws, kPerChMaxNVLSTreeBws_GBps, sizeof(kPerChMaxNVLSTreeBws_GBps));
}

ncclTunerConstants_v5_t defaultTunerConstants() {
  ncclTunerConstants_v5_t c{};
  fillDefaultTunerConstants(&c);
  return c;
}

}  // namespace dynamiccl::model

// The policy's input encoding (version kFeatureEncodingVersion): every value is scaled to about [0, 1].
#include "features/feature_vector.h"

#include <algorithm>
#include <cmath>

#include "features/vocabulary.h"

namespace dynamiccl {
namespace {

float log2Scaled(double x, double scale) { return x > 0 ? static_cast<float>(std::log2(x) / scale) : 0.0f; }

}  // namespace

double log2Bytes(uint64_t nBytes) { return nBytes ? std::log2(static_cast<double>(nBytes)) : 0.0; }

void encodeContext(const TopologyFingerprint& fp, Collective coll, uint64_t nBytes, const WorkloadContext& wl,
                   std::span<float, kContextFeatures> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  out[0] = static_cast<float>(log2Bytes(nBytes) / 32.0);
  out[1] = static_cast<float>(log2Bytes(bytesPerRank(nBytes, fp.nRanks)) / 32.0);
  out[2 + static_cast<int>(coll)] = 1.0f;  // 2..6
  out[7] = log2Scaled(fp.nRanks, 10.0);
  out[8] = log2Scaled(fp.nNodes, 8.0);
  out[9] = log2Scaled(fp.ranksPerNode, 4.0);
  out[10] = fp.computeCap > 0 ? static_cast<float>((fp.computeCap - 70) / 30.0) : 0.0f;
  out[11] = log2Scaled(fp.nvlinkBwPerGpu_GBps, 10.0);
  out[12] = log2Scaled(fp.nicsPerNode * fp.nicSpeed_GBps, 10.0);
  out[13] = log2Scaled(fp.nvlinkToNicRatio(), 5.0);
  out[14] = fp.nvlDomainMax > fp.ranksPerNode ? 1.0f : 0.0f;  // NVLink domain spans nodes (NVL72)
  out[15] = wl.intensity ? log2Scaled(*wl.intensity, 10.0) : 0.0f;
  out[16] = wl.batch ? log2Scaled(*wl.batch, 10.0) : 0.0f;
  out[17] = wl.empty() ? 0.0f : 1.0f;
}

void encodeConfig(Algo algo, Proto proto, int nChannels, std::span<float, kConfigFeatures> out) {
  std::fill(out.begin(), out.end(), 0.0f);
  if (algo != Algo::Default) out[static_cast<int>(algo)] = 1.0f;      // 0..6
  if (proto != Proto::Default) out[7 + static_cast<int>(proto)] = 1.0f;  // 7..9
  out[10] = nChannels > 0 ? static_cast<float>(std::log2(nChannels) / 6.0) : 0.0f;
  out[11] = nChannels > 0 ? 1.0f : 0.0f;  // 0 = NCCL's own channel count
}

}  // namespace dynamiccl

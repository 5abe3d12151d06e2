// NcclModel::dump: the table NCCL prints with NCCL_DEBUG_SUBSYS=TUNING (tuning.cc:499-539), in
// the same layout ("lat/bw" per entry, three algorithms per block), so the two can be diffed.
#include <cstdio>
#include <string>

#include "offline/model/model.h"

namespace dynamiccl::model {

namespace {
constexpr const char* kAlgoNames[kNumAlgos] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr const char* kProtoNames[kNumProtos] = {"LL", "LL128", "Simple"};

void appendf(std::string& out, const char* fmt, auto... args) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, args...);
  out += buf;
}
}  // namespace

std::string NcclModel::dump() const {
  std::string out;
  for (int block = 0; block < (kNumAlgos + 2) / 3; ++block) {
    out += "  Algorithm   |";
    for (int ba = 0; ba < 3; ++ba) {
      const int a = block * 3 + ba;
      if (a < kNumAlgos) appendf(out, " %14s   %14s   %14s |", "", kAlgoNames[a], "");
    }
    out += "\n  Protocol    |";
    for (int ba = 0; ba < 3; ++ba)  // NCCL prints all three protocol triples even in the short last block
      for (int p = 0; p < kNumProtos; ++p) appendf(out, " %14s |", kProtoNames[p]);
    out += "\n Max NThreads |";
    for (int ba = 0; ba < 3; ++ba) {
      const int a = block * 3 + ba;
      if (a >= kNumAlgos) continue;
      for (int p = 0; p < kNumProtos; ++p) appendf(out, " %14d |", maxThreads_[a][p]);
    }
    out += "\n";
    for (int c = 0; c < kNumCollectives; ++c) {
      appendf(out, "%13s |", collectiveNcclName(static_cast<Collective>(c)).data());
      for (int ba = 0; ba < 3; ++ba) {
        const int a = block * 3 + ba;
        if (a >= kNumAlgos) continue;
        for (int p = 0; p < kNumProtos; ++p)
          appendf(out, "%8.1f/%6.1f |", static_cast<double>(lat_[c][a][p]), static_cast<double>(bw_[c][a][p]));
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace dynamiccl::model

// The demo's cluster: a sim preset with the closest committed calibration's parameters, and the
// step timer every demo step prints through.
#include <cstdio>
#include <string_view>

#include "offline/demo/demo_steps.h"
#include "offline/sim/sim.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {
namespace {

// Preset prefix -> calibrated dataset and group (substring): the nearest measured relative of each
// preset (no H800 data exists; the H100 InfiniBand cluster is the same GPU generation and fabric).
struct CalibrationSource {
  std::string_view presetPrefix, dataset, groupContains;
};
constexpr CalibrationSource kCalibrationSources[] = {
    {"h800", "h100-ib-cluster-xxrjun", ""},
    {"dgx-h100", "h100-ib-cluster-xxrjun", ""},
    {"gcp-a3mega", "gcp-a3mega-h100-2node", ""},
    {"gh200", "alps-gh200-slingshot-allreduce", ""},
    {"l40s-pcie-2", "l40s-pcie-cs244c", "x2"},
    {"l40s-pcie-4", "l40s-pcie-cs244c", "x4"},
    {"dgx-a100", "l40s-pcie-cs244c", "A100"},
    {"dgx-b200", "xla-collective-perf-table", "B200"},
    {"gb200", "xla-collective-perf-table", "GB200"},
    {"gb300", "xla-collective-perf-table", "sm_103"},
};

}  // namespace

Expected<DemoCluster> makeCluster(const DemoOptions& o) {
  auto topo = sim::loadTopology(o.preset, o.nodes);
  if (!topo) return makeError(topo.error());
  DemoCluster c;
  c.topology = topo.value();
  c.paramsSource = "simulator defaults (no calibration for " + o.preset + ")";
  for (const CalibrationSource& s : kCalibrationSources) {
    if (!o.preset.starts_with(s.presetPrefix)) continue;
    const std::string file = sim::defaultCalibrationDir() + "/" + std::string(s.dataset) + ".json";
    auto cal = sim::loadCalibrationFile(file);
    if (!cal) break;
    for (const sim::GroupCalibration& g : cal->groups)
      if (g.group.find(s.groupContains) != std::string::npos) {
        c.params = sim::paramsForGroup(cal.value(), g.group);
        c.paramsSource = "calibration " + std::string(s.dataset) + " (MAPE " +
                         std::to_string(int(g.mape * 100 + 0.5)) + "%)";
        break;
      }
    break;
  }
  auto ref = sim::NcclReference::create(c.topology);
  if (!ref) return makeError(ref.error());
  c.nccl = std::make_shared<const sim::NcclReference>(std::move(ref.value()));
  return c;
}

StepTimer::StepTimer(int index, const std::string& title) : index_(index), start_(std::chrono::steady_clock::now()) {
  std::printf("[%d/6] %s\n", index, title.c_str());
  std::fflush(stdout);
}

double StepTimer::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void StepTimer::done(const std::string& status) {
  std::printf("      %s  (%.2f s)\n", status.c_str(), elapsed_s());
  std::fflush(stdout);
}

std::string shortConfigLabel(const sim::Config& c) {
  if (c.algo == Algo::Default) return "none";
  std::string s = std::string(algoName(c.algo)) + "/" + std::string(protoName(c.proto));
  if (c.nChannels > 0) s += " ch=" + std::to_string(c.nChannels);
  if (c.chunkBytes > 0) s += " chunk=" + tune::formatBytes(c.chunkBytes);
  return s;
}

}  // namespace dynamiccl::cli::demo

// The demo's cluster: a platform with the calibration its file names, and the step timer every
// demo step prints through.
#include <cstdio>

#include "offline/demo/demo_steps.h"
#include "offline/sim/sim.h"
#include "offline/tune/tune.h"

namespace dynamiccl::cli::demo {

Expected<DemoCluster> makeCluster(const DemoOptions& o) {
  auto topo = sim::loadTopology(o.preset, o.nodes);
  if (!topo) return makeError(topo.error());
  DemoCluster c;
  c.topology = topo.value();
  c.paramsSource = "simulator defaults (no calibration for " + o.preset + ")";
  // The platform's own file names its calibration: the nearest measured relative of its hardware.
  auto known = platforms::registry();
  if (const platforms::Platform* p = known ? (*known)->find(o.preset) : nullptr; p && p->calibration) {
    if (auto cal = sim::calibrationFor(*p)) {
      c.params = cal->params;
      c.paramsSource = "calibration " + cal->dataset + " (MAPE " + std::to_string(int(cal->mape * 100 + 0.5)) + "%)";
    } else {
      c.paramsSource = "simulator defaults (" + cal.error() + ")";
    }
  }
  auto ref = model::NcclReference::create(c.topology);
  if (!ref) return makeError(ref.error());
  c.nccl = std::make_shared<const model::NcclReference>(std::move(ref.value()));
  return c;
}

StepTimer::StepTimer(int index, int steps, const std::string& title)
    : index_(index), start_(std::chrono::steady_clock::now()) {
  std::printf("[%d/%d] %s\n", index, steps, title.c_str());
  std::fflush(stdout);
}

double StepTimer::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void StepTimer::done(const std::string& status) {
  std::printf("      %s  (%.2f s)\n", status.c_str(), elapsed_s());
  std::fflush(stdout);
}

}  // namespace dynamiccl::cli::demo

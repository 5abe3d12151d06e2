// The demo's cluster: a platform with the calibration its file names, and the step timer every
// demo step prints through.
#include <cstdarg>
#include <cstdio>

#include "offline/demo/demo_steps.h"
#include "offline/report/report.h"
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

void printWrapped(const std::string& text, const std::string& first, const std::string& indent) {
  std::fputs(report::wrapText(text, first, indent).c_str(), stdout);
}

std::string textf(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, again);
  va_end(again);
  return out;
}

std::string shortSystem(const std::string& system) {
  constexpr size_t kMax = 60;
  return system.size() <= kMax ? system : system.substr(0, kMax - 3) + "...";
}

StepTimer::StepTimer(int index, int steps, const std::string& title)
    : index_(index), start_(std::chrono::steady_clock::now()) {
  printWrapped(title, "[" + std::to_string(index) + "/" + std::to_string(steps) + "] ", "      ");
  std::fflush(stdout);
}

double StepTimer::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void StepTimer::done(const std::string& status) {
  printWrapped(status + textf(" (%.2fs)", elapsed_s()));  // one word: a wrap never splits it
  std::fflush(stdout);
}

}  // namespace dynamiccl::cli::demo

#include "offline/sim/platform_calibration.h"

namespace dynamiccl::sim {

Expected<PlatformCalibration> calibrationFor(const platforms::Platform& platform, const std::string& calibrationDir) {
  if (!platform.calibration) return PlatformCalibration{};
  const platforms::CalibrationSource& c = *platform.calibration;
  auto cal = loadCalibrationFile(calibrationDir + "/" + c.dataset + ".json");
  if (!cal) return makeError("platform " + platform.name + ": " + cal.error());
  for (const GroupCalibration& g : cal->groups)
    if (g.group.starts_with(c.group)) return PlatformCalibration{g.params, c.dataset, g.group, g.mape};
  return makeError("platform " + platform.name + ": no group of " + c.dataset + " starts with \"" + c.group + "\"");
}

}  // namespace dynamiccl::sim

// dynamiccl probe [-o FILE]: the hardware fingerprint the plugin will compute on this host (NVML, or
// on AMD the kernel's KFD topology in sysfs; sysfs NICs; then DYNAMICCL_TOPO), each fact with its source; -o writes it as the "fingerprint"
// JSON that `tune --fingerprint`, `train --fingerprint` and a profile's "fingerprint" key take, so
// rules measured here are stamped with this machine and apply where the plugin probes the same.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "offline/cli/commands.h"
#include "offline/cli/cluster_facts.h"
#include "offline/files/files.h"
#include "policy/policy.h"

namespace dynamiccl::cli {
namespace {

struct ProbeOptions {
  std::string out;
};

int run(const ProbeOptions& o) {
  const ProbedFacts p = probeThisHost();
  auto fact = [](const char* name, const auto& v, const std::string& source) {
    if (v) std::cout << "  " << name << " = " << *v << "  (" << source << ")\n";
    else std::cout << "  " << name << " unknown: " << source << "\n";
  };
  if (!p.ignored.empty()) std::cout << "ignored, as the plugin ignores it: " << p.ignored << "\n";
  std::cout << "this host as the plugin probes it:\n";
  if (!p.gpuArch.empty()) {
    std::cout << "  gpu_arch = " << p.gpuArch << "  (" << p.gpuSource << "; AMD has no CUDA compute capability)\n";
    fact("nvlink_GBps", p.nvlinkGBps, "XGMI, the scale-up fabric NVLink is on NVIDIA: " + p.gpuSource);
  } else {
    fact("gpu_cc", p.gpuCc, p.gpuSource);
    fact("nvlink_GBps", p.nvlinkGBps, p.gpuSource);
  }
  fact("nics_per_node", p.nics, p.nicSource);
  fact("nic_GBps", p.nicGBps, p.nicSource);
  const bool gpuKnown = p.gpuCc || !p.gpuArch.empty();
  if (!gpuKnown || !p.nvlinkGBps || !p.nics || !p.nicGBps) {
    std::cerr << "probe: the fingerprint is incomplete here (no GPU or NIC answered); run it on a node of the "
                 "cluster, or set DYNAMICCL_TOPO=gpu_cc=..,nvlink_GBps=..,nics_per_node=..,nic_GBps=.. as every rank "
                 "will\n";
    return 1;
  }
  const ClusterHardware hw{p.gpuCc.value_or(0), *p.nvlinkGBps, *p.nics, *p.nicGBps, "dynamiccl probe",
                           p.gpuCc ? "" : p.gpuArch};
  if (auto s = policy::validateClusterHardware(hw); !s) return std::cerr << "probe: " << s.error() << "\n", 1;
  const std::string json = policy::clusterHardwareToJson(hw);
  std::cout << "fingerprint: " << json << "\n";
  if (!o.out.empty()) {
    if (auto s = files::writeFile(o.out, json + "\n"); !s) return std::cerr << "probe: " << s.error() << "\n", 1;
    std::cout << "wrote " << o.out << "\n";
  }
  return 0;
}

}  // namespace

void addProbeCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("probe", "print (and write) the hardware fingerprint the plugin computes on this host");
  auto o = std::make_shared<ProbeOptions>();
  cmd->add_option("-o,--out", o->out, "write the fingerprint JSON here (for tune/train --fingerprint)");
  cmd->callback([o] {
    if (const int rc = run(*o)) throw CLI::RuntimeError(rc);
  });
}

}  // namespace dynamiccl::cli

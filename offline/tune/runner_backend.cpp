// Real measurements: runs scripts/measure_nccl_tests.sh (nccl-tests under mpirun/srun with the
// plugin forcing the configuration) and reads one time_us per line from its stdout.
#include <cstdlib>
#include <sstream>
#include <string>

#include "offline/files/files.h"
#include "offline/tune/measurement_backend.h"

namespace dynamiccl::tune {
namespace {

using files::shellQuote;

class RunnerBackend final : public MeasurementBackend {
 public:
  explicit RunnerBackend(RunnerBackendOptions o) : o_(std::move(o)) {}
  std::string name() const override { return "nccl-tests via " + o_.script; }
  int nRanks() const override { return o_.nRanks; }
  int nNodes() const override { return o_.nNodes; }
  bool supportsJobKnobs() const override { return true; }
  policy::Provenance provenance() const override { return policy::Provenance::MeasuredOffline; }
  std::optional<ClusterHardware> measuredOn() const override { return o_.cluster; }
  std::string ncclVersion() const override { return o_.ncclVersion; }
  // The plugin never writes into an entry NCCL ignores, so anything else can be asked for; a
  // configuration NCCL cannot run comes back as NCCL's own choice, which the search then sees.
  bool available(const Config& c, const MeasureKey& k) const override {
    const bool agrs = k.coll == Collective::AllGather || k.coll == Collective::ReduceScatter;
    if (c.algo == Algo::Tree && k.coll != Collective::AllReduce) return false;
    if (c.algo == Algo::Pat && !agrs) return false;
    if ((c.algo == Algo::Nvls || c.algo == Algo::NvlsTree || c.algo == Algo::Pat) && !c.keepsAlgoProto() &&
        c.proto != Proto::Simple)
      return false;
    return true;
  }
  Expected<std::vector<double>> measure(const Config& c, const MeasureKey& k, int iterations,
                                        const JobKnobs& knobs) override {
    auto ran = files::runCommand(runnerCommandLine(o_, c, k, iterations, knobs));
    if (!ran) return makeError("runner: cannot start " + o_.script);
    std::vector<double> out;
    std::string lastLine;
    std::istringstream lines(ran->text);
    for (std::string line; std::getline(lines, line);) {
      lastLine = line + (lines.eof() ? "" : "\n");
      char* end = nullptr;
      const double t = std::strtod(line.c_str(), &end);
      if (end != line.c_str() && t > 0) out.push_back(t);
    }
    const int rc = ran->status;
    if (rc != 0) return makeError("runner: " + o_.script + " failed (status " + std::to_string(rc) + "): " + lastLine);
    if (out.empty()) return makeError("runner: " + o_.script + " printed no time for " + decisionLabel(c));
    return out;
  }

 private:
  RunnerBackendOptions o_;
};

}  // namespace

std::string runnerCommandLine(const RunnerBackendOptions& o, const Config& c, const MeasureKey& k, int iterations,
                              const JobKnobs& knobs) {
  std::ostringstream s;
  s << shellQuote(o.script) << " --launcher " << shellQuote(o.launcher) << " --collective "
    << collectiveName(k.coll) << " --bytes " << k.bytes << " --iters " << iterations << " --nranks " << o.nRanks
    << " --nnodes " << o.nNodes << " --algo " << algoName(c.algo) << " --proto " << protoName(c.proto)
    << " --channels " << c.nChannels << " --chunk " << c.chunkBytes;
  if (!o.ncclTestsDir.empty()) s << " --nccl-tests-dir " << shellQuote(o.ncclTestsDir);
  if (!o.pluginPath.empty()) s << " --plugin " << shellQuote(o.pluginPath);
  if (knobs.nThreads > 0) s << " --nthreads " << knobs.nThreads;
  if (knobs.buffSizeBytes > 0) s << " --buffsize " << knobs.buffSizeBytes;
  for (const std::string& a : o.extraArgs) s << " " << shellQuote(a);
  return s.str();
}

Expected<std::unique_ptr<MeasurementBackend>> makeRunnerBackend(const RunnerBackendOptions& o) {
  if (o.script.empty()) return makeError("runner backend: no script given");
  if (o.launcher != "mpirun" && o.launcher != "srun" && o.launcher != "none")
    return makeError("runner backend: launcher must be mpirun, srun or none, not " + o.launcher);
  if (o.nRanks < 1 || o.nNodes < 1) return makeError("runner backend: nranks and nnodes must be positive");
  return std::unique_ptr<MeasurementBackend>(std::make_unique<RunnerBackend>(o));
}

}  // namespace dynamiccl::tune

// Run executors for the search by runs: the real one (scripts/measure_nccl_tests.sh in sweep mode)
// and a synthetic cluster printing what nccl-tests prints; plus the parser both feed.
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "offline/files/files.h"
#include "offline/tune/run_search.h"

namespace dynamiccl::tune {
namespace {

using files::shellQuote;

bool allDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "... NCCL INFO AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 45.2" -> (bytes, algo/proto).
bool parseTuningLine(const std::string& line, uint64_t& bytes, Config& c) {
  const size_t at = line.find(" Bytes -> Algo ");
  if (at == std::string::npos) return false;
  size_t colon = line.rfind(':', at);
  if (colon == std::string::npos) return false;
  unsigned long long n = 0;
  int algo = -1, proto = -1;
  if (std::sscanf(line.c_str() + colon + 1, " %llu Bytes -> Algo %d proto %d", &n, &algo, &proto) != 3) return false;
  if (algo < 0 || algo >= kNumAlgos || proto < 0 || proto >= kNumProtos) return false;
  bytes = n;
  c = Config{Algo(algo), Proto(proto), 0, 0};
  return true;
}

}  // namespace

RunOutput parseNcclTestsOutput(std::string_view text) {
  RunOutput out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    uint64_t bytes = 0;
    Config ran;
    if (parseTuningLine(line, bytes, ran)) {
      out.ncclRan[bytes] = ran;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string tok; fields >> tok;) f.push_back(tok);
    // Result rows: size count type redop root time algbw busbw #wrong ...; field 6 = out-of-place us.
    if (f.size() < 9 || !allDigits(f[0])) continue;
    char* end = nullptr;
    const double t = std::strtod(f[5].c_str(), &end);
    if (end == f[5].c_str() || !(t > 0) || !std::isfinite(t)) continue;
    out.times_us[std::stoull(f[0])].push_back(t);
  }
  return out;
}

std::string runCommandLine(const RunnerBackendOptions& o, const RunRequest& r) {
  std::ostringstream s;
  s << shellQuote(o.script) << " --launcher " << shellQuote(o.launcher) << " --collective " << collectiveName(r.coll)
    << " --bytes " << r.minBytes << " --max-bytes " << r.maxBytes << " --iters " << r.iterations << " --nranks "
    << r.nRanks << " --nnodes " << r.nNodes << " --algo " << algoName(r.config.algo) << " --proto "
    << protoName(r.config.proto) << " --channels " << r.config.nChannels << " --chunk " << r.config.chunkBytes;
  if (!o.ncclTestsDir.empty()) s << " --nccl-tests-dir " << shellQuote(o.ncclTestsDir);
  if (!o.pluginPath.empty()) s << " --plugin " << shellQuote(o.pluginPath);
  for (const std::string& a : o.extraArgs) s << " " << shellQuote(a);
  return s.str();
}

RunExecutor commandRunExecutor(const RunnerBackendOptions& o) {
  return [o](const RunRequest& r) -> Expected<std::string> {
    auto ran = files::runCommand(runCommandLine(o, r));
    if (!ran) return makeError("runner: cannot start " + o.script);
    if (ran->status != 0) return makeError("runner: " + o.script + " failed (status " + std::to_string(ran->status) + ")");
    return std::move(ran->text);
  };
}

RunExecutor syntheticRunExecutor(SyntheticRunOptions o) {
  auto rng = std::make_shared<std::mt19937_64>(o.seed);
  return [o, rng](const RunRequest& r) -> Expected<std::string> {
    if (!o.truth_us) return makeError("synthetic runs: no latency model");
    std::normal_distribution<double> z(0.0, 1.0);
    const double runFactor = std::exp(o.runSigma * z(*rng));  // what differs between two jobs
    std::ostringstream s;
    s << "# nccl-tests (synthetic cluster)\n# Using devices\n";
    if (r.config.keepsAlgoProto() && o.ncclDefault)
      for (uint64_t b = r.minBytes; b <= r.maxBytes && b != 0; b *= 2) {
        const Config c = o.ncclDefault(MeasureKey{r.coll, b, r.nRanks, r.nNodes});
        s << "node0:1:1 [0] NCCL INFO " << collectiveNcclName(r.coll) << ": " << b << " Bytes -> Algo " << int(c.algo)
          << " proto " << int(c.proto) << " time 1.000000\n";
      }
    s << "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    char row[256];
    for (int cycle = 0; cycle < std::max(1, o.cycles); ++cycle)
      for (uint64_t b = r.minBytes; b <= r.maxBytes && b != 0; b *= 2) {
        const double t = o.truth_us(r.config, MeasureKey{r.coll, b, r.nRanks, r.nNodes}) * runFactor *
                         std::exp(o.sigma * z(*rng));
        const double bw = static_cast<double>(b) / 1e3 / t;
        std::snprintf(row, sizeof row, "%12llu %12llu %8s %6s %6d %8.2f %6.2f %6.2f %6d %8.2f %6.2f %6.2f %6d\n",
                      static_cast<unsigned long long>(b), static_cast<unsigned long long>(b / 4), "float", "sum", -1, t,
                      bw, bw, 0, t, bw, bw, 0);
        s << row;
      }
    s << "# Out of bounds values : 0 OK\n";
    return s.str();
  };
}

}  // namespace dynamiccl::tune

// The synthetic backend: a known function plus seeded lognormal noise.
#include <random>

#include "offline/tune/measurement_backend.h"

namespace dynamiccl::tune {
namespace {

class SyntheticBackend final : public MeasurementBackend {
 public:
  explicit SyntheticBackend(SyntheticBackendOptions o) : o_(std::move(o)), rng_(o_.seed) {}
  std::string name() const override { return "synthetic"; }
  int nRanks() const override { return o_.nRanks; }
  int nNodes() const override { return o_.nNodes; }
  bool available(const Config& c, const MeasureKey& k) const override {
    return c.keepsAlgoProto() || !o_.available || o_.available(c, k);
  }
  std::optional<double> expected_us(const Config& c, const MeasureKey& k) const override { return o_.truth_us(c, k); }
  Expected<std::vector<double>> measure(const Config& c, const MeasureKey& k, int iterations, const JobKnobs&) override {
    if (!available(c, k)) return makeError("synthetic: " + decisionLabel(c) + " unavailable");
    std::lognormal_distribution<double> noise(0.0, o_.sigma);
    const double t = o_.truth_us(c, k);
    std::vector<double> out;
    for (int i = 0; i < iterations; ++i) out.push_back(t * noise(rng_));
    return out;
  }

 private:
  SyntheticBackendOptions o_;
  std::mt19937_64 rng_;
};

}  // namespace

std::unique_ptr<MeasurementBackend> makeSyntheticBackend(SyntheticBackendOptions options) {
  return std::make_unique<SyntheticBackend>(std::move(options));
}

}  // namespace dynamiccl::tune

// The settlement of measured data (offline/measurements): what NCCL's default rows ran, decided on
// data of the test's own making in the interchange format.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "offline/measurements/measurements.h"

using namespace dynamiccl;
using namespace dynamiccl::measurements;

namespace {

constexpr const char* kSystem = "L40S x4";

std::string row(const std::string& coll, uint64_t bytes, const std::string& algo, const std::string& proto, double us) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  return std::string(kSystem) + "," + coll + ",4,1," + std::to_string(bytes) + "," + algo + "," + proto + ",,," + buf +
         ",0,made by settlement_test\n";
}

Config modelsPick(Collective coll, uint64_t bytes) {
  auto ref = model::NcclReference::create(topologyForSystem(kSystem, 4, 1).value());
  return ref->defaultConfig(coll, bytes);
}

Expected<ReplayData> settle(const std::string& body) {
  // One file per process: ctest runs this file's tests side by side.
  const std::string csv =
      (std::filesystem::temp_directory_path() / ("dynamiccl-settlement-test-" + std::to_string(::getpid()) + ".csv")).string();
  std::ofstream(csv) << kInterchangeHeader << "\n" << body;
  auto rows = loadMeasurements(csv);
  std::filesystem::remove(csv);
  if (!rows) return makeError(rows.error());
  return buildReplayData(rows->rows);
}

const ReplayPoint* at(const ReplayData& data, Collective coll, uint64_t bytes) {
  for (const ReplayPoint& p : data.points)
    if (p.coll == coll && p.bytes == bytes) return &p;
  return nullptr;
}

}  // namespace

// One run of NCCL's default and one forced run of the model's pick, 1.43x apart, at a size whose
// neighbours repeat with a 20% spread (so a test on the local spread cannot tell them apart), in a
// dataset whose repeats otherwise agree within 1%: no two runs of one configuration differ like that,
// so the pick is refuted and its forced run is an arm of its own. A 1.15x gap beside the same
// neighbours is within what repeats show: the pick stays confirmed.
TEST(Settlement, AForcedRunOfThePickFarBeyondTheDatasetsSpreadRefutesIt) {
  const uint64_t refuted = 4 << 20, confirmed = 16 << 20;
  std::string body;
  for (uint64_t b : {uint64_t{2} << 20, uint64_t{8} << 20})
    for (double f : {0.82, 1.0, 1.22}) body += row("allreduce", b, "default", "default", 1000 * f);
  body += row("allreduce", uint64_t{1} << 20, "default", "default", 1000);
  const Config pick = modelsPick(Collective::AllReduce, refuted), pick16 = modelsPick(Collective::AllReduce, confirmed);
  const std::string algo(algoNcclName(pick.algo)), proto(protoNcclName(pick.proto));
  body += row("allreduce", refuted, "default", "default", 1430) + row("allreduce", refuted, algo, proto, 1000);
  body += row("allreduce", confirmed, "default", "default", 1150) +
          row("allreduce", confirmed, std::string(algoNcclName(pick16.algo)), std::string(protoNcclName(pick16.proto)), 1000);
  for (int i = 0; i < 16; ++i)  // another collective's repeats: the dataset's spread between repeats is small
    for (int r = 0; r < 10; ++r) body += row("allgather", uint64_t{1024} << i, "default", "default", 100 * (1 + 0.002 * (r - 4.5)));
  auto data = settle(body);
  ASSERT_TRUE(data.ok()) << data.error();
  EXPECT_LT(data->repeatSigma, 0.05) << "the dataset's repeats agree";
  const ReplayPoint* p = at(*data, Collective::AllReduce, refuted);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->forced_us.size(), 1u);
  EXPECT_GT(p->default_sigma, 0.15) << "the neighbours' spread is what a test on the local spread sees";
  EXPECT_NE(p->defaultSettledBy, DefaultSettledBy::Confirmed) << defaultSettledByName(p->defaultSettledBy);
  EXPECT_FALSE(p->isDefaultsTwin({pick.algo, pick.proto})) << "the forced pick is an arm a tuner can test";
  const ReplayPoint* q = at(*data, Collective::AllReduce, confirmed);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->defaultSettledBy, DefaultSettledBy::Confirmed) << defaultSettledByName(q->defaultSettledBy);
  EXPECT_TRUE(q->isDefaultsTwin({pick16.algo, pick16.proto}));
}

// One default run and one forced run of the model's pick 4.5 standard deviations of a single-run gap
// apart (1.32x at a dataset spread of 4.4%), beside neighbours too noisy for a test on the local
// spread: two runs of one configuration cross that gap about once in 150,000 pairs, so the forced run
// did not run what the default ran; it is an arm of its own, not more runs of NCCL's default.
TEST(Settlement, AForcedRunOfThePickMoreThanFourSdsOfTheDatasetsRepeatsAwayIsAnArmOfItsOwn) {
  const uint64_t size = 4 << 20;
  std::string body;
  for (uint64_t b : {uint64_t{2} << 20, uint64_t{8} << 20})
    for (double f : {0.82, 1.0, 1.22}) body += row("allreduce", b, "default", "default", 1000 * f);
  body += row("allreduce", uint64_t{1} << 20, "default", "default", 1000);
  for (int i = 0; i < 16; ++i)  // another collective's repeats set the dataset's spread
    for (int r = 0; r < 10; ++r) body += row("allgather", uint64_t{1024} << i, "default", "default", 100 * std::exp(0.0095 * (r - 4.5)));
  auto before = settle(body);
  ASSERT_TRUE(before.ok()) << before.error();
  const double sigma = before->repeatSigma;
  EXPECT_NEAR(sigma, 0.044, 0.006) << "the spread between repeats of the outside dataset";
  const Config pick = modelsPick(Collective::AllReduce, size);
  const double gap = std::exp(4.5 * std::sqrt(2.0) * sigma);
  body += row("allreduce", size, "default", "default", 1000 * gap) +
          row("allreduce", size, std::string(algoNcclName(pick.algo)), std::string(protoNcclName(pick.proto)), 1000);
  auto data = settle(body);
  ASSERT_TRUE(data.ok()) << data.error();
  EXPECT_NEAR(data->repeatSigma, sigma, 1e-9);
  const ReplayPoint* p = at(*data, Collective::AllReduce, size);
  ASSERT_NE(p, nullptr);
  EXPECT_GT(p->default_sigma, 0.1) << "a test on the local spread cannot tell them apart";
  EXPECT_NE(p->defaultSettledBy, DefaultSettledBy::Confirmed) << defaultSettledByName(p->defaultSettledBy) << " at "
                                                               << gap << "x";
  EXPECT_FALSE(p->isDefaultsTwin({pick.algo, pick.proto})) << "the forced pick is an arm a tuner can test";
  EXPECT_DOUBLE_EQ(refutingGapSds(1), 4.0);
  EXPECT_GT(refutingGapSds(1000), 4.3);
}

// The system text and the default rows' notes say what NCCL ran with: NCCL_NVLS_ENABLE=0 in the system
// takes NVLS out of NCCL's choice, NCCL_ALGO=RING in the default rows' notes makes it Ring's.
TEST(Settlement, NcclSettingsTheDataStatesRuleOutWhatTheyDisable) {
  const std::string h100 = "8x H100 80GB HBM3 SXM, one HGX node (NVSwitch, NV18)";
  const auto rowOf = [](const std::string& system, uint64_t bytes, const std::string& note) {
    return "\"" + system + "\",allreduce,8,1," + std::to_string(bytes) + ",default,default,,,100.0,0,\"" + note + "\"\n";
  };
  auto topo = topologyForSystem(h100, 8, 1);
  ASSERT_TRUE(topo.ok()) << topo.error();
  auto ref = model::NcclReference::create(*topo);
  ASSERT_TRUE(ref.ok());
  std::optional<uint64_t> nvlsSize;
  for (uint64_t b = 1 << 16; b <= (uint64_t{1} << 30) && !nvlsSize; b <<= 1)
    if (ref->defaultConfig(Collective::AllReduce, b).algo == Algo::Nvls) nvlsSize = b;
  ASSERT_TRUE(nvlsSize) << "the model picks NVLS somewhere on this machine";

  const std::string off = h100 + " [NVLS disabled: NCCL_NVLS_ENABLE=0]";
  auto data = settle(rowOf(h100, *nvlsSize, "plain") + rowOf(off, *nvlsSize, "plain") +
                     rowOf(h100 + " ring", *nvlsSize, "config ring: NCCL_ALGO=RING, NVLS_ENABLE=0"));
  ASSERT_TRUE(data.ok()) << data.error();
  std::map<std::string, Algo> picked;
  for (const ReplayPoint& p : data->points) picked[p.group] = p.ncclDefault.algo;
  ASSERT_EQ(picked.size(), 3u);
  EXPECT_EQ(picked[h100], Algo::Nvls) << "nothing stated: the model's pick";
  EXPECT_NE(picked[off], Algo::Nvls);
  EXPECT_NE(picked[off], Algo::NvlsTree);
  EXPECT_EQ(picked[h100 + " ring"], Algo::Ring);

  const StatedNcclSettings list = statedNcclSettings("NCCL_ALGO=RING,TREE NCCL_PROTO=LL128");
  EXPECT_FALSE(list.algo) << "a list names no one algorithm";
  EXPECT_EQ(list.proto, Proto::LL128);
  EXPECT_FALSE(statedNcclSettings("NCCL_ALGO/PROTO forced (auto_ll)").algo);
  EXPECT_FALSE(statedNcclSettings("MY_NVLS_ENABLE=0").nvlsOff);
}

namespace {
std::string channelRow(uint64_t bytes, const std::string& algo, const std::string& proto, const std::string& nchannels,
                       double us, const std::string& note) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", us);
  return std::string(kSystem) + ",allreduce,4,1," + std::to_string(bytes) + "," + algo + "," + proto + "," + nchannels +
         ",," + buf + ",0,\"" + note + "\"\n";
}
}  // namespace

// Rows forced at two channel counts of one (algo, proto) are two arms: two configurations, each with
// its own time, never two repeats of one whose gap reads as noise.
TEST(Settlement, TwoForcedChannelCountsOfOnePairAreTwoArms) {
  const uint64_t bytes = 1 << 20;
  const std::string forced = "forced by env NCCL_ALGO=RING NCCL_PROTO=LL NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=";
  const std::string body = channelRow(bytes, "default", "default", "", 100, "RCCL default; median of 3 runs, 3-run spread 1.0%") +
                           channelRow(bytes, "RING", "LL", "2", 300, forced + "2; median of 3 runs, 3-run spread 0.0%") +
                           channelRow(bytes, "RING", "LL", "16", 60, forced + "16; median of 3 runs, 3-run spread 2.0%");
  auto data = settle(body);
  ASSERT_TRUE(data.ok()) << data.error();
  const ReplayPoint* p = at(*data, Collective::AllReduce, bytes);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->forced_us.size(), 2u);
  EXPECT_DOUBLE_EQ(p->forced_us.at(Config{Algo::Ring, Proto::LL, 2, 0}), 300);
  EXPECT_DOUBLE_EQ(p->forced_us.at(Config{Algo::Ring, Proto::LL, 16, 0}), 60);
  EXPECT_EQ(p->forced_samples_us.at(Config{Algo::Ring, Proto::LL, 16, 0}).size(), 1u) << "no repeats pooled across counts";
  EXPECT_TRUE(p->statesChannels());
  EXPECT_DOUBLE_EQ(p->best_us(), 60);
  // A decision is judged at its own count; one at NCCL's own count has no row here.
  EXPECT_EQ(p->judgedAs(Config{Algo::Ring, Proto::LL, 16, 0}), (Config{Algo::Ring, Proto::LL, 16, 0}));
  EXPECT_FALSE(p->forced_us.count(p->judgedAs(Config{Algo::Ring, Proto::LL, 0, 0})));

  // groupRepeats keeps them apart too, with the runs each row states behind it.
  const std::string csv = (std::filesystem::temp_directory_path() /
                           ("dynamiccl-settlement-ch-" + std::to_string(::getpid()) + ".csv")).string();
  std::ofstream(csv) << kInterchangeHeader << "\n" << body;
  auto rows = loadMeasurements(csv);
  std::filesystem::remove(csv);
  ASSERT_TRUE(rows.ok()) << rows.error();
  const std::vector<MeasuredPoint> points = groupRepeats(rows->rows);
  ASSERT_EQ(points.size(), 1u);
  ASSERT_EQ(points[0].arms.size(), 3u);
  EXPECT_EQ(points[0].arms[1].forcedChannels, 2);
  EXPECT_EQ(points[0].arms[2].forcedChannels, 16);
  EXPECT_EQ(points[0].arms[2].label(), "NCCL_ALGO=RING NCCL_PROTO=LL NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=16");
  EXPECT_EQ(points[0].arms[2].statedDof, 2);
  EXPECT_NEAR(std::sqrt(points[0].arms[2].statedSumSquares / 2), std::log1p(0.02) / 1.693, 1e-9);
}

// A channel count NCCL reported choosing (its TUNING log) is NCCL's own count, not a forced arm: those
// rows stay repeats of the arm that states none.
TEST(Settlement, AReportedChannelCountIsNcclsOwnNotAnArm) {
  const uint64_t bytes = 1 << 20;
  auto data = settle(channelRow(bytes, "default", "default", "24", 100, "TUNING log: Algo RING proto SIMPLE channels 24") +
                     channelRow(bytes, "RING", "SIMPLE", "24", 101, "TUNING log: Algo RING proto SIMPLE channels 24") +
                     channelRow(bytes, "RING", "SIMPLE", "", 102, "forced by env NCCL_ALGO=RING NCCL_PROTO=SIMPLE"));
  ASSERT_TRUE(data.ok()) << data.error();
  const ReplayPoint* p = at(*data, Collective::AllReduce, bytes);
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->forced_us.size(), 1u);
  EXPECT_EQ(p->forced_samples_us.begin()->first.nChannels, 0);
  EXPECT_EQ(p->forced_samples_us.begin()->second.size(), 2u);
  EXPECT_FALSE(p->statesChannels()) << "channels: not stated";
  // A decision's channel count cannot be judged on such rows: it is judged at NCCL's own.
  EXPECT_EQ(p->judgedAs(Config{Algo::Ring, Proto::Simple, 8, 0}).nChannels, 0);
}

TEST(Settlement, ForcedChannelSettingsAndStatedRunsAreRead) {
  EXPECT_EQ(statedNcclSettings("NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=8").channels, 8);
  EXPECT_EQ(statedNcclSettings("NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4").channels, 4);
  EXPECT_EQ(statedNcclSettings("NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=16").channels, 0) << "bounds force no count";
  EXPECT_EQ(statedNcclSettings("NCCL_MAX_NCHANNELS=16").channels, 0);
  EXPECT_EQ(statedNcclSettings("env NCCL_NCHANNELS=12;").channels, 12);
  EXPECT_EQ(statedNcclSettings("MY_NCCL_NCHANNELS=12").channels, 0);
  EXPECT_EQ(statedRunsOf("median of 3 runs, 3-run spread 3.2%"), (std::pair<int, double>{3, 0.032}));
  EXPECT_EQ(statedRunsOf("median of 3 runs").first, 0) << "no spread: nothing to estimate noise from";
  EXPECT_EQ(statedRunsOf("mean over 20 iterations").first, 0);
  EXPECT_DOUBLE_EQ(logSdOfSpread(1, 0.1), 0);
  EXPECT_NEAR(logSdOfSpread(3, 0.0338), std::log1p(0.0338) / 1.693, 1e-12);
}

// rccl-tests' `-A 1` report names what the default rows ran and an INFO count how many channels: forcing
// that pair at that count is the default again, a pair asked for no count runs at it, and a count the
// rows never forced runs as the nearest they did.
TEST(Settlement, TheDefaultRowsReportedChoiceAndChannelCountSettleIt) {
  const uint64_t bytes = 64 << 10;
  const std::string def = "RCCL default (nothing forced); -A 1 reported TREE/LL/8 (channel column = planned ceiling); "
                          "RCCL INFO channels at this size, same build (x): 4";
  const auto forced = [](const std::string& a, const std::string& p, int n) {
    return "forced by env NCCL_ALGO=" + a + " NCCL_PROTO=" + p + " NCCL_MIN_NCHANNELS=NCCL_MAX_NCHANNELS=" + std::to_string(n);
  };
  auto data = settle(channelRow(bytes, "default", "default", "", 35, def) +
                     channelRow(bytes, "TREE", "LL", "1", 70, forced("TREE", "LL", 1)) +
                     channelRow(bytes, "TREE", "LL", "4", 35.2, forced("TREE", "LL", 4)) +
                     channelRow(bytes, "TREE", "LL", "16", 24, forced("TREE", "LL", 16)) +
                     channelRow(bytes, "RING", "LL", "4", 26, forced("RING", "LL", 4)));
  ASSERT_TRUE(data.ok()) << data.error();
  const ReplayPoint* p = at(*data, Collective::AllReduce, bytes);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->defaultSettledBy, DefaultSettledBy::Stated);
  EXPECT_EQ(p->ncclDefault.algo, Algo::Tree);
  EXPECT_EQ(p->ncclDefault.proto, Proto::LL);
  EXPECT_EQ(p->defaultChannels, 4) << "the INFO count, not the report's planned ceiling of 8";
  EXPECT_TRUE(p->isDefaultsTwin(Config{Algo::Tree, Proto::LL, 4, 0}));
  EXPECT_FALSE(p->isDefaultsTwin(Config{Algo::Tree, Proto::LL, 16, 0}));
  EXPECT_EQ(p->judgedAs(Config{Algo::Ring, Proto::LL, 0, 0}), (Config{Algo::Ring, Proto::LL, 4, 0}));
  EXPECT_EQ(p->judgedAs(Config{Algo::Tree, Proto::LL, 12, 0}), (Config{Algo::Tree, Proto::LL, 16, 0}));
  EXPECT_TRUE(p->isDefaultConfig(Config{Algo::Tree, Proto::LL, 4, 0}));
  EXPECT_FALSE(p->isDefaultConfig(Config{Algo::Tree, Proto::LL, 16, 0}));

  EXPECT_EQ(ncclChannelsFromNote("TUNING log: Algo RING proto SIMPLE channels 24"), 24);
  EXPECT_EQ(ncclChannelsFromNote("-A 1 reported TREE/LL/16"), 0) << "a planned ceiling is not what ran";
  EXPECT_EQ(ncclChannelsFromNote("no count here"), 0);
  EXPECT_EQ(ncclChoiceFromNote("-A 1 reported RING/SIMPLE/56"), (std::make_optional(std::make_pair(Algo::Ring, Proto::Simple))));
  EXPECT_FALSE(ncclChoiceFromNote("reported nothing/here").has_value());
  EXPECT_TRUE(measuredOnRccl("8x MI355X; RCCL 2.28.3"));
  EXPECT_FALSE(measuredOnRccl("8x H100; NCCL 2.26.2 (NCCLRCCLx)"));
}

// One row each, no spread given: NCCL's default 100.5 us; the model's pick forced in full, 70.1 us;
// another protocol of its algorithm forced, 101.2 us; the algorithm forced with its protocol left to
// NCCL, 100.5 us. The half-forced row ran what the default ran, not the model's pick: it joins the
// configuration its time matches, so the pick is refuted and stays a 1.43x arm a tuner can test.
TEST(Settlement, HalfForcedRowsFollowTheirRunsWhereTheModelsResolutionContradictsThem) {
  const uint64_t bytes = 1 << 20;
  const Config pick = modelsPick(Collective::AllReduce, bytes);
  const Proto other = pick.proto == Proto::Simple ? Proto::LL : Proto::Simple;
  const std::string algo(algoNcclName(pick.algo));
  const std::string body = row("allreduce", bytes, "default", "default", 100.5) +
                           row("allreduce", bytes, algo, std::string(protoNcclName(pick.proto)), 70.1) +
                           row("allreduce", bytes, algo, std::string(protoNcclName(other)), 101.2) +
                           row("allreduce", bytes, algo, "default", 100.5);
  auto data = settle(body);
  ASSERT_TRUE(data.ok()) << data.error();
  const ReplayPoint* p = at(*data, Collective::AllReduce, bytes);
  ASSERT_NE(p, nullptr);
  const Config picked{pick.algo, pick.proto, 0, 0}, matched{pick.algo, other, 0, 0};
  ASSERT_EQ(p->forced_samples_us.count(picked), 1u);
  EXPECT_EQ(p->forced_samples_us.at(picked).size(), 1u) << "the half-forced row was taken for the model's pick";
  ASSERT_EQ(p->forced_samples_us.count(matched), 1u);
  EXPECT_EQ(p->forced_samples_us.at(matched).size(), 2u) << "the half-forced row did not join what its time matches";
  EXPECT_EQ(p->defaultSettledBy, DefaultSettledBy::Matched) << defaultSettledByName(p->defaultSettledBy);
  EXPECT_EQ(p->ncclDefault, matched);
  EXPECT_FALSE(p->isDefaultsTwin(picked)) << "the 1.43x arm is one a tuner can test";
  EXPECT_FALSE(data->notes.empty());

  // Where the model's resolution agrees with the half-forced row's time, it stands (and nothing is said).
  const std::string agreeing = row("allreduce", bytes, "default", "default", 100.5) +
                               row("allreduce", bytes, algo, std::string(protoNcclName(pick.proto)), 100.9) +
                               row("allreduce", bytes, algo, "default", 100.5);
  auto same = settle(agreeing);
  ASSERT_TRUE(same.ok()) << same.error();
  const ReplayPoint* q = at(*same, Collective::AllReduce, bytes);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->forced_samples_us.at(picked).size(), 2u);
  EXPECT_EQ(q->defaultSettledBy, DefaultSettledBy::Confirmed) << defaultSettledByName(q->defaultSettledBy);
}
